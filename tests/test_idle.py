"""Idle cores during a run (upkeep/idle.py): as the system has them by default (and said
so), polled when asked, the request held exactly as long as the run, a clear error when
"poll" is asked and cannot be had."""

from __future__ import annotations

import errno
import os
import struct
import tomllib

import pytest

from stackbench.errors import PlanError, UsageError
from stackbench.planning import plan as plan_mod
from stackbench.upkeep import idle

PLAN = """
duration = "1s"
[[stacks]]
id = "nginx-fpm"
"""


def test_the_plan_takes_cpu_idle_and_refuses_anything_else():
    assert plan_mod.parse(tomllib.loads(PLAN), "p.toml").cpu_idle == "auto"
    assert plan_mod.parse(tomllib.loads('cpu_idle = "poll"\n' + PLAN), "p.toml").cpu_idle == "poll"
    with pytest.raises(PlanError) as e:
        plan_mod.parse(tomllib.loads('cpu_idle = "spin"\n' + PLAN), "p.toml")
    assert "cpu_idle takes 'auto', 'as-is', 'poll', 'poll-engine', not 'spin'" in str(e.value)


def test_as_is_touches_nothing_and_says_how_the_system_waits(tmp_path):
    qos = tmp_path / "qos"  # would be opened if the hold were taken
    with idle.held("as-is", qos_file=str(qos)) as state:
        assert not state.polled and state.why.startswith("as the system has them")
    assert not qos.exists()
    assert idle.system_words("haltpoll", "0").startswith("as the system has them (cpuidle haltpoll, halting at once: "
                                                         "a server pays some µs each time it wakes the idle load engine")
    assert idle.system_words("haltpoll", "0", engine_held=True) == \
        "as the system has them (cpuidle haltpoll, halting at once)"  # the server's: its client costs it nothing
    assert idle.system_words("haltpoll", "200000") == \
        "as the system has them (cpuidle haltpoll, polling up to 200 µs before halting)"
    assert idle.system_words("intel_idle", None) == "as the system has them (cpuidle intel_idle)"
    assert idle.system_words("none", None) == "as the system has them"
    with pytest.raises(ValueError):
        with idle.held("spin"):
            pass


def test_poll_that_cannot_be_had_is_an_error_that_says_what_to_do(tmp_path, monkeypatch):
    missing = str(tmp_path / "no-such-device")
    with pytest.raises(UsageError) as e:
        with idle.held("poll", qos_file=missing):
            pass
    assert "cpu_idle = \"poll\" needs" in e.value.message and "No such file" in e.value.message
    assert "has no" in e.value.hint and "--cpu-idle as-is" in e.value.hint
    with pytest.raises(UsageError) as e:  # the preflight and the dry run ask the same, first
        idle.require("poll", qos_file=missing)
    assert "has no" in e.value.hint
    idle.require("as-is", qos_file=missing)  # nothing asked, nothing needed

    def refused(*args):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(idle.os, "open", refused)  # a user without root
    with pytest.raises(UsageError) as e:
        with idle.held("poll", qos_file=missing):
            pass
    assert "Permission denied" in e.value.message and "takes root" in e.value.hint


def test_as_is_says_polled_when_another_process_holds_the_cores_there(tmp_path, monkeypatch):
    states = tmp_path / "cpuidle"
    for i, (name, latency) in enumerate([("POLL", 0), ("haltpoll idle", 1)]):
        (states / f"state{i}").mkdir(parents=True)
        (states / f"state{i}" / "name").write_text(name + "\n")
        (states / f"state{i}" / "latency").write_text(f"{latency}\n")
    monkeypatch.setattr(idle, "CPUIDLE_STATES", states)
    qos = tmp_path / "qos"
    qos.write_bytes(struct.pack("i", 0))  # someone's cyclictest
    with idle.held("as-is", qos_file=str(qos)) as state:
        assert state.polled and "another process holds a PM QoS request of 0 µs" in state.why
    qos.write_bytes(struct.pack("i", 2_000_000_000))  # nobody's
    with idle.held("as-is", qos_file=str(qos)) as state:
        assert not state.polled and state.why.startswith("as the system has them")


@pytest.mark.servers  # it changes the whole machine's idle cores for a moment: never beside a measurement
@pytest.mark.skipif(not os.access(idle.QOS_FILE, os.W_OK), reason="needs root and /dev/cpu_dma_latency (CI has both)")
def test_the_request_holds_every_core_at_polling_while_held_and_goes_with_it():
    from stackbench.upkeep import lock

    if lock.holder():
        pytest.skip(f"a lab is measuring on this machine ({lock.holder()})")
    before = idle.current_latency_us()
    assert before is not None
    with idle.held("poll") as state:
        assert state.polled
        assert idle.current_latency_us() == 0  # the kernel's combined request: only polling idle meets it
    assert idle.current_latency_us() == before


def test_on_another_host_the_hold_is_this_machines_alone():
    state = idle.IdleState("poll", True, "polled")
    assert state.on_this_machine_only(False) is state
    assert "on this machine only, the plan's other hosts as they are" in state.on_this_machine_only(True).why


def test_compare_reads_an_older_run_without_the_key_as_not_polled():
    from types import SimpleNamespace

    from cells import stored_run
    from stackbench.commands.inspect import _idle_regime

    def store(env):
        return SimpleNamespace(run=lambda run_id: stored_run(environment=env))

    cells = [SimpleNamespace(run_id=1)]
    assert _idle_regime(store({}), cells) == "as-is"
    assert _idle_regime(store(None), cells) == "as-is"
    assert _idle_regime(store({"cpu_idle": {"asked": "poll", "polled": True, "why": "…"}}), cells) == "poll"
    engine = {"asked": "poll-engine", "polled": False, "engine_polled": True, "why": "…"}
    assert _idle_regime(store({"cpu_idle": engine}), cells) == "poll-engine"


def test_show_and_the_report_say_what_the_idle_cores_did():
    import io

    from cells import stored_run
    from stackbench.model.environment import Environment
    from stackbench.report.html.reproduce import environment_rows
    from stackbench.report.text import table

    held = {"asked": "poll", "polled": True, "why": "polled, not halted, during the run (cpu_idle = \"poll\": …)"}
    out = io.StringIO()
    table.header(stored_run(environment={"pinning": {"server_cpus": [0], "engine_cpus": [1]}, "cpu_idle": held}), out)
    assert "idle cores: polled, not halted, during the run" in out.getvalue()
    assert ("idle cores", held["why"]) in environment_rows(Environment.from_dict({"cpu_idle": held}))
    older = io.StringIO()  # a run stored before the lab held idle cores says nothing of them
    table.header(stored_run(environment={"pinning": {"server_cpus": [0], "engine_cpus": [1]}}), older)
    assert "idle cores" not in older.getvalue()


def start_run(workdir, cpu_idle):
    """A real `stackbench run` of nginx + FPM's 12-byte file at four levels (a few seconds),
    idle cores as asked; returns the process and its store. On every core, whatever an
    earlier in-process run pinned this test process to: on one, server and engine would
    share it (and poll-engine refuses that)."""
    import subprocess
    import sys

    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text('name = "idle"\nduration = "2s"\nwarmup = "0s"\nconcurrency = [1, 4, 8, 16]\n'
                    'workloads = ["static-12b"]\n[[stacks]]\nid = "nginx-fpm"\n')
    every = set(range(os.cpu_count() or 1))
    proc = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir",
                             str(workdir), "--cpu-idle", cpu_idle, "--quiet"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, preexec_fn=lambda: os.sched_setaffinity(0, every))
    return proc, db


@pytest.mark.servers
@pytest.mark.skipif(not os.access(idle.QOS_FILE, os.W_OK), reason="needs root and /dev/cpu_dma_latency (CI has both)")
def test_a_real_run_asked_to_poll_holds_it_while_it_measures_records_it_and_drops_it_on_ctrl_c(workdir):
    import signal
    import sqlite3
    import subprocess
    import sys
    import time

    from conftest import require_stack

    require_stack("nginx-fpm")
    before = idle.current_latency_us()
    proc, db = start_run(workdir, "poll")
    seen, cells, deadline = set(), 0, time.monotonic() + 60
    while cells < 1 and time.monotonic() < deadline and proc.poll() is None:
        seen.add(idle.current_latency_us())
        time.sleep(0.05)
        try:
            with sqlite3.connect(db) as conn:
                cells = conn.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
        except sqlite3.Error:
            pass
    assert proc.poll() is None, proc.communicate()
    assert 0 in seen, f"the run never held the cores at polling: {seen}"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert idle.current_latency_us() == before, "the request outlived the run"
    show = subprocess.run([sys.executable, "-m", "stackbench", "show", "--db", str(db)], capture_output=True, text=True)
    assert "idle cores: polled, not halted, during the run" in show.stdout, show.stdout + show.stderr


@pytest.fixture
def every_core():
    """This process on every core for the test: an earlier in-process run may have pinned
    it to one (the lab pins itself to the engine's cores), and pinning.choose() reads it."""
    before = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(range(os.cpu_count() or 1)))
    yield
    os.sched_setaffinity(0, before)


def test_the_dry_run_says_when_the_run_will_poll_and_is_silent_as_is(capsys, every_core):
    from conftest import require_stack
    from stackbench import cli

    require_stack("nginx-fpm")
    if os.cpu_count() < 2:
        pytest.skip("one core: the engine shares the server's, and auto holds nothing (tested below)")
    assert cli.main(["scenario", "run", "static", "--quick", "--dry-run", "--cpu-idle", "poll"]) == 0
    assert "idle cores: every core held polling, never halted, for the whole run" in capsys.readouterr().out
    assert cli.main(["scenario", "run", "static", "--quick", "--dry-run", "--cpu-idle", "poll-engine"]) == 0
    assert "idle cores: the load engine's cores held polling" in capsys.readouterr().out
    assert cli.main(["scenario", "run", "static", "--quick", "--dry-run"]) == 0  # the default: auto
    assert "idle cores: the load engine's cores held polling, never halted, for the whole run where this machine " \
           "allows it" in capsys.readouterr().out
    assert cli.main(["scenario", "run", "static", "--quick", "--dry-run", "--cpu-idle", "as-is"]) == 0
    assert "idle cores" not in capsys.readouterr().out


@pytest.fixture
def cores(tmp_path, monkeypatch):
    """A fake sysfs of two cores' wake-up latency requests and a private ledger directory."""
    from stackbench.upkeep import core_qos

    for cpu in (0, 1):
        (tmp_path / f"cpu{cpu}").mkdir()
        (tmp_path / f"cpu{cpu}" / "request").write_text("0\n")
    monkeypatch.setattr(core_qos, "CORE_REQUEST", str(tmp_path / "cpu{}" / "request"))
    monkeypatch.setattr(core_qos, "LEDGER", tmp_path / "run" / "idle-cores.json")
    return tmp_path


def request(tmp_path, cpu):
    return (tmp_path / f"cpu{cpu}" / "request").read_text().strip()


def test_poll_engine_holds_the_engines_cores_alone_and_puts_them_back(cores):
    import json

    from stackbench.upkeep import core_qos, leftovers

    with idle.held("poll-engine", [1], qos_file=str(cores / "no-qos")) as state:
        assert request(cores, 1) == "n/a" and request(cores, 0) == "0", "the server's core as it was"
        assert state.engine_polled and not state.polled
        assert state.why.startswith("the load engine's cores [1] polled, never halted, during the run")
        ledger = json.loads(core_qos.LEDGER.read_text())  # written before anything changed
        assert ledger["before"] == {"1": "0"} and ledger["pid"] == leftovers.me().pid
        assert core_qos.LEDGER.stat().st_mode & 0o777 == 0o600 and core_qos.LEDGER.parent.stat().st_mode & 0o777 == 0o700
    assert request(cores, 1) == "0" and not core_qos.LEDGER.exists()


def test_poll_engine_lets_the_runs_own_error_through_and_still_puts_back(cores):
    with pytest.raises(KeyboardInterrupt):
        with idle.held("poll-engine", [1], qos_file=str(cores / "no-qos")):
            raise KeyboardInterrupt
    with pytest.raises(OSError, match="the run's"):
        with idle.held("poll-engine", [1], qos_file=str(cores / "no-qos")):
            raise OSError("the run's")  # not turned into the hold's error
    assert request(cores, 1) == "0"


def test_poll_engine_never_overwrites_a_ledger_nor_holds_shared_or_no_cores(cores):
    from stackbench.upkeep import core_qos

    core_qos.LEDGER.parent.mkdir(mode=0o700)
    core_qos.LEDGER.write_text('{"pid": 1, "start": 1, "before": {"1": "0"}}')
    with pytest.raises(UsageError) as e:
        with idle.held("poll-engine", [1]):
            pass
    assert "still recorded" in e.value.message and "stackbench clean" in e.value.hint
    assert request(cores, 1) == "0", "nothing changed"
    core_qos.LEDGER.unlink()
    with pytest.raises(UsageError, match="cores of its own"):
        with idle.held("poll-engine", []):  # the session passes none when engine and server share cores
            pass
    with pytest.raises(UsageError, match="other hosts"):
        idle.require("poll-engine", engine_here=False)


def test_auto_holds_the_engines_cores_where_it_can_and_otherwise_runs_as_is_and_says_why(cores, monkeypatch):
    from stackbench.upkeep import core_qos

    with idle.held("auto", [1], qos_file=str(cores / "no-qos")) as state:
        assert request(cores, 1) == "n/a" and request(cores, 0) == "0", "the server's core as it was"
        assert state.asked == "auto" and state.engine_polled and not state.polled
        assert state.why.startswith("the load engine's cores [1] polled, never halted, during the run "
                                    "(cpu_idle = \"auto\"")
    assert request(cores, 1) == "0" and not core_qos.LEDGER.exists()
    with pytest.raises(OSError, match="the run's"):  # the run's own error is not taken for the hold's
        with idle.held("auto", [1], qos_file=str(cores / "no-qos")):
            raise OSError("the run's")
    assert request(cores, 1) == "0"

    def as_is_because(engine_cpus):
        with idle.held("auto", engine_cpus, qos_file=str(cores / "no-qos")) as state:
            assert request(cores, 1) == "0" and not state.engine_polled and state.asked == "auto"
            assert "; the load engine's cores were not held polling (cpu_idle = \"auto\"): " in state.why
            return state.why

    assert "that needs the load engine on cores of its own" in as_is_because([])  # shared cores, or load elsewhere
    core_qos.LEDGER.parent.mkdir(mode=0o700, exist_ok=True)  # made by the first hold
    core_qos.LEDGER.write_text('{"pid": 1, "start": 1, "before": {"1": "0"}}')
    assert "a previous hold of idle cores is still recorded" in as_is_because([1])
    assert core_qos.LEDGER.exists(), "someone else's ledger left alone"
    core_qos.LEDGER.unlink()
    monkeypatch.setattr(core_qos, "CORE_REQUEST", str(cores / "cpu{}" / "missing"))  # no such sysfs file, or no root
    assert "that needs " in as_is_because([1]) and "No such file" in as_is_because([1])
    assert not core_qos.LEDGER.exists(), "nothing held, nothing recorded"
    idle.require("auto", engine_here=False)  # never refuses: it runs as-is instead


def test_engine_cores_another_process_holds_are_recorded_as_held(cores):
    """bench/hold-idle, or a hand's `echo n/a`: the run says so, whatever it asked."""
    (cores / "cpu1" / "request").write_text("n/a\n")
    for asked in ("as-is", "auto"):  # auto: our own hold is refused (ledger), or finds them held already
        if asked == "auto":
            from stackbench.upkeep import core_qos

            core_qos.LEDGER.parent.mkdir(mode=0o700, exist_ok=True)
            core_qos.LEDGER.write_text('{"pid": 1, "start": 1, "before": {"1": "0"}}')
        with idle.held(asked, [1], qos_file=str(cores / "no-qos")) as state:
            assert state.engine_polled and "held so by another process" in state.why, state.why
    assert request(cores, 1) == "n/a", "not ours to put back"


def test_an_interrupted_or_failed_hold_puts_back_what_it_wrote_or_says_it_could_not(cores, monkeypatch):
    from stackbench.upkeep import core_qos

    (cores / "cpu0" / "request").write_text("0\n")
    writes = []

    def interrupted(cpu, value):  # Ctrl-C after the first core's write
        writes.append((cpu, value))
        if len(writes) == 2:
            raise KeyboardInterrupt
        (cores / f"cpu{cpu}" / "request").write_text(value + "\n")

    monkeypatch.setattr(core_qos, "_write", interrupted)
    with pytest.raises(KeyboardInterrupt):
        with core_qos.polling([0, 1], (1, 1)):
            pass
    assert request(cores, 0) == "0" and not core_qos.LEDGER.exists(), "put back, ledger gone"

    def broken(cpu, value):  # the second core refuses, and so does putting the first back
        if cpu == 1 or value != "n/a":
            raise OSError(5, "Input/output error")
        (cores / f"cpu{cpu}" / "request").write_text(value + "\n")

    monkeypatch.setattr(core_qos, "_write", broken)
    with pytest.raises(core_qos.NotPutBack, match="could not all be held polling nor put back"):
        with idle.held("auto", [0, 1], qos_file=str(cores / "no-qos")):  # not a reason to go on as-is
            pass
    assert core_qos.LEDGER.exists(), "kept for `stackbench clean`"


def test_auto_says_no_root_before_anything_about_the_ledger(cores, monkeypatch):
    from stackbench.upkeep import core_qos

    monkeypatch.setattr(core_qos, "writable", lambda cpu: PermissionError(13, "Permission denied", "/sys/x"))
    with idle.held("auto", [1], qos_file=str(cores / "no-qos")) as state:
        assert not state.engine_polled and "that needs /sys/x: Permission denied" in state.why


def test_the_dry_run_of_auto_says_when_the_engine_is_not_here_to_hold():
    from stackbench.report.text import dry_run

    assert dry_run.idle_line("auto", engine_here=False).startswith("idle cores: as the system has them")
    assert "held polling, never halted" in dry_run.idle_line("auto")


def test_a_core_that_cannot_be_put_back_keeps_the_ledger_and_says_so(cores, monkeypatch):
    from stackbench.upkeep import core_qos

    real = core_qos._write

    def failing(cpu, value):
        if value != "n/a":
            raise PermissionError(13, "Permission denied")
        real(cpu, value)

    monkeypatch.setattr(core_qos, "_write", failing)
    with pytest.raises(core_qos.NotPutBack) as e:
        with core_qos.polling([0, 1], (1, 1)):
            pass
    assert "cores [0, 1] are still held polling" in e.value.message and "stackbench clean" in e.value.hint
    assert core_qos.LEDGER.exists(), "the values stay for the sweep"


def test_a_dead_labs_held_cores_are_put_back_by_the_sweep_and_nothing_else(cores):
    import json

    from stackbench.upkeep import core_qos, leftovers

    assert leftovers.stale_idle_cores in leftovers.FINDERS  # in the table, not registered on import
    core_qos.LEDGER.parent.mkdir(mode=0o700)
    (cores / "cpu0" / "request").write_text("n/a")
    (cores / "cpu1" / "request").write_text("25")  # set otherwise since: the admin's now
    core_qos.LEDGER.write_text(json.dumps({"pid": 2 ** 22 - 1, "start": 1, "before": {"0": "0", "1": "0"}}))
    (found,) = leftovers.stale_idle_cores()
    assert found.what == "cores 0, 1 held polling" and "gone" in found.why
    found.remove()
    assert request(cores, 0) == "0" and request(cores, 1) == "25" and not core_qos.LEDGER.exists()
    mine = leftovers.me()  # a live lab's ledger is left alone
    core_qos.LEDGER.write_text(json.dumps({"pid": mine.pid, "start": mine.start, "before": {"0": "0"}}))
    assert list(leftovers.stale_idle_cores()) == []
    for bad in ('{"pid": 1, "start": 1, "before": {"0": "/etc/x"}}', '{"pid": 1, "start": 1, "before": {"0": 0}}',
                '{"pid": 1, "start": 1, "template": "/etc/cron.d/x{}", "before": {"x": "0"}}', "not json"):
        core_qos.LEDGER.write_text(bad)
        (left,) = leftovers.stale_idle_cores()
        assert left.remove is None and "not the lab's" in left.why, bad  # reported, never acted on
    core_qos.LEDGER.unlink()
    core_qos.LEDGER.symlink_to(cores / "cpu0" / "request")  # a planted link is not a ledger
    (left,) = leftovers.stale_idle_cores()
    assert left.remove is None


def test_poll_engine_that_cannot_be_had_is_refused_before_anything_starts(monkeypatch, tmp_path):
    from stackbench.upkeep import core_qos

    monkeypatch.setattr(core_qos, "CORE_REQUEST", str(tmp_path / "cpu{}" / "missing"))
    with pytest.raises(UsageError) as e:
        idle.require("poll-engine")
    assert "cpu_idle = \"poll-engine\" needs" in e.value.message and "has no" in e.value.hint


@pytest.mark.servers  # it changes a core's idle states for a moment: never beside a measurement
@pytest.mark.skipif(not os.access("/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us", os.W_OK),
                    reason="needs root, two cores and per-core PM QoS (CI has them)")
def test_the_real_engine_core_request_is_held_and_put_back():
    from stackbench.upkeep import core_qos, lock

    held = lock.RunLock()
    try:
        held.acquire()  # no lab may start measuring while a core is changed
    except UsageError as e:
        pytest.skip(e.message)
    engine, server = core_qos.CORE_REQUEST.format(1), core_qos.CORE_REQUEST.format(0)
    before = {p: open(p).read().strip() for p in (engine, server)}
    try:
        with idle.held("poll-engine", [1]) as state:
            assert state.engine_polled and open(engine).read().strip() == "n/a"
            assert open(server).read().strip() == before[server], "the server's core as the system has it"
    finally:
        held.release()
    assert {p: open(p).read().strip() for p in (engine, server)} == before and not core_qos.LEDGER.exists()


@pytest.mark.servers
@pytest.mark.skipif(not os.access("/sys/devices/system/cpu/cpu1/power/pm_qos_resume_latency_us", os.W_OK),
                    reason="needs root, two cores and per-core PM QoS (CI has them)")
def test_a_killed_poll_engine_run_leaves_its_core_held_until_the_next_sweep_puts_it_back(workdir):
    import signal
    import subprocess
    import sys
    import time

    from conftest import require_stack
    from stackbench.upkeep import core_qos

    require_stack("nginx-fpm")
    core = core_qos.CORE_REQUEST.format(1)
    before = open(core).read().strip()
    proc, _ = start_run(workdir, "poll-engine")
    deadline = time.monotonic() + 60
    while open(core).read().strip() != "n/a" and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None and open(core).read().strip() == "n/a", proc.communicate()
    proc.send_signal(signal.SIGKILL)  # an ending the lab cannot see
    proc.communicate(timeout=30)
    assert open(core).read().strip() == "n/a" and core_qos.LEDGER.exists(), "a setting outlives its lab"
    cleaned = subprocess.run([sys.executable, "-m", "stackbench", "clean"], capture_output=True, text=True)
    assert "removed idle-core request cores 1 held polling" in cleaned.stdout + cleaned.stderr, cleaned
    assert open(core).read().strip() == before and not core_qos.LEDGER.exists()
