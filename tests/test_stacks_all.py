"""Every stack of the registry as real servers on 127.0.0.1 (integration): it starts,
serves every workload correctly under a short concurrent load with zero failures, and
leaves no process and no cgroup behind -- also when it fails to start or its config is
rejected. Parametrized over the registry, so a new family is covered without editing this.

The short load is the lab's own engine (stackbench-load), with exact request counts.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from stackbench import engine, workloads
from stackbench.errors import ConfigCheckFailed, MissingBinary, ServerExited
from stackbench.stacks import installed, lifecycle
from stackbench.servers.base import Context
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS
from stackbench.stacks.unpackaged import NotPackaged

from conftest import require_stack

pytestmark = pytest.mark.servers

# Process names of every server and helper a stack may start (comm, i.e. at most 15 chars).
SERVER_COMMS = {"nginx", "apache2", "php-fpm8.2", "php-cgi8.2", "varnishd", "cache-main", "lighttpd",
                "h2o", "caddy", "setpriv", "java"}


def require_runnable(stack_id: str) -> None:
    """Stacks Debian does not package cannot be installed by CI either: skip them with
    their reason (their listing is tested below). The rest must be installed in CI."""
    a = installed.availability(STACKS[stack_id])
    if a.state == "unavailable":
        pytest.skip(f"{stack_id}: {a.detail}")
    require_stack(stack_id)


def server_processes() -> set[int]:
    """Every live server process in the process table (not only ours)."""
    pids = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                comm = Path(f"/proc/{entry}/comm").read_text().strip()
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if comm in SERVER_COMMS and state != "Z":
                pids.add(int(entry))
    return pids


def left_behind(before: set[int], inst: StackInstance) -> set[int]:
    """Server processes that appeared since `before` and belong to this instance: in its
    session (each server leads its own; workers reparented to init keep it) or in its
    cgroup. Other people's servers on the same machine do not count."""
    sessions = {proc.pid for proc in inst.processes}
    cgroup_name = inst.cgroup.name if inst.cgroup else None
    ours = set()
    for pid in server_processes() - before:
        try:
            sid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[4])
            cgroups = Path(f"/proc/{pid}/cgroup").read_text()
        except OSError:
            continue
        if sid in sessions or (cgroup_name and f"/{cgroup_name}" in cgroups):
            ours.add(pid)
    return ours


def load(port: int, workload: workloads.Workload, requests: int = 200, connections: int = 8,
         timeout_s: float = 10.0) -> list[str]:
    """`requests` GETs over `connections` kept-alive connections with the lab's own
    engine; returns what went wrong (failed, non-2xx, or a byte count that is off)."""
    doc = engine.run(engine.LoadSpec(url=f"http://127.0.0.1:{port}{workload.path}", connections=connections,
                                     duration_s=None, requests=requests, timeout_s=timeout_s)).raw
    req = doc["requests"]
    problems = [f"{k}: {v}" for k, v in doc["errors"].items() if v]
    if req["non_2xx"]:
        problems.append(f"non-2xx: {doc['status_codes']}")
    if req["completed"] != requests:
        problems.append(f"completed {req['completed']} of {requests}")
    elif doc["bytes"]["body_received"] != requests * workload.check.expected_length():
        problems.append(f"body bytes {doc['bytes']['body_received']}, expected {requests * workload.check.expected_length()}")
    return problems


@pytest.mark.parametrize("stack_id", list(STACKS))
def test_stack_serves_every_workload_under_load_and_stops_clean(stack_id, workdir):
    require_runnable(stack_id)
    before = server_processes()
    inst = StackInstance(STACKS[stack_id], {}, cpus=[0], workdir=workdir)
    with inst:
        inst.verify([w.id for w in workloads.DOCUMENTS])
        for workload in workloads.DOCUMENTS:
            # Warm-up, not counted (mod_fcgid spawns php-cgi lazily, in 1 s steps; FIELD-NOTES).
            load(inst.port, workload, requests=16, timeout_s=40)
            failures = load(inst.port, workload)
            assert not failures, f"{workload.id}: {len(failures)} failed, e.g. {failures[:3]}"
        inst.check_alive()
        pids = set(inst.all_pids())
        assert set(p for group in inst.pids().values() for p in group) <= pids
        assert pids & server_processes(), "no server process of the stack in the process table"
        if inst.cgroup:  # every process of the stack is in its cgroup
            # Two reads of a live process table: a server may fork a child (Varnish, an
            # Apache child) between them. The same set twice in a row is the answer.
            for _ in range(20):
                in_cgroup, pids = set(inst.cgroup.pids()), set(inst.all_pids())
                if in_cgroup == pids:
                    break
                time.sleep(0.05)
            assert in_cgroup == pids
            cgroup_dirs = list(inst.cgroup.dirs.values())
        if os.geteuid() == 0:  # whatever serves requests does not run as root
            assert any(os.stat(f"/proc/{p}").st_uid != 0 for p in pids)
        rundir = inst.ctx.rundir
    assert not inst.all_pids()
    assert not left_behind(before, inst), "server processes left behind"
    assert not rundir.exists()
    if os.geteuid() == 0:
        assert cgroup_dirs and not any(d.exists() for d in cgroup_dirs), "cgroup left behind"


@pytest.mark.parametrize("stack_id", list(STACKS))
def test_front_that_never_gets_ready_leaves_nothing_running(stack_id, workdir, monkeypatch):
    """The back end is up, the front started but never answers: up() fails and stops
    everything it started (Varnish included, whose manager forks its cache child)."""
    require_runnable(stack_id)
    stack = STACKS[stack_id]
    real_servers = stack.servers

    def servers_with_deaf_front(ctx, knobs):
        servers = real_servers(ctx, knobs)
        servers[-1].probe = lambda: (lambda: False)
        return servers

    monkeypatch.setattr(stack, "servers", servers_with_deaf_front)
    monkeypatch.setattr(lifecycle, "READY_DEADLINE_S", 0.8)
    before = server_processes()
    inst = StackInstance(stack, {}, cpus=[0], workdir=workdir)
    with pytest.raises(ServerExited, match="not ready"):
        inst.up()
    assert len(inst.processes) == len(inst.servers), "every server had been started"
    assert not inst.all_pids()
    assert not left_behind(before, inst), "server processes left behind"
    assert not list(workdir.iterdir()), "run directory left behind"


# A line each server's own checker rejects, appended to its main config.
BAD_CONFIG = {
    "nginx": "bogus_directive on;\n",
    "apache2": "BogusDirective on\n",
    "php-fpm": "bogus_key = 1\n",
    "varnishd": "sub vcl_recv { bogus_symbol; }\n",
    "lighttpd": "server.port = = 1\n",
    "h2o": "bogus-directive: 1\n",
    "caddy": "http://:1 {\n\tbogus_directive\n}\n",
    "jetty": "<Bogus/>\n",  # after the root element: no longer well-formed XML
}


def server_names() -> list[tuple[str, str]]:
    """(stack, server) pairs covering each server component once, in its first stack."""
    seen, pairs = set(), []
    for stack_id, stack in STACKS.items():
        if isinstance(stack, NotPackaged):  # no servers to list
            continue
        ctx = Context(stack_id, Path("/RUN"), Path("/RUN/docroot"), 8080, [0], None, {"php-fpm": 9000, "apache": 8081})
        for server in stack.servers(ctx, stack.resolve_knobs({})):
            if server.name not in seen:
                seen.add(server.name)
                pairs.append((stack_id, server.name))
    return pairs


@pytest.mark.parametrize("stack_id, server_name", server_names())
def test_bad_config_is_refused_with_the_checkers_message(stack_id, server_name, workdir, monkeypatch):
    require_runnable(stack_id)
    stack = STACKS[stack_id]
    real_servers = stack.servers

    def servers_with_bad_config(ctx, knobs):
        servers = real_servers(ctx, knobs)
        for server in servers:
            if server.name == server_name:
                good = server.files
                server.files = lambda good=good: {rel: text + BAD_CONFIG[server_name] for rel, text in good().items()}
        return servers

    monkeypatch.setattr(stack, "servers", servers_with_bad_config)
    inst = StackInstance(stack, {}, cpus=[0], workdir=workdir)
    with pytest.raises(ConfigCheckFailed) as e:
        inst.up()
    assert f"{server_name} rejected its configuration" in e.value.message
    assert "bogus" in e.value.detail.lower() or "parse" in e.value.detail.lower(), e.value.detail
    assert not inst.processes and not inst.all_pids() and not list(workdir.iterdir())


def test_unpackaged_stacks_are_listed_with_a_reason():
    for stack_id in ("openlitespeed", "hhvm"):
        a = installed.availability(STACKS[stack_id])
        assert a.state in ("unavailable", "available")
        if a.state == "unavailable":
            assert "Debian" in a.detail or "found" in a.detail
            assert installed.describe(STACKS[stack_id]).startswith("unavailable: ")
            with pytest.raises(MissingBinary, match=f"{stack_id}.*cannot run here"):
                installed.require(STACKS[stack_id])


def test_every_stack_is_described_for_the_listing():
    for stack in STACKS.values():
        text = installed.describe(stack)
        assert text.split()[0].rstrip(":") in ("available", "missing", "unavailable"), text
        if text.startswith("missing"):
            assert "apt-get install " in text and not text.endswith("install ")
