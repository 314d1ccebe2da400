"""Faults during a real run (integration): a server killed in the middle of a cell —
PHP-FPM, Apache, Varnish, MariaDB — is a failed cell with the reason and what the engine
saw (errors by kind), and the plan goes on; a stack that does not come up is skipped
with the reason while the others run; a results store that becomes unwritable mid-run is
a clear error, the servers stopped and the cells stored before intact.

The runner is the real one with real servers and the real engine; the tests only wrap
the engine's entry point (to kill a server while the load runs) or a stack's start."""

from __future__ import annotations

import os
import resource
import signal
import sqlite3
import subprocess
import sys
import threading
import tomllib
from pathlib import Path

import pytest

from conftest import require_stack
from stackbench import engine, runner
from stackbench.planning import plan as plan_mod
from stackbench.upkeep.lock import RunLock
from stackbench.stacks.lifecycle import StackInstance
from stackbench.states import RunStatus
from stackbench.store import Store
from test_fault_matrix import ROOT, Lab, leftovers, snapshot

pytestmark = pytest.mark.servers

KILL_AFTER_S = 0.5


def plan_text(stack: str, workload: str, knobs: str = "") -> str:
    return f"""
name = "faults"
duration = "1.5s"
warmup = "0s"
syscalls = false
concurrency = [1, 2, 4]
keepalive = [true]
workloads = ["{workload}"]
[[stacks]]
id = "{stack}"
{knobs}
"""


def lab_killing(server: str, at_seq: int, workdir: Path) -> tuple[runner.Lab, dict]:
    """The real lab, except that while cell `at_seq` is measured, `server`'s whole
    process group is killed (SIGKILL: a crash, an OOM kill)."""
    seen: dict = {"instances": [], "killed": None}
    measured = []

    def instance(*args, **kwargs):
        inst = runner.lab.make_instance(*args, **kwargs)
        seen["instances"].append(inst)
        return inst

    def load(spec, cpus=None):
        if spec.phase == "measure":
            measured.append(spec)
            if len(measured) - 1 == at_seq:
                target = next(p for p in seen["instances"][-1].processes if p.name == server)
                threading.Timer(KILL_AFTER_S, lambda: _kill_group(target.pid, seen)).start()
        return engine.run(spec, cpus)

    lab = runner.Lab(load=load, instance=instance, lock=lambda: RunLock(workdir / "stackbench.lock"))
    return lab, seen


def _kill_group(pgid: int, seen: dict) -> None:
    os.killpg(pgid, signal.SIGKILL)
    seen["killed"] = pgid


def run(text: str, lab: runner.Lab, workdir: Path) -> tuple[runner.Outcome, list[dict], Store]:
    store = Store(workdir / "r.sqlite")
    plan = plan_mod.parse(tomllib.loads(text), "faults.toml")
    outcome = runner.run_plan(plan, store, options=runner.Options(workdir=workdir), lab=lab)
    return outcome, store.cells(outcome.run_id), store


@pytest.mark.parametrize("stack,workload,server,knobs", [
    ("nginx-fpm", "php-hello", "php-fpm", ""),
    ("apache-prefork-modphp", "static-12b", "apache2", ""),
    ("varnish-apache", "php-hello", "varnishd", 'knobs = { varnish_mode = "pass-php" }'),
    ("nginx-fpm", "wordpress-home", "mariadbd", ""),
], ids=["PHP-FPM", "Apache", "Varnish", "MariaDB"])
def test_a_server_killed_mid_cell_fails_that_cell_and_the_plan_goes_on(stack, workload, server, knobs, workdir):
    require_stack(stack)
    lab, seen = lab_killing(server, 1, workdir)
    before = snapshot(workdir)
    outcome, cells, store = run(plan_text(stack, workload, knobs), lab, workdir)
    assert seen["killed"] is not None
    assert [c.status for c in cells] == ["ok", "failed", "ok"]  # the next cell still ran
    failed = cells[1]
    assert failed.error.startswith(f"{server}") and "during the load" in failed.error
    assert failed.engine is not None  # the figures up to the crash are kept
    errors = failed.engine.errors  # what the engine saw, by kind
    assert errors is not None
    # Killed fronts refuse or reset connections, a killed PHP-FPM is a 502; WordPress
    # without its database retries the connection for seconds (wpdb's reconnect loop),
    # so its requests are still unanswered when the cell ends.
    in_flight = failed.engine.requests.in_flight_at_end or 0
    assert errors.total + failed.engine.requests.non_2xx + in_flight > 0, failed.engine
    assert outcome.status == RunStatus.FAILED and store.run(outcome.run_id).status == "failed"
    assert leftovers(before, snapshot(workdir)) == {}


def test_a_stack_that_does_not_come_up_is_skipped_and_the_others_run(workdir):
    """B's server exits while starting (its command line is refused): B's cell is failed
    with the reason and the server's own words; A still runs."""
    require_stack("nginx-fpm")

    class Refused(StackInstance):
        def _start(self, server, cgroup):
            argv = server.start_argv()
            if server.name == "nginx":
                server.start_argv = lambda: [*argv, "-Z"]  # "nginx: invalid option: Z"
            super()._start(server, cgroup)

    def instance(variant, *args, **kwargs):
        made = runner.lab.make_instance(variant, *args, **kwargs)
        if variant.label == "B":
            made.__class__ = Refused  # the real instance, but for how its nginx is started
        return made

    lab = runner.Lab(instance=instance, lock=lambda: RunLock(workdir / "stackbench.lock"))
    text = plan_text("nginx-fpm", "static-12b").replace("[1, 2, 4]", "[1]").replace(
        '[[stacks]]\nid = "nginx-fpm"', '[[stacks]]\nid = "nginx-fpm"\nlabel = "B"\n[[stacks]]\nid = "nginx-fpm"\nlabel = "A"')
    before = snapshot(workdir)
    outcome, cells, _ = run(text, lab, workdir)
    assert [(c.stack_label, c.status) for c in cells] == [("B", "failed"), ("A", "ok")]
    assert cells[0].error.startswith("nginx exited with status 1 while starting")
    assert "invalid option" in outcome.errors[0].detail
    assert leftovers(before, snapshot(workdir)) == {}


def test_a_store_that_becomes_unwritable_mid_run_is_a_clear_error_and_keeps_what_it_had(workdir):
    """The lab's file-size limit is lowered to what the store holds after two cells (as a
    full disk would): the next commit fails. Servers stopped, the two cells intact."""
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text("nginx-fpm", "static-12b").replace("[1, 2, 4]", "[1, 2, 4, 8]"))
    before = snapshot(workdir)
    lab = Lab.start(plan, db, workdir)
    lab.wait_cells(2)
    wal = Path(f"{db}-wal")
    limit = max(wal.stat().st_size, db.stat().st_size)
    resource.prlimit(lab.proc.pid, resource.RLIMIT_FSIZE, (limit, limit))
    assert lab.end() == 7
    err = lab.proc.stderr.read()
    # "database or disk is full" on ENOSPC, "disk I/O error" on a file grown past its limit
    assert f"error: cannot write the results store {db}: " in err, err
    assert "Traceback" not in err
    assert leftovers(before, snapshot(workdir)) == {}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = [r[0] for r in conn.execute("SELECT seq FROM cells WHERE status = 'ok' ORDER BY seq")]
    reported = [c["seq"] for c in lab.reported]
    assert reported and stored[:len(reported)] == reported and len(stored) < 4
    # The run could not be marked finished; the next lab marks it crashed and resumes it.
    res = subprocess.run([sys.executable, "-m", "stackbench", "run", "--resume", "1", "--db", str(db),
                          "--workdir", str(workdir)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT seq FROM cells ORDER BY seq")] == [0, 1, 2, 3]
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "complete"
