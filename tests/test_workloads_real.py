"""Real workloads on real servers (integration): WordPress on a MariaDB child process
with opcache on and off, the database stopped under it, Ctrl-C while it runs, the user's
own application from a temporary directory, and page mode counting every asset."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from conftest import require_stack
from stackbench import engine, workloads
from stackbench.planning import plan as plan_mod
from stackbench.errors import VerifyFailed
from stackbench.upkeep.pinning import Pinning
from stackbench.planning.plan import Cell, StackVariant
from stackbench.runner import load_spec
from stackbench.stacks import registry
from stackbench.stacks.lifecycle import StackInstance
from stackbench.errors import MissingBinary
from stackbench.stacks import installed
from stackbench.workloads import mixed_page, verify
from stackbench.workloads.base import Url
from test_interrupt_real import lab_processes, stored_cells

pytestmark = pytest.mark.servers


def require_wordpress() -> None:
    try:
        installed.require_workload(workloads.get("wordpress-home"))
    except MissingBinary as e:
        if os.environ.get("CI"):
            pytest.fail(e.message)
        pytest.skip(e.message)


def mariadbd_under(path: Path) -> list[str]:
    return [p for p in lab_processes(str(path)) if "mariadbd" in p]


def instance(stack_id: str, workload, workdir: Path, **knobs) -> StackInstance:
    return StackInstance(registry.get(stack_id), knobs, cpus=[0], workdir=workdir, workloads=[workload])


def load(inst: StackInstance, wid: str, **kw) -> engine.EngineResult:
    """The load the runner would send for this workload (runner.load_spec: one URL, a
    mix or page mode), with `kw` overriding the spec."""
    # load_spec takes only the timing from the plan; the workload comes from the instance.
    plan = plan_mod.parse({"stacks": [{"id": inst.stack.id}], "workloads": ["static-12b"], "duration": "1s",
                           "warmup": "0s"}, "test")
    cell = Cell(0, 0, StackVariant(inst.stack.id, inst.label, {}), wid, kw.pop("connections", 4), True)
    spec = load_spec(cell, plan, inst, Pinning([0], [1]))
    return engine.run(replace(spec, **kw), [1])


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-prefork-modphp"])
@pytest.mark.parametrize("opcache", [True, False])
def test_wordpress_serves_with_the_opcache_state_read_back(stack_id, opcache, workdir):
    require_stack(stack_id)
    require_wordpress()
    wl = workloads.get("wordpress-mix")
    with instance(stack_id, wl, workdir, opcache=opcache) as inst:
        inst.verify([wl.id])
        assert inst.php_state["opcache"] is opcache  # what PHP reports, not what was asked
        assert inst.services_cgroup is not None and inst.services_cgroup.pids()  # MariaDB in its own cgroup
        result = load(inst, wl.id, duration_s=None, requests=40)
    assert result.requests.completed == 40 and result.requests.failed == 0 and result.requests.non_2xx == 0
    per_url = {u.path: u.requests.completed for u in result.per_url}
    assert set(per_url) == {u.path for u in wl.urls} and sum(per_url.values()) == 40
    assert mariadbd_under(workdir) == [], "MariaDB outlived its stack"


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-prefork-modphp"])
def test_the_slow_request_holds_its_worker_a_second_and_returns_the_page(stack_id, workdir):
    require_stack(stack_id)
    require_wordpress()
    wl = workloads.get("wordpress-mix-slow")
    (slow,) = [u for u in wl.urls if u.slow_ms]
    with instance(stack_id, wl, workdir) as inst:
        inst.verify([wl.id])  # every URL as the runner verifies it: the slow one no sooner than 1 s
        started = time.monotonic()
        status, headers, body = verify.fetch(inst.host, inst.port, slow.path, timeout=15)
        held = time.monotonic() - started
        started = time.monotonic()
        plain = verify.fetch(inst.host, inst.port, slow.path.split("&")[0])
        unheld = time.monotonic() - started
        # the same search without the plugin's parameter is not held: a URL that claims to be
        # slow and is not fails verification, before anything is measured
        liar = replace(wl, urls=(Url(slow.path.split("&")[0], slow.check, slow_ms=slow.slow_ms),))
        with pytest.raises(VerifyFailed, match=r"answered in 0\.\d+ s, but this request is to hold its PHP worker 1 s"):
            verify.verify(inst.host, inst.port, liar, inst.label)
    assert slow.check.problem(status, headers, body) is None and 1.0 <= held < 3.0, held
    assert plain[0] == 200 and unheld < 1.0, unheld
    assert mariadbd_under(workdir) == []


def test_verification_says_so_when_the_database_is_gone(workdir):
    require_stack("nginx-fpm")
    require_wordpress()
    wl = workloads.get("wordpress-home")
    with instance("nginx-fpm", wl, workdir) as inst:
        db = next(p for p in inst.processes if p.name == "mariadbd")
        os.kill(db.pid, signal.SIGKILL)
        db.popen.wait(timeout=10)
        with pytest.raises(VerifyFailed) as e:
            inst.verify([wl.id])
    text = f"{e.value.message} {e.value.detail}"
    assert "Error establishing a database connection" in text, text


def test_ctrl_c_during_a_wordpress_run_leaves_no_mariadbd(workdir):
    require_stack("nginx-fpm")
    require_wordpress()
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text('name = "wp-interrupt"\nduration = "1s"\nwarmup = "0s"\nconcurrency = [1, 2, 4, 8]\n'
                    'keepalive = [true]\nworkloads = ["wordpress-home"]\nsyscalls = false\n'
                    '[[stacks]]\nid = "nginx-fpm"\n')
    proc = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db),
                             "--workdir", str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 90
    while stored_cells(db) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    while not mariadbd_under(workdir) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.02)  # the next cell's database is starting or running
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT COUNT(*) FROM cells WHERE status = 'ok'").fetchone()[0] >= 1
    assert mariadbd_under(workdir) == [] and lab_processes(str(workdir)) == []


APP_INDEX = b"""<?php
// A tiny front-controller application: every path that is not a file lands here.
$path = parse_url($_SERVER['REQUEST_URI'], PHP_URL_PATH);
if ($path === '/missing') { http_response_code(404); echo "no such page"; exit; }
echo "shop page " . htmlspecialchars($path) . " for " . htmlspecialchars(getenv('SHOP_NAME'));
"""


def test_the_users_app_is_served_read_only_through_a_front_controller(workdir):
    stacks = ("nginx-fpm", "apache-prefork-modphp", "jetty-fpm")  # Jetty's front controller: TryFilesFilter
    for stack_id in stacks:
        require_stack(stack_id)
    app = workdir / "shop"
    (app / "static").mkdir(parents=True)
    (app / "index.php").write_bytes(APP_INDEX)
    (app / "static" / "logo.txt").write_bytes(b"logo")
    for path in (app, app / "static"):
        path.chmod(0o755)
    before = sorted((str(p), p.stat().st_mtime_ns) for p in app.rglob("*"))
    plan = plan_mod.parse({
        "stacks": [{"id": "nginx-fpm"}], "workloads": ["app"],
        "app": {"docroot": str(app), "front_controller": "/index.php", "env": {"SHOP_NAME": "Acme & Sons (1)"},
                "urls": [{"path": "/products/42", "weight": 3,
                          "contains": "shop page /products/42 for Acme &amp; Sons (1)"},  # as given: quoted
                         {"path": "/static/logo.txt", "contains": "logo"},
                         {"path": "/missing", "status": 404}]}}, "test")
    wl = plan.workload("app")
    for stack_id in stacks:
        with instance(stack_id, wl, workdir) as inst:
            inst.verify(["app"])
            assert inst.php_state["opcache"] is True  # read by the prepend file: nothing written into the app
            result = load(inst, "app", duration_s=None, requests=50)
        assert result.requests.completed == 50 and result.requests.failed == 0
    assert sorted((str(p), p.stat().st_mtime_ns) for p in app.rglob("*")) == before


def test_a_wrong_answer_from_the_app_fails_verification_with_the_reason(workdir):
    require_stack("nginx-fpm")
    app = workdir / "app"
    app.mkdir()
    app.chmod(0o755)
    (app / "index.php").write_bytes(b"<?php echo 'maintenance mode';")
    plan = plan_mod.parse({"stacks": [{"id": "nginx-fpm"}], "workloads": ["app"],
                           "app": {"docroot": str(app), "urls": [{"path": "/", "contains": "Welcome"}]}}, "test")
    with instance("nginx-fpm", plan.workload("app"), workdir) as inst:
        with pytest.raises(VerifyFailed, match="does not contain 'Welcome'"):
            inst.verify(["app"])


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-prefork-modphp"])
def test_page_mode_fetches_every_asset_of_every_page(stack_id, workdir):
    require_stack(stack_id)
    wl = workloads.get("mixed-page")
    with instance(stack_id, wl, workdir, **({"start_servers": 30, "min_spare_servers": 30,
                                             "max_spare_servers": 40} if "apache" in stack_id else {})) as inst:
        inst.verify([wl.id])
        result = load(inst, wl.id, duration_s=None, requests=25, connections=3)
    assert result.pages.completed == 25 and result.pages.failed == 0
    per_url = {u.path: u.requests.completed for u in result.per_url}
    assert per_url == {u.path: 25 for u in wl.urls}  # the page and each of its 11 assets, 25 times
    assert len(wl.urls) == 1 + len(mixed_page.STYLESHEETS) + len(mixed_page.SCRIPTS) + len(mixed_page.IMAGES)
    assert result.requests.completed == 25 * len(wl.urls)
    expected = sum(u.check.expected_length() for u in wl.urls) * 25
    assert result.raw["bytes"]["body_received"] == expected
