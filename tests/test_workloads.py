"""The workload contract: only the plan's workloads go into a docroot, every URL is
checked before anything is measured, and a workload's services (a database, later) run
in a cgroup of their own, start before the stack and stop with it."""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from stackbench import workloads
from stackbench.errors import VerifyFailed
from stackbench.stacks.base import Server
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS
from stackbench.supervise import tcp_probe
from stackbench.workloads import Check, Url, Workload
from stackbench.workloads.verify import fetch

from conftest import require_stack


def test_check_names_what_is_wrong():
    check = Check(body=b"Hello")
    assert check.problem(200, {"content-type": "text/html; charset=UTF-8"}, b"Hello") is None
    assert check.problem(500, {}, b"oops")[0] == "status 500, expected 200"
    assert check.problem(200, {"content-type": "text/plain"}, b"Hello")[0].startswith("content type 'text/plain'")
    assert "body differs" in check.problem(200, {"content-type": "text/html"}, b"Hell")[0]
    assert Check(length=3).problem(200, {"content-type": "text/html"}, b"abcd")[0] == "body is 4 bytes, expected 3"


def test_the_registry_is_explicit_and_every_workload_is_checkable():
    assert list(workloads.WORKLOADS) == ["static-12b", "static-100k", "static-jpeg-150k", "php-hello", "php-100k",
                                         "php-sleep", "mixed-page", "wordpress-home", "wordpress-mix"]
    for w in workloads.WORKLOADS.values():
        assert w.urls and all(u.path.startswith("/") and u.weight >= 1 for u in w.urls)
        # Generated documents are checked byte for byte; WordPress by title and no PHP error.
        assert all((u.check.expected_length() or 0) > 0 or (u.check.contains and u.check.forbids) for u in w.urls)
    with pytest.raises(Exception, match="unknown workload 'php-helo'"):
        workloads.get("php-helo")


@dataclass
class HttpService(Server):
    """A stand-in service (Python's http.server): the contract, not a database."""

    name: str = "pyhttp"

    def files(self):
        return {}

    def check_argv(self):
        return [sys.executable, "-c", "pass"]

    def start_argv(self):
        return [sys.executable, "-m", "http.server", str(self.ctx.aux_port("service")), "--bind", self.ctx.host,
                "--directory", str(self.ctx.rundir)]

    def probe(self):
        return tcp_probe(self.ctx.host, self.ctx.aux_port("service"))

    def log_paths(self):
        return []


@pytest.mark.servers
def test_a_workloads_service_runs_in_its_own_cgroup_before_the_stack(workdir):
    require_stack("nginx-fpm")
    svc = replace(workloads.get("static-12b"), id="with-service", services=lambda ctx: [HttpService(ctx, {})])
    inst = StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir, workloads=[svc])
    with inst:
        assert [p.name for p in inst.processes][0] == "pyhttp"  # started first
        status, _, _ = fetch(inst.host, inst.ctx.aux_port("service"), "/")
        assert status == 200
        docroot = sorted(p.name for p in inst.ctx.docroot.iterdir())
        assert docroot == ["hello.html", "index.html"]  # only this plan's workload
        if os.geteuid() == 0 and inst.cgroup:
            service_pid = inst.processes[0].pid
            assert service_pid in inst.services_cgroup.pids() and service_pid not in inst.cgroup.pids()
        pids = inst.all_pids()
    assert not inst.all_pids()
    assert all(not Path(f"/proc/{p}").exists() for p in pids)


@pytest.mark.servers
def test_every_url_of_a_workload_is_verified(workdir):
    require_stack("nginx-fpm")
    two = Workload("two-urls", "a mix", urls=(Url("/hello.html", Check(body=b"Hello World\n")),
                                              Url("/missing.html", Check(body=b"x"), weight=3)),
                   files={"hello.html": b"Hello World\n"})
    with StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir, workloads=[two]) as inst:
        from stackbench.workloads.verify import verify

        with pytest.raises(VerifyFailed, match="GET /missing.html.*status 404"):
            verify(inst.host, inst.port, two, "nginx-fpm")
