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
from stackbench.servers.base import Server
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS
from stackbench.upkeep.supervise import tcp_probe
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
                                         "php-sleep", "mixed-page", "wordpress-home", "wordpress-mix",
                                         "wordpress-mix-slow"]
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


# -- real workloads: checks, plans, content (no servers) ------------------------------

from stackbench.planning import plan as plan_mod  # noqa: E402
from stackbench.errors import PlanError  # noqa: E402
from stackbench.workloads.base import PHP_ERRORS  # noqa: E402
from stackbench.workloads.wordpress import content  # noqa: E402


def test_a_real_page_is_checked_by_what_it_must_and_must_not_contain():
    check = Check(contains=(b"My Site",), forbids=PHP_ERRORS)
    ok = {"content-type": "text/html; charset=UTF-8"}
    assert check.problem(200, ok, b"<title>My Site</title>") is None
    assert "does not contain 'My Site'" in check.problem(200, ok, b"<title>Other</title>")[0]
    bad = b"<title>My Site</title><b>Warning</b>: Undefined variable $x in /srv/x.php on line 3"
    problem, detail = check.problem(200, ok, bad)
    assert problem == "body contains '<b>Warning</b>:'" and "Undefined variable" in detail
    assert "Error establishing" in check.problem(200, ok, b"My Site Error establishing a database connection")[0]


def test_the_wordpress_content_is_the_same_for_the_same_seed():
    assert content.as_json() == content.as_json()
    assert content.as_json(seed=1) != content.as_json()
    site = content.generate()
    posts = [p for p in site["posts"] if p["type"] == "post"]
    assert len(posts) == content.POSTS and len({p["slug"] for p in site["posts"]}) == len(site["posts"])
    assert all(p["date"].startswith("2024") for p in posts)  # fixed dates, never "now"
    urls = content.urls()
    assert urls["home"] == "/" and urls["post"].strip("/") in {p["slug"] for p in posts}


def test_wordpress_workloads_need_php_a_front_controller_and_their_own_tree():
    home = workloads.get("wordpress-home")
    assert home.needs() == {"php", "front_controller"} and home.docroot is not None and home.services is not None
    assert [u.weight for u in workloads.get("wordpress-mix").urls] == [4, 3, 2, 1]
    assert any(r.package == "mariadb-server" for r in home.requirements)


def test_the_slow_mix_is_the_mix_with_one_request_in_fifty_held_a_second():
    mix, slow = workloads.get("wordpress-mix"), workloads.get("wordpress-mix-slow")
    weights = {u.path: u.weight for u in slow.urls}
    assert sum(weights.values()) == 50
    (held,) = [u for u in slow.urls if u.slow_ms]
    assert held.slow_ms == 1000 and held.weight == 1 and held.path.endswith("&stackbench_slow=1000")
    assert held.path.startswith(next(u.path for u in mix.urls if u.path.startswith("/?s=")))  # a search, slowed
    # the mix's shares kept: home 4 : post 3 : category 2 : search 1, the slow search among the searches
    share = {u.path: u.weight / 10 for u in mix.urls}
    slowed = {p: w / 50 for p, w in weights.items()}
    assert slowed == {**share, "/?s=cache": 0.08, held.path: 0.02}  # searches 10 % still, 1 in 5 of them slow
    assert held.check == slow.urls[0].check and slow.docroot is mix.docroot
    assert all(u.slow_ms == 0 for w in workloads.WORKLOADS.values() if w.id != slow.id for u in w.urls)


def test_the_slow_request_plugin_is_in_the_cached_tree_and_its_key(tmp_path, monkeypatch):
    from stackbench.workloads.wordpress import provision

    text = provision.SLOW_PLUGIN.read_text()
    assert "stackbench_slow" in text and "usleep" in text and "add_action('wp'" in text
    assert provision.SLOW_PLUGIN_PATH.startswith("wp-content/mu-plugins/")
    # a changed plugin is a new cache entry: its bytes are hashed into the key
    monkeypatch.setattr(provision, "wordpress_version", lambda: "6.1")
    monkeypatch.setattr(provision, "mariadb_version", lambda: "mariadbd 10.11")
    provision.key.cache_clear()
    try:
        before = provision.key()
        changed = tmp_path / "slow.php"
        changed.write_bytes(provision.SLOW_PLUGIN.read_bytes() + b"// changed\n")
        monkeypatch.setattr(provision, "SLOW_PLUGIN", changed)
        provision.key.cache_clear()
        assert provision.key() != before
    finally:
        provision.key.cache_clear()


def test_an_app_table_is_checked_before_anything_starts(workdir):
    base = {"stacks": [{"id": "nginx-fpm"}], "workloads": ["app"]}
    with pytest.raises(PlanError, match=r"needs an \[app\] table"):
        plan_mod.parse(base, "p.toml")
    with pytest.raises(PlanError, match="is not a directory"):
        plan_mod.parse({**base, "app": {"docroot": str(workdir / "nope")}}, "p.toml")
    with pytest.raises(PlanError, match="unknown key 'front'"):
        plan_mod.parse({**base, "app": {"docroot": str(workdir), "front": "/index.php"}}, "p.toml")
    with pytest.raises(PlanError, match="front_controller '/index.php' is not a file"):
        plan_mod.parse({**base, "app": {"docroot": str(workdir), "front_controller": "/index.php"}}, "p.toml")
    with pytest.raises(PlanError, match=r"urls\[0\].path must start with /"):
        plan_mod.parse({**base, "app": {"docroot": str(workdir), "urls": [{"path": "x"}]}}, "p.toml")
    with pytest.raises(PlanError, match="but \"app\" is not in workloads"):
        plan_mod.parse({"stacks": [{"id": "nginx-fpm"}], "app": {"docroot": str(workdir)}}, "p.toml")


def test_an_app_plan_gives_urls_weights_checks_and_env(workdir):
    (workdir / "index.php").write_text("<?php echo 'hi';")
    plan = plan_mod.parse({"stacks": [{"id": "nginx-fpm"}], "workloads": ["app"],
                           "app": {"docroot": str(workdir), "front_controller": "/index.php",
                                   "env": {"DB_HOST": "127.0.0.1", "DB_PORT": 3306},
                                   "urls": [{"path": "/", "weight": 3, "contains": "hi"},
                                            {"path": "/gone", "status": 404}]}}, "p.toml")
    app = plan.workload("app")
    assert app.docroot() == workdir.resolve() and app.front_controller == "/index.php"
    assert app.php_env == {"DB_HOST": "127.0.0.1", "DB_PORT": "3306"} and app.probe == "prepend"
    assert [(u.path, u.weight, u.check.status, u.check.contains) for u in app.urls] == \
        [("/", 3, 200, (b"hi",)), ("/gone", 1, 404, ())]
    assert plan.start_groups() == [["app"]]
    assert plan.checked()["app"]["docroot"] == str(workdir)  # the store keeps what was served


def test_a_stack_that_cannot_serve_a_workload_is_refused_with_the_reason(monkeypatch):
    from stackbench.stacks import registry

    monkeypatch.setattr(registry.get("nginx-fpm"), "offers", frozenset())  # a static-only front
    with pytest.raises(PlanError, match="cannot serve workload 'php-hello': it has no PHP"):
        plan_mod.parse({"stacks": [{"id": "nginx-fpm"}], "workloads": ["static-12b", "php-hello"]}, "p.toml")


def test_a_tree_of_its_own_never_shares_a_stack_start():
    data = {"stacks": [{"id": "nginx-fpm"}], "workloads": ["php-hello", "wordpress-home"]}
    assert plan_mod.parse(data, "p.toml").start_groups() == [["php-hello"], ["wordpress-home"]]
    with pytest.raises(PlanError, match="cannot share a stack start"):
        plan_mod.parse({**data, "restart": "stack"}, "p.toml")


def test_the_generated_media_are_real_jpegs_of_the_asked_size():
    from stackbench.workloads import media

    photo = media.jpeg(150_000)
    assert photo[:3] == b"\xff\xd8\xff" and photo[-2:] == b"\xff\xd9"  # SOI ... EOI
    assert abs(len(photo) - 150_000) <= 4_500 and media.jpeg(150_000) is photo
    page = workloads.get("mixed-page")
    assert page.page_mode and len(page.assets) == 11
    assert 400_000 < sum(u.check.expected_length() for u in page.urls) < 700_000


def test_per_url_figures_come_from_the_engine_document_and_none_is_an_empty_list():
    from stackbench.analysis import metrics
    from cells import stored_cell

    doc = {"per_url": [{"path": "/p.php", "weight": None,
                        "requests": {"completed": 10, "ok_2xx": 10, "non_2xx": 0, "failed": 1},
                        "latency_us": {"percentiles": {"50": 900, "99": 2000}}}]}
    assert metrics.per_url(stored_cell(engine=doc)) == [{"path": "/p.php", "weight": None, "completed": 10,
                                                         "failed": 1, "non_2xx": 0, "latency_p50_us": 900,
                                                         "latency_p99_us": 2000}]
    assert metrics.per_url(stored_cell(engine=None)) == [] and metrics.per_url(stored_cell(engine={"per_url": []})) == []
