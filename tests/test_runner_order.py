"""Lifecycle order of a plan run, with a fake stack and a fake engine (tier 2, like
hyperfine's execution_order_tests): start → verify → warm up → measure → store → stop,
and what survives a Ctrl-C or a server that dies."""

from __future__ import annotations

import json
import tomllib
from contextlib import contextmanager

import pytest

from stackbench import runner, workloads
from stackbench.analysis import verdicts
from stackbench.planning import plan as plan_mod
from stackbench.upkeep import leftovers
from stackbench.engine import EngineResult
from stackbench.errors import ServerExited, UsageError
from stackbench.upkeep.idle import IdleState
from stackbench.model.environment import IdleCores
from stackbench.model.stop import RepetitionStop
from stackbench.upkeep.pinning import Pinning
from stackbench.store import Store

PLAN = """
name = "order"
restart = "stack"
duration = "1s"
warmup = "0.2s"
concurrency = [1, 8]
keepalive = [true]
workloads = ["static-12b"]
[[stacks]]
id = "nginx-fpm"
[[stacks]]
id = "apache-prefork-modphp"
"""


class FakeProc:
    name = "fake"
    exit_status = 1


class FakeInstance:
    host = "127.0.0.1"  # what target.check sees; the URLs name the stack for the fake engine

    def __init__(self, log, variant, die_on_cell=None):
        self.log, self.label, self.port = log, variant.label, 1
        self.knobs, self.files, self.cgroup, self.servers = {"k": 1}, {"conf": "x"}, None, []
        self.machine_cgroup = None
        self.stack = type("FakeStack", (), {"count_headers": (), "steady_after_s": 0.0})()
        self.die_on_cell = die_on_cell
        self.cells_served = 0
        self.php_state = None

    def url(self, path):
        return f"http://{self.label}{path}"

    def workload(self, wid):
        return workloads.get(wid)

    def preflight(self):
        self.log.append(("preflight", self.label))

    def up(self):
        self.log.append(("up", self.label))

    def verify(self, wl):
        self.log.append(("verify", self.label))

    def dead_servers(self):
        return [FakeProc()] if self.die_on_cell is not None and self.cells_served > self.die_on_cell else []

    def check_alive(self):
        if self.dead_servers():
            raise ServerExited("fake exited")

    def down(self):
        self.log.append(("down", self.label))


class FakeRunMonitor:
    """No cgroups, no perf: the order of the lifecycle is what is tested here."""

    cgroup_parent = None

    def __init__(self, *args, **kwargs):
        pass

    def for_stack(self, instance):
        from stackbench.monitor.session import StackMonitor

        return StackMonitor(None)

    def close(self):
        pass


class FreeLock:
    def acquire(self):
        pass

    def release(self):
        pass


def doc(rps=100.0):
    return {"schema_version": 1, "started_unix_us": 1, "duration_us": 1_000_000, "requests_per_s": rps,
            "requests": {"completed": 100, "ok_2xx": 100, "non_2xx": 0, "failed": 0},
            "latency_us": {"mean": 10.0, "percentiles": {"50": 9, "99": 20}}, "warnings": [], "warning_codes": []}


@pytest.fixture
def lab():
    """A Lab whose engine and stacks are fakes that write what happens to `log`."""
    log: list = []
    state = {"interrupt_at": None, "die_on_cell": None, "instances": {}}

    def make_instance(variant, cpus, options, cgroup_parent, workload_ids, machine=None):
        inst = FakeInstance(log, variant, state["die_on_cell"] if variant.id == "nginx-fpm" else None)
        state["instances"][variant.label] = inst
        return inst

    def fake_load(spec, cpus=None):
        log.append((spec.phase, spec.connections))
        measured = [e for e in log if e[0] == "measure"]
        if spec.phase == "measure" and state["interrupt_at"] == len(measured):
            raise KeyboardInterrupt
        if spec.phase == "measure" and state.get("raise_at", (None,))[0] == len(measured):
            raise state["raise_at"][1]
        if spec.phase == "measure":
            for inst in state["instances"].values():
                inst.cells_served += 1
        label = spec.url.split("/")[2]
        rps = state["rps"](label) if "rps" in state else 100.0
        d = doc(rps)
        state.setdefault("specs", []).append(spec)
        if "completed" in state:
            d["requests"]["completed"] = state["completed"](label)
        if label in state.get("unserved", ()):
            d["warning_codes"] = [{"code": "clients_unserved", "params": {"without_response": 3, "connections": 8}}]
        once = state.get("saturated_once", {})
        if once.get(label) and spec.phase == "measure":
            once[label] -= 1
            d["warning_codes"] = [{"code": "engine_saturated", "params": {"thread": 0, "busy": 0.97}}]
        if label in state.get("saturated", ()):  # the fake monitor measures no server CPU: an invalid run
            d["warning_codes"] = [{"code": "engine_saturated", "params": {"thread": 0, "busy": 0.97}}]
        return EngineResult.from_doc(d)

    @contextmanager
    def hold_idle(asked, engine_cpus=None):
        if state.get("idle_refused"):
            raise UsageError("cpu_idle = \"poll\" needs /dev/cpu_dma_latency: Permission denied")
        log.append(("idle held", asked))
        state["idle_cpus"] = engine_cpus
        try:
            yield IdleState(asked, asked == "poll", f"{asked} (fake)")
        finally:
            log.append(("idle released", asked))

    fake = runner.Lab(load=fake_load, engine_binary=lambda: "/bin/true", instance=make_instance,
                      monitor=FakeRunMonitor, environment=lambda pins: {"fake": True}, lock=FreeLock,
                      require=lambda stack: None, versions=lambda stack: {"fake": "1"}, pin_self=lambda cpus: None,
                      sweep=lambda: leftovers.Swept([], [], []), hold_idle=hold_idle)
    return log, state, fake


def run(store, lab, text=PLAN):
    plan = plan_mod.parse(tomllib.loads(text), "order.toml")
    return runner.run_plan(plan, store, options=runner.Options(pinning=Pinning([0], [1])), lab=lab)


def test_order_of_a_plan(lab):
    log, _, fake = lab
    store = Store()
    outcome = run(store, fake)
    assert outcome.status == "complete"
    a, b = "nginx-fpm", "apache-prefork-modphp"
    assert log == [
        ("preflight", a), ("preflight", b),  # every config checked before anything runs
        ("idle held", "auto"),  # idle cores as asked from before the first start to after the last stop
        ("up", a), ("verify", a), ("warmup", 1), ("measure", 1), ("warmup", 8), ("measure", 8), ("down", a),
        ("up", b), ("verify", b), ("warmup", 1), ("measure", 1), ("warmup", 8), ("measure", 8), ("down", b),
        ("idle released", "auto"),
    ]
    cells = store.cells(outcome.run_id)
    assert [(c.stack_label, c.concurrency, c.status) for c in cells] == [
        (a, 1, "ok"), (a, 8, "ok"), (b, 1, "ok"), (b, 8, "ok")]
    assert store.run(outcome.run_id).status == "complete"
    # What the idle cores did is part of the run's environment (show, the report, compare).
    assert store.run(outcome.run_id).environment.cpu_idle == IdleCores("auto", False, "auto (fake)", False)


def test_ctrl_c_stops_the_stack_and_keeps_what_was_measured(lab):
    log, state, fake = lab
    state["interrupt_at"] = 3  # during the first cell of the second stack
    store = Store()
    with pytest.raises(KeyboardInterrupt):
        run(store, fake)
    assert log[-2] == ("down", "apache-prefork-modphp")
    run_row = store.runs()[-1]
    assert run_row["status"] == "interrupted" and run_row["cells"] == 2
    assert log[-1] == ("idle released", "auto")  # the hold goes with the run, Ctrl-C or not


def test_a_server_dying_fails_its_remaining_cells_and_the_plan_goes_on(lab):
    log, state, fake = lab
    state["die_on_cell"] = 0  # nginx-fpm's server dies during its first cell
    store = Store()
    outcome = run(store, fake)
    assert outcome.status == "failed" and len(outcome.errors) == 1
    cells = store.cells(outcome.run_id)
    assert [(c.stack_label, c.status) for c in cells] == [
        ("nginx-fpm", "failed"), ("nginx-fpm", "failed"),
        ("apache-prefork-modphp", "ok"), ("apache-prefork-modphp", "ok")]
    assert cells[0].engine is not None and "during the load" in cells[0].error  # what the engine saw is kept
    assert cells[1].engine is None and cells[1].error == "fake exited"
    assert ("down", "nginx-fpm") in log and log[-2] == ("down", "apache-prefork-modphp")


def test_a_plan_that_polls_holds_it_for_the_run_and_one_that_cannot_starts_nothing(lab):
    log, state, fake = lab
    store = Store()
    outcome = run(store, fake, 'cpu_idle = "poll"\n' + PLAN)
    assert log[2] == ("idle held", "poll") and log[-1] == ("idle released", "poll")
    assert state["idle_cpus"] == [1], "the engine's cores (Pinning([0], [1])), never the server's"
    assert store.run(outcome.run_id).environment.cpu_idle.polled is True
    log.clear()
    state["idle_refused"] = True
    with pytest.raises(UsageError):
        run(store, fake, 'cpu_idle = "poll"\n' + PLAN)
    assert [e for e in log if e[0] != "preflight"] == [], "nothing started"
    assert len(store.runs()) == 1, "no empty run stored"


def test_resuming_a_run_another_way_is_refused(lab, tmp_path, capsys):
    from stackbench import cli

    _, state, fake = lab
    db = tmp_path / "r.sqlite"
    state["interrupt_at"] = 3
    with pytest.raises(KeyboardInterrupt):
        run(Store(db), fake)
    run_id = Store(db).runs()[-1]["id"]
    assert cli.main(["run", "--resume", str(run_id), "--db", str(db), "--cpu-idle", "poll"]) == 2
    err = capsys.readouterr().err
    assert f"run {run_id} was measured with cpu_idle = \"auto\"; resume it the same way" in err


def test_a_resumed_run_is_measured_and_numbered_as_its_first_part_was():
    from cells import stored_run
    from stackbench.commands.measure import _as_measured

    def _as_stored(plan, env):
        return _as_measured(plan, stored_run(environment=env))

    plan = plan_mod.parse(tomllib.loads('repetitions = 2\n' + PLAN.replace("keepalive = [true]",
                                                                          "keepalive = [true, false]")), "order.toml")
    held = {"cpu_idle": {"asked": "auto", "engine_polled": True}, "mode_order": "alternate"}
    assert _as_stored(plan, held).cpu_idle == "poll-engine"  # refused then if it cannot be had: no silent switch
    assert _as_stored(plan, held | {"cpu_idle": {"asked": "auto", "engine_polled": False}}).cpu_idle == "as-is"
    assert _as_stored(plan, held).mode_order == "alternate"
    older = _as_stored(plan, {"cpu_idle": {"asked": "as-is"}})  # stored before the modes alternated
    assert older.mode_order == "as-written"
    modes = [[c.keepalive for c in plan_mod.expand(p) if c.repetition == 1][:2] for p in (plan, older)]
    assert modes == [[False, True], [True, False]], "each seq is the cell it was when the run began"


def test_a_new_run_records_how_its_cells_were_ordered(lab):
    _, _, fake = lab
    store = Store()
    outcome = run(store, fake)
    assert store.run(outcome.run_id).environment.mode_order == "alternate"


def test_a_run_stored_before_auto_was_the_default_resumes_as_it_was_measured():
    from cells import stored_run

    silent = plan_mod.parse(tomllib.loads(PLAN), "order.toml")
    assert silent.cpu_idle == "auto"  # today's default
    as_is = {"cpu_idle": {"asked": "as-is", "polled": False, "why": "…"}}
    assert stored_run(environment=as_is).idle_asked == "as-is"  # recorded by the run (session 12 on)
    assert stored_run(environment={"fake": True}).idle_asked == "as-is"  # before the lab recorded it
    assert stored_run(environment={"cpu_idle": {"asked": "auto"}}).idle_asked == "auto"
    assert stored_run(plan={"cpu_idle": "poll"}, environment=as_is).idle_asked == "poll"  # what the plan says stands


def test_restart_per_cell_starts_a_fresh_stack_for_every_cell(lab):
    log, _, fake = lab
    run(Store(), fake, PLAN.replace('restart = "stack"', 'restart = "cell"'))
    a = "nginx-fpm"
    assert log[3:10] == [("up", a), ("verify", a), ("warmup", 1), ("measure", 1), ("down", a), ("up", a), ("verify", a)]
    assert sum(1 for e in log if e[0] == "up") == 4


def test_a_second_run_at_the_same_time_is_refused(lab, tmp_path):
    from stackbench.upkeep import lock
    from stackbench.errors import UsageError

    _, _, fake = lab
    fake.lock = lambda: lock.RunLock(tmp_path / "lock")
    held = lock.RunLock(tmp_path / "lock")
    held.acquire()
    try:
        with pytest.raises(UsageError, match="another stackbench run"):
            run(Store(), fake)
    finally:
        held.release()
    assert run(Store(), fake).status == "complete"  # free again


def test_resume_runs_only_the_missing_cells_in_order(lab):
    log, state, fake = lab
    state["interrupt_at"] = 3
    store = Store()
    with pytest.raises(KeyboardInterrupt):
        run(store, fake)
    run_id = store.latest_run_id()
    done = {c.seq for c in store.cells(run_id)}
    assert done == {0, 1}
    state["interrupt_at"] = None
    log.clear()
    plan = plan_mod.parse(tomllib.loads(PLAN), "order.toml")
    outcome = runner.resume(run_id, plan, done, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)
    assert outcome.run_id == run_id and outcome.status == "complete"
    assert [e for e in log if e[0] == "measure"] == [("measure", 1), ("measure", 8)]
    assert [c.seq for c in store.cells(run_id)] == [0, 1, 2, 3]
    assert store.run(run_id).status == "complete"


def test_the_checked_plan_is_stored_with_the_run(lab):
    _, _, fake = lab
    store = Store()
    outcome = run(store, fake)
    checked = json.loads(store.db.execute("SELECT plan_checked_json FROM runs WHERE id = ?",
                                          (outcome.run_id,)).fetchone()[0])
    assert checked["duration_s"] == 1.0 and checked["warmup_s"] == 0.2 and checked["restart"] == "stack"
    assert [s["id"] for s in checked["stacks"]] == ["nginx-fpm", "apache-prefork-modphp"]


ADAPTIVE = PLAN.replace('restart = "stack"', 'restart = "cell"\nrepetitions = "auto"\nmin_repetitions = 5\n'
                        'max_repetitions = 9\ntarget_ci = "3%"\nbaseline = "nginx-fpm"').replace(
                        "concurrency = [1, 8]", "concurrency = [8]")


def test_adaptive_repetitions_stop_when_the_intervals_are_narrow(lab):
    import random

    log, state, fake = lab
    rng = random.Random(7)
    # 0.5 % noise: every CI is far inside ±3 % once the minimum of 5 repetitions ran
    state["rps"] = lambda label: (1000 if label == "nginx-fpm" else 1200) * rng.gauss(1, 0.005)
    store = Store()
    outcome = run(store, fake, ADAPTIVE)
    assert outcome.stop["reason"] == "target" and outcome.stop["repetitions"] == 5
    assert outcome.stop["worst_half_width"] < 0.03
    measured = [e for e in log if e[0] == "measure"]
    assert len(measured) == 5 * 2  # whole repetitions, two stacks each
    reps = [c.repetition for c in store.cells(outcome.run_id)]
    assert reps == [0, 0, 1, 1, 2, 2, 3, 3, 4, 4]  # interleaved A B A B
    assert store.run(outcome.run_id).stop == RepetitionStop.from_dict(outcome.stop)


def test_adaptive_repetitions_stop_at_the_cap_when_noise_stays_high(lab):
    import random

    log, state, fake = lab
    rng = random.Random(7)
    state["rps"] = lambda label: 1000 * rng.lognormvariate(0, 0.3)  # 30 % noise never narrows to ±3 %
    outcome = run(Store(), fake, ADAPTIVE)
    assert outcome.stop["reason"] == "cap" and outcome.stop["repetitions"] == 9
    assert outcome.stop["worst_half_width"] > 0.03
    assert len([e for e in log if e[0] == "measure"]) == 9 * 2


def test_adaptive_repetitions_stop_when_every_pair_has_the_runs_its_noise_needs(lab):
    """Issue 23: 3 % noise never narrows a CI to ±0.5 %, but 5 runs a side already find a
    20 % difference among the plan's comparisons at that noise (power.readiness)."""
    import random

    log, state, fake = lab
    rng = random.Random(7)
    state["rps"] = lambda label: 1000 * rng.lognormvariate(0, 0.03)
    outcome = run(Store(), fake, ADAPTIVE.replace('target_ci = "3%"', 'target_ci = "0.5%"'))
    assert outcome.stop["reason"] == "power" and outcome.stop["repetitions"] == 5
    assert outcome.stop["family"] == 1 and outcome.stop["detect"] == 0.2 and outcome.stop["runs_needed"] == 5
    # 30 % noise: a 20 % difference would need ~70 runs a side; the cap (9) comes first
    rng2 = random.Random(8)
    state["rps"] = lambda label: 1000 * rng2.lognormvariate(0, 0.3)
    outcome = run(Store(), fake, ADAPTIVE)
    assert outcome.stop["reason"] == "cap" and outcome.stop["runs_needed"] > 9


def test_adaptive_repetitions_do_not_stop_on_target_while_a_pair_lacks_valid_runs(lab):
    import random

    log, state, fake = lab
    rng = random.Random(7)
    state["rps"] = lambda label: 1000 * rng.gauss(1, 0.005)
    # every run of it an invalid measurement (was clients_unserved, which is now
    # a failed load — a result that settles the pair, see the next test)
    state["saturated"] = {"apache-prefork-modphp"}
    outcome = run(Store(), fake, ADAPTIVE)
    assert outcome.stop["reason"] == "cap" and outcome.stop["open_pairs"] == 1


def test_adaptive_repetitions_stop_when_a_stack_fails_the_load_in_every_run(lab):
    """Issue 23: a pair whose candidate fails the load in its MIN_RUNS runs is settled
    ("fails this load"): no more repetitions to narrow an interval nobody reads."""
    import random

    log, state, fake = lab
    rng = random.Random(7)
    state["rps"] = lambda label: 1000 * rng.gauss(1, 0.005)
    state["unserved"] = {"apache-prefork-modphp"}
    store = Store()
    outcome = run(store, fake, ADAPTIVE)
    assert outcome.stop["reason"] == "target" and outcome.stop["repetitions"] == 5
    assert outcome.stop["open_pairs"] == 0


def test_resuming_a_failed_run_measures_its_failed_cells_again(lab):
    log, state, fake = lab
    state["die_on_cell"] = 0
    store = Store()
    outcome = run(store, fake)
    assert outcome.status == "failed"
    cells = store.cells(outcome.run_id)
    failed = [c.seq for c in cells if c.status != "ok"]
    assert failed == [0, 1]
    store.forget_cells(outcome.run_id, failed)  # what `run --resume` does first
    state["die_on_cell"] = None
    state["instances"].clear()
    log.clear()
    plan = plan_mod.parse(tomllib.loads(PLAN), "order.toml")
    done = {c.seq for c in store.cells(outcome.run_id)}
    again = runner.resume(outcome.run_id, plan, done, store, options=runner.Options(pinning=Pinning([0], [1])),
                          lab=fake)
    assert again.status == "complete"
    assert [(c.seq, c.status) for c in store.cells(outcome.run_id)] == [(0, "ok"), (1, "ok"), (2, "ok"),
                                                                             (3, "ok")]
    assert store.db.execute("SELECT COUNT(*) FROM cells").fetchone()[0] == 4


def test_a_broken_pipe_inside_the_runner_ends_the_run_crashed_and_says_why(lab, monkeypatch, tmp_path, capsys):
    """A pipe to a child that died (a server the OOM killer took) is not "the reader
    left": the run is stored crashed with why, the command says so and exits non-zero,
    and every stack it started came down."""
    from dataclasses import replace

    from stackbench.cli import main
    from stackbench.commands import measure as measure_cmd

    log, state, fake = lab
    state["raise_at"] = (3, BrokenPipeError(32, "Broken pipe"))  # the second stack's first cell
    real = runner.run_plan
    monkeypatch.setattr(measure_cmd, "run_plan", lambda plan, store, events, options: real(
        plan, store, events, replace(options, pinning=Pinning([0], [1])), lab=fake))
    plan, db = tmp_path / "order.toml", tmp_path / "r.sqlite"
    plan.write_text(PLAN)
    assert main(["run", str(plan), "--db", str(db), "--quiet"]) == 9
    err = capsys.readouterr().err
    assert "unexpected error: BrokenPipeError" in err and "stackbench run --resume 1" in err
    store = Store(db)
    stored = store.run(1)
    assert stored.status == "crashed" and "BrokenPipeError" in (stored.error or "")
    assert [c.stack_label for c in store.cells(1)] == ["nginx-fpm", "nginx-fpm"]  # kept
    assert log[-2:] == [("down", "apache-prefork-modphp"), ("idle released", "auto")]


def test_a_broken_pipe_to_the_reader_of_our_output_is_a_quiet_end(monkeypatch):
    """`stackbench show | head`: only when our own standard output is the broken pipe."""
    import os
    import sys

    from stackbench import cli

    monkeypatch.setitem(cli.COMMANDS, "runs", lambda args: (_ for _ in ()).throw(BrokenPipeError(32, "x")))
    read, write = os.pipe()
    os.close(read)
    saved = os.dup(1)
    try:
        os.dup2(write, 1)
        monkeypatch.setattr(sys, "stdout", os.fdopen(os.dup(1), "w"))
        assert cli.main(["runs"]) == 0
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(write)
    monkeypatch.setattr(sys, "stdout", sys.__stdout__)
    assert cli.main(["runs"]) == 9  # stdout is fine: the pipe was another one


def test_a_slow_stack_is_measured_by_a_count_from_its_second_repetition(lab):
    """The first repetition (no warm-up) keeps the plan's window; it shows that apache
    answered 10 responses in 1 s to 8 clients — too few to count in a fixed window — so
    the next one asks the engine for a count (3 a client), its window capped at 4 s. The
    fast stack keeps its window."""
    _, state, fake = lab
    state["completed"] = lambda label: 10 if label == "apache-prefork-modphp" else 5000
    text = PLAN.replace('warmup = "0.2s"', 'warmup = "0s"\nrepetitions = 2').replace("concurrency = [1, 8]",
                                                                                   "concurrency = [8]")
    run(Store(), fake, text)
    measured = [(s.url.split("/")[2], s.duration_s, s.requests) for s in state["specs"] if s.phase == "measure"]
    assert measured == [("nginx-fpm", 1.0, None), ("apache-prefork-modphp", 1.0, None),
                        ("nginx-fpm", 1.0, None), ("apache-prefork-modphp", 4.0, 24)]


def test_an_invalid_repetition_is_measured_again(lab):
    """apache's first cell measured the engine (saturated while the server had headroom):
    after the plan's repetitions it is measured once more, in a repetition of its own
    (seq after the plan's), and the run says so."""
    log, state, fake = lab
    state["saturated_once"] = {"apache-prefork-modphp": 1}
    text = PLAN.replace("concurrency = [1, 8]", "concurrency = [8]").replace('warmup = "0.2s"',
                                                                            'warmup = "0.2s"\nrepetitions = 2')
    store = Store()
    outcome = run(store, fake, text)
    cells = store.cells(outcome.run_id)
    assert [(c.seq, c.stack_label) for c in cells] == [(0, "nginx-fpm"), (1, "apache-prefork-modphp"),
                                                       (2, "nginx-fpm"), (3, "apache-prefork-modphp"),
                                                       (5, "apache-prefork-modphp")]
    assert outcome.stop == {"reason": "fixed", "repetitions": 2, "remeasured": 1}
    vs = verdicts.decide(cells, "nginx-fpm")
    assert [v.comparison.n_b for v in vs.for_metric("throughput")] == [2]  # apache has its two valid runs again


def test_an_invalid_repetition_is_measured_again_only_up_to_the_bound(lab):
    _, state, fake = lab
    state["saturated"] = {"apache-prefork-modphp"}  # every time: the cause is not the moment
    text = PLAN.replace("concurrency = [1, 8]", "concurrency = [8]").replace('warmup = "0.2s"',
                                                                            'warmup = "0.2s"\nrepetitions = 4')
    store = Store()
    outcome = run(store, fake, text)
    assert outcome.stop["remeasured"] == 2  # half the 4 repetitions: apache's one cell twice more, then no more


def test_a_resumed_run_does_not_measure_its_extra_repetitions_again(lab):
    """A run whose invalid cells were measured again in extra repetitions, resumed: the
    seqs it stored are kept, none is measured twice (the store's key would refuse it)."""
    _, state, fake = lab
    state["saturated"] = {"apache-prefork-modphp"}
    text = PLAN.replace("concurrency = [1, 8]", "concurrency = [8]").replace('warmup = "0.2s"',
                                                                            'warmup = "0.2s"\nrepetitions = 4')
    plan = plan_mod.parse(tomllib.loads(text), "order.toml")
    store, options = Store(), runner.Options(pinning=Pinning([0], [1]))
    first = runner.run_plan(plan, store, options=options, lab=fake)
    seqs = [c.seq for c in store.cells(first.run_id)]
    assert seqs == [0, 1, 2, 3, 4, 5, 6, 7, 9, 11]  # apache's cell twice more, in repetitions 4 and 5
    again = runner.resume(first.run_id, plan, runner.done_seqs(plan, store, first.run_id), store, options=options,
                          lab=fake)
    assert again.status == "complete" and [c.seq for c in store.cells(first.run_id)] == seqs


def test_a_walks_steps_keep_their_time_however_slow_the_stack(lab):
    """A ramp's steps are one walk on one running stack: how long each lasts is part of
    what its pool grows by, so none becomes a count."""
    _, state, fake = lab
    state["completed"] = lambda label: 10
    text = PLAN.replace('warmup = "0.2s"', 'warmup = "0s"\nrepetitions = 2\nramp = "updown"')
    run(Store(), fake, text)
    assert {s.requests for s in state["specs"] if s.phase == "measure"} == {None}


def test_a_budgeted_run_stops_once_every_comparison_has_a_verdict(lab):
    """A quick form's rule: at 20 % apart with 10 % noise the 3 % target is far away, but
    the comparison is decided after the minimum: no repetition more."""
    import random

    _, state, fake = lab
    rng = random.Random(3)
    state["rps"] = lambda label: (1000 if label == "nginx-fpm" else 1200) * rng.gauss(1, 0.10)
    outcome = run(Store(), fake, 'budget = "100s"\n' + ADAPTIVE)
    assert (outcome.stop["reason"], outcome.stop["repetitions"], outcome.stop["budget_s"]) == ("decided", 5, 100.0)
    # said as what it waited on: the stacks against the baseline (a protocol's or a visitor
    # class's comparison does not hold the runs)
    from stackbench.model.stop import RepetitionStop
    from stackbench.report.text.verdicts import stop_sentence

    assert stop_sentence(RepetitionStop.from_dict(outcome.stop)).startswith(
        "repetitions: 5, stopped because every throughput comparison against the baseline stack had a verdict")


def test_a_budgeted_run_begins_no_repetition_that_would_end_past_its_budget(lab):
    """Two equal stacks stay "no significant difference": without a budget they would run
    to the cap; with one shorter than a repetition they stop at the minimum."""
    import random

    _, state, fake = lab
    rng = random.Random(5)
    state["rps"] = lambda label: 1000 * rng.gauss(1, 0.10)
    outcome = run(Store(), fake, 'budget = "0.001s"\n' + ADAPTIVE)
    assert (outcome.stop["reason"], outcome.stop["repetitions"]) == ("budget", 5)


def test_a_steady_warm_up_warms_each_start_in_windows_and_records_its_time_to_steady(lab):
    """`steady`: the first cell of each stack start is warmed in windows of its load until
    its throughput holds, then measured; the start's later cells have the plan's fixed
    warm-up; a stack still climbing at the cap is measured anyway and says so."""
    log, state, fake = lab
    climbs = {"nginx-fpm": iter([100, 300, 500, 500, 500, 500]),  # settles at its 6th window
              "apache-prefork-modphp": iter(range(100, 10_000, 100))}  # never settles
    state["completed"] = lambda label: next(climbs[label]) if log[-1][0] == "warmup" and log[-2][0] != "measure" else 100
    text = PLAN.replace('warmup = "0.2s"', 'warmup = "0.2s"\nsteady = { window = "0.5s", cap = "8s" }')
    store = Store()
    outcome = run(store, fake, text)
    assert outcome.status == "complete"
    a = "nginx-fpm"
    # the fake engine's windows last 1 s whatever is asked: nginx + FPM is steady after 6 of them (c=1); its
    # next cell (c=8) finds the start warm and has the plan's 0.2 s
    assert log[log.index(("up", a)):log.index(("down", a)) + 1] == (
        [("up", a), ("verify", a)] + [("warmup", 1)] * 6 + [("measure", 1), ("warmup", 8), ("measure", 8), ("down", a)])
    cells = store.cells(outcome.run_id)
    first, second, third, fourth = (c.warmup for c in cells)
    assert (first.steady, first.fresh, len(first.windows), first.seconds) == (True, True, 6, 6.0)
    assert (second.steady, second.fresh, second.windows, second.seconds) == (None, False, (), 0.2)
    assert (third.steady, third.fresh, third.seconds, third.cap_s) == (False, True, 8.0, 8.0)
    assert fourth.steady is None and not fourth.fresh
    assert [c.code for c in cells[2].caveats] == ["not_steady"] and cells[0].caveats == cells[3].caveats == ()
    from stackbench.analysis import warmup as warmup_analysis

    steady = {s.stack_label: s for s in warmup_analysis.of(cells)}
    assert steady[a].seconds == (6.0,) and steady[a].not_steady == 0
    assert steady["apache-prefork-modphp"].never and steady["apache-prefork-modphp"].cap_s == 8.0


def test_a_stack_that_completed_nothing_is_measured_on_to_past_the_deadline(lab):
    """apache answered nothing in its 1 s window, shorter than the 10 s timeout: before it
    is judged the load runs again for 11 s, one second past the deadline (every request
    out has ended by then: answered, or failed); the cell keeps the longer window. nginx
    answered: its window stays."""
    log, state, fake = lab
    state["completed"] = lambda label: 0 if label == "apache-prefork-modphp" else 5000
    text = PLAN.replace("concurrency = [1, 8]", "concurrency = [8]")
    store = Store()
    outcome = run(store, fake, text)
    measured = [(s.url.split("/")[2], s.duration_s, s.requests) for s in state["specs"] if s.phase == "measure"]
    assert measured == [("nginx-fpm", 1.0, None), ("apache-prefork-modphp", 1.0, None),
                        ("apache-prefork-modphp", 11.0, None)]
    assert [e for e in log if e[0] in ("warmup", "measure")] == [
        ("warmup", 8), ("measure", 8), ("warmup", 8), ("measure", 8), ("measure", 8)]  # no second warm-up alone
    assert len(store.cells(outcome.run_id)) == 2


def _judged(background, paces, completed=0, failed=0, duration_us=1_000_000, timeout="10s"):
    """runner/cell.py's choice for one window: the load spec measured on, or None."""
    from types import SimpleNamespace

    from stackbench.engine import LoadSpec
    from stackbench.runner import cell as cell_mod

    text = PLAN.replace("concurrency = [1, 8]", "concurrency = [16]").replace(
        'name = "order"', f'name = "order"\ntimeout = "{timeout}"')
    if background != "none":
        text = text.replace('name = "order"', 'name = "order"\nbackground = ["slow"]\nnetwork = "veth"', 1)
        text += '[visitors.slow]\nconnections = 200\nread_rate = "20kB"\n'
    plan = plan_mod.parse(tomllib.loads(text), "order.toml")
    cell = plan_mod.expand(plan)[0]
    assert cell.background == background
    d = doc(0.0 if not completed else completed / (duration_us / 1e6))
    d["duration_us"], d["requests"]["completed"], d["requests"]["failed"] = duration_us, completed, failed
    runs = SimpleNamespace(plan=plan, paces=paces)
    stack = SimpleNamespace(instance=SimpleNamespace(dead_servers=lambda: []))
    spec = LoadSpec(url="http://x/", connections=16, duration_s=duration_us / 1e6)
    return cell_mod._measure_on(runs, stack, cell, spec, EngineResult.from_doc(d)), cell_mod._question(cell)


def test_beside_other_visitors_a_stack_fast_alone_is_judged_without_measuring_on():
    from stackbench.planning import window

    # no pace alone known: measured on, 11 s
    on, _ = _judged("slow", {})
    assert on is not None and (on.duration_s, on.requests) == (11.0, None)
    # alone it served 16 clients 3,400 times a second: a turn every 5 ms, and none came in 1 s
    _, q = _judged("slow", {})
    held, _ = _judged("slow", {q: window.Pace(3400.0)})
    assert held is None
    # alone it took 2.7 s a turn: 1 s without one may be slowness — measured on
    slow, _ = _judged("slow", {q: window.Pace(6.0)})
    assert slow is not None
    # alone (no other visitors) the pace of an earlier repetition is no excuse: measured on
    assert _judged("none", {q: window.Pace(3400.0)})[0] is not None


@pytest.mark.parametrize("changes", [
    {"completed": 3},  # something was answered: judged on the window (slow or held back there)
    {"failed": 16},  # requests failed: that is how it failed, not a wait
    {"duration_us": 10_000_000},  # the window reached the 10 s deadline already
    {"duration_us": 2_000_000, "timeout": "2s"},
])
def test_a_window_is_measured_on_only_when_everyone_was_still_waiting_before_the_deadline(changes):
    assert _judged("none", {}, **changes)[0] is None
