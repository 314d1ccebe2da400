"""A run whose lab died without a word stays `running` in the store until a lab takes the
run lock: then it is marked crashed (no other lab can be alive), said so, and
`run --resume` accepts it. `runs` and `show` say what to do with it."""

from __future__ import annotations

import tomllib

import pytest

from stackbench import runner
from stackbench.planning import plan as plan_mod
from stackbench.upkeep import leftovers, lock
from stackbench.cli import main
from stackbench.upkeep.pinning import Pinning
from stackbench.states import RunStatus
from stackbench.store import Store
from test_runner_order import PLAN, lab  # noqa: F401  (the fake lab fixture)


def stored_run(store: Store, status: str | None = None) -> int:
    run_id = store.begin_run("p", "p.toml", {"stacks": [{"id": "nginx-fpm"}]}, {}, {"pinning": {}})
    if status:
        store.finish_run(run_id, status)
    return run_id


def test_marking_crashed_touches_only_running_runs():
    store = Store()
    done, dead, stopped = stored_run(store, "complete"), stored_run(store), stored_run(store, "interrupted")
    assert store.mark_crashed() == [dead]
    assert [r["status"] for r in store.runs()] == ["complete", "crashed", "interrupted"]
    assert "kill" in store.run(dead).error
    assert store.mark_crashed() == []  # once
    assert done and stopped


class Recorder(runner.Events):
    def __init__(self):
        self.tidied = None

    def lab_tidied(self, swept, crashed):
        self.tidied = (swept, crashed)


def test_the_lab_that_takes_the_lock_sweeps_and_marks_the_dead_runs_crashed(lab):  # noqa: F811
    log, state, fake = lab
    gone = leftovers.Leftover("run directory", "/tmp/stackbench-nginx-fpm-x", "made by pid 1, gone", lambda: None)
    order = []
    fake.sweep = lambda: order.append("sweep") or leftovers.Swept([gone], [], [])
    fake.lock = lambda: type("Lock", (), {"acquire": lambda self: order.append("lock"),
                                          "release": lambda self: order.append("unlock")})()
    store = Store()
    dead = stored_run(store)
    events = Recorder()
    plan = plan_mod.parse(tomllib.loads(PLAN), "order.toml")
    outcome = runner.run_plan(plan, store, events, runner.Options(pinning=Pinning([0], [1])), fake)
    assert order == ["lock", "sweep", "unlock"]  # swept under the lock, before anything else
    assert events.tidied == (leftovers.Swept([gone], [], []), [dead])
    assert store.run(dead).status == RunStatus.CRASHED
    assert store.run(outcome.run_id).status == RunStatus.COMPLETE
    assert ("preflight", "nginx-fpm") in log


def test_runs_and_show_say_a_crashed_run_can_be_resumed(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(lock, "LOCK_PATH", tmp_path / "stackbench.lock")
    db = tmp_path / "r.sqlite"
    store = Store(db)
    stored_run(store, "complete")
    left_running = stored_run(store)
    store.close()
    assert main(["runs", "--db", str(db)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "running, but its lab is gone" in out[1] and f"run --resume {left_running}" in out[1]
    assert "resume" not in out[0]
    store = Store(db)
    store.mark_crashed()
    store.close()
    assert main(["runs", "--db", str(db)]) == 0
    assert f"crashed         0 cells  p  (finish it: run --resume {left_running})" in capsys.readouterr().out
    assert main(["show", str(left_running), "--db", str(db)]) == 0
    shown = capsys.readouterr()
    assert "· crashed ·" in shown.out and "error: the lab stopped without a word" in shown.out
    assert f"finish it with: stackbench run --resume {left_running}" in shown.err


def test_a_run_being_measured_is_not_resumed_behind_its_back(tmp_path, monkeypatch, capsys):
    path = tmp_path / "stackbench.lock"
    monkeypatch.setattr(lock, "LOCK_PATH", path)
    db = tmp_path / "r.sqlite"
    store = Store(db)
    running = stored_run(store)
    store.close()
    held = lock.RunLock(path)
    held.acquire()
    try:
        assert main(["run", "--resume", str(running), "--db", str(db)]) == 2
        assert f"run {running} is being measured now (pid " in capsys.readouterr().err
        assert main(["runs", "--db", str(db)]) == 0
        assert "running" in capsys.readouterr().out  # a live lab's run is just running
    finally:
        held.release()


@pytest.mark.parametrize("status", ["crashed", "interrupted", "failed"])
def test_resume_accepts_every_unfinished_status(status, tmp_path, monkeypatch, capsys):
    """Up to the point where it would measure: the refusal is only for complete runs."""
    monkeypatch.setattr(lock, "LOCK_PATH", tmp_path / "stackbench.lock")
    db = tmp_path / "r.sqlite"
    store = Store(db)
    run_id = stored_run(store, status)
    store.close()
    reached = []
    monkeypatch.setattr("stackbench.commands.measure.resume",
                        lambda run_id, *a, **k: reached.append(run_id) or runner.Outcome(run_id, RunStatus.COMPLETE))
    assert main(["run", "--resume", str(run_id), "--db", str(db), "--quiet"]) == 0
    assert reached == [run_id]
