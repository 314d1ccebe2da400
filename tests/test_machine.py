"""Machine profiles (unit): the plan key, the checks against this machine, the cores,
reading the memory limit's events from cgroup files (v1 and v2 layouts written to a
temporary directory as the kernel shows them), the caveats and the store round trip."""

from __future__ import annotations

import io
import json
import tomllib

import jsonschema
import pytest

from stackbench import caveats
from stackbench.planning import machine, plan as plan_mod
from stackbench.errors import PlanError
from stackbench.model.cost import MemoryEvents
from stackbench.monitor import machine_cgroup, memory_events
from stackbench.model.cell import StoredCell
from stackbench.model.environment import MachineShape
from stackbench.model.cost import StoredCost
from stackbench.monitor.session import StackMonitor
from stackbench.upkeep.pinning import Pinning
from stackbench.report import export
from stackbench.report.html.reproduce import environment_rows
from stackbench.analysis.run import analyze
from stackbench.report.text import run_report
from stackbench.report.words.caveats import sentence
from stackbench.states import CellStatus
from stackbench.store import Store

MiB = 2**20

STACKS = """
workloads = ["php-hello"]
[[stacks]]
id = "apache-prefork-modphp"
"""


def parse(machine_line: str) -> plan_mod.Plan:
    return plan_mod.parse(tomllib.loads(machine_line + "\n" + STACKS), "vps.toml")


@pytest.mark.parametrize("line,cpus,memory", [
    ('machine = { cpus = 1, memory = "512M" }', 1, 512 * MiB),
    ('machine = { memory = "1G" }', None, 1024 * MiB),
    ('machine = { memory = "1.5G" }', None, 1536 * MiB),
    ('machine = { memory = "64MiB" }', None, 64 * MiB),
    ('machine = { memory = "512MB" }', None, 512 * MiB),  # a VPS sold as 512 MB has 512 MiB
    ('machine = { memory = "65536k" }', None, 64 * MiB),
    ("machine = { memory = 536870912 }", None, 512 * MiB),
    ("machine = { cpus = 2 }", 2, None),
    ("machine = { cpus = 0.5 }", 0.5, None),
    ("machine = { cpus = 0.25 }", 0.25, None),
    ('machine = { cpus = 1.5, memory = "1G" }', 1.5, 1024 * MiB),
    ("machine = { cpus = 0.05 }", 0.05, None),  # the floor
    ("machine = { cpus = 1.0 }", 1, None),  # a whole float is whole cores: no quota
])
def test_machine_key(line, cpus, memory):
    profile = parse(line).machine
    assert (profile.cpus, profile.memory_bytes) == (cpus, memory)


def test_no_machine_key_is_the_lab_machine():
    assert parse("").machine is None


@pytest.mark.parametrize("line,message", [
    ('machine = { memory = "512 potatoes" }', "machine.memory: not a size: '512 potatoes'"),
    ('machine = { memory = "512" }', "machine.memory must be at least 16 MiB (a size without a unit is bytes)"),
    ('machine = { memory = "12M" }', "machine.memory must be at least 16 MiB"),
    ("machine = { memory = true }", "machine.memory: not a size: True"),
    ('machine = { memory = "-1G" }', "machine.memory: not a size: '-1G'"),
    ("machine = { cpus = 0 }", "machine.cpus must be more than 0 (a machine with no CPU runs nothing), not 0"),
    ("machine = { cpus = 0.0 }", "machine.cpus must be more than 0"),
    ("machine = { cpus = -2 }", "machine.cpus must be more than 0 (a machine with no CPU runs nothing), not -2"),
    ("machine = { cpus = -0.5 }", "machine.cpus must be more than 0"),
    ("machine = { cpus = 0.01 }", "machine.cpus = 0.01 is below the smallest share emulated, 0.05 "
                                  "(5 ms of CPU time in every 100 ms)"),
    ('machine = { cpus = "1" }', "machine.cpus must be a number of CPUs (1, 2, or a share of a core such as 0.5), "
                                 "not '1'"),
    ('machine = { cpus = "0.5" }', "machine.cpus must be a number of CPUs"),
    ("machine = { cpus = true }", "machine.cpus must be a number of CPUs (1, 2, or a share of a core such as 0.5), "
                                  "not True"),
    ("machine = { cpus = nan }", "machine.cpus must be a number of CPUs"),
    ("machine = { cpus = inf }", "machine.cpus must be a number of CPUs"),
    ("machine = { cpus = 99999 }", "machine.cpus must be at most 4096, not 99999"),
    ('machine = { mem = "512M" }', "unknown key machine.'mem' (did you mean 'memory'?)"),
    ('machine = { cpu = 1 }', "unknown key machine.'cpu' (did you mean 'cpus'?)"),
    ('machine = { disk = "10G" }', "unknown key machine.'disk'"),
    ('machine = "small"', "machine must be a table, e.g. machine = { cpus = 1, memory = \"512M\" }"),
    ("machine = {}", "machine needs cpus or memory"),
    ('machnie = { cpus = 1 }', "unknown key 'machnie' (did you mean 'machine'?)"),
])
def test_bad_machine_key_is_one_clear_line(line, message):
    with pytest.raises(PlanError) as e:
        parse(line)
    assert message in e.value.message
    assert e.value.message.startswith("vps.toml: ") and "\n" not in e.value.message


def test_this_machine_must_leave_the_engine_a_core_and_have_the_memory():
    two_cores, gib = [0, 1], 2**30
    machine.check(machine.MachineProfile(1, 512 * MiB), "p", two_cores, 24 * gib)  # the VPS: fits
    machine.check(machine.MachineProfile(1, None), "p", [0], None)  # one core: shared, as always there
    machine.check(machine.MachineProfile(3, None), "p", [0, 1, 2, 3], None)
    with pytest.raises(PlanError, match="machine.cpus = 2 leaves no core for the load engine: this machine has 2"):
        machine.check(machine.MachineProfile(2, None), "p", two_cores, None)
    with pytest.raises(PlanError, match="machine.memory = 32 GiB is not below this machine's 24 GiB"):
        machine.check(machine.MachineProfile(None, 32 * gib), "p", two_cores, 24 * gib)


def test_a_fractional_cpu_takes_its_whole_cores_and_must_leave_the_engine_one():
    two_cores = [0, 1]
    machine.check(machine.MachineProfile(0.5, None), "p", two_cores, None)  # 1 core, half its time
    machine.check(machine.MachineProfile(2.5, None), "p", [0, 1, 2, 3], None)  # 3 cores of 4
    with pytest.raises(PlanError) as e:
        machine.check(machine.MachineProfile(1.5, None), "p", two_cores, None)
    assert e.value.message == ("p: machine.cpus = 1.5 (a quota over 2 cores) leaves no core for the load engine: "
                               "this machine has 2 (the engine measuring on the stack's cores would take from its "
                               "budget)")
    assert e.value.hint == "at most cpus = 1 here"
    with pytest.raises(PlanError, match="machine.cpus = 3.5 .a quota over 4 cores. leaves no core"):
        machine.check(machine.MachineProfile(3.5, None), "p", [0, 1, 2, 3], None)


@pytest.mark.parametrize("cpus,cores,period,quota,words", [
    (0.5, 1, 100_000, 50_000, "0.5 CPU (a 50 ms in 100 ms quota on 1 core)"),
    (0.25, 1, 100_000, 25_000, "0.25 CPU (a 25 ms in 100 ms quota on 1 core)"),
    (1.5, 2, 100_000, 150_000, "1.5 CPUs (a 150 ms in 100 ms quota on 2 cores)"),
    (0.05, 1, 100_000, 5_000, "0.05 CPU (a 5 ms in 100 ms quota on 1 core)"),
    (0.333, 1, 100_000, 33_300, "0.333 CPU (a 33.3 ms in 100 ms quota on 1 core)"),
])
def test_a_fractional_cpu_is_a_quota_on_its_whole_cores(cpus, cores, period, quota, words):
    profile = machine.MachineProfile(cpus, None)
    assert profile.cores == cores
    assert profile.cpu_quota == machine.CpuQuota(period, quota)
    assert profile.describe() == words


def test_whole_cpus_are_cores_without_a_quota():
    for cpus, words in ((1, "1 CPU"), (2, "2 CPUs")):
        profile = machine.MachineProfile(cpus, None)
        assert (profile.cores, profile.cpu_quota, profile.describe()) == (cpus, None, words)
    assert machine.MachineProfile(None, 64 * MiB).cores is None


def test_the_environment_records_the_quota_written():
    assert machine.MachineProfile(0.5, 512 * MiB).recorded([0]) == {
        "cpus": 0.5, "memory_bytes": 512 * MiB, "cpu_period_us": 100_000, "cpu_quota_us": 50_000, "server_cpus": [0]}
    assert machine.MachineProfile(1, 512 * MiB).recorded([0]) == {
        "cpus": 1, "memory_bytes": 512 * MiB, "server_cpus": [0]}  # as before fractional CPUs


@pytest.mark.parametrize("cpus,usual,available,expected", [
    (1, Pinning([0], [1]), [0, 1], Pinning([0], [1])),  # this machine: the stack keeps core 0
    (1, Pinning([0, 1], [2, 3]), [0, 1, 2, 3], Pinning([0], [2, 3])),  # the engine keeps its cores
    (3, Pinning([0, 1], [2, 3]), [0, 1, 2, 3], Pinning([0, 1, 2], [3])),
    (1, Pinning([0], [0]), [0], Pinning([0], [0])),  # one core: shared
])
def test_the_profile_takes_its_cores_from_the_servers_half(cpus, usual, available, expected):
    assert machine.pinning(machine.MachineProfile(cpus, None), usual, available) == expected


@pytest.mark.parametrize("cpus,usual,available,expected", [
    (0.5, Pinning([0], [1]), [0, 1], Pinning([0], [1], server_cpu_quota=0.5)),
    (0.5, Pinning([0, 1], [2, 3]), [0, 1, 2, 3], Pinning([0], [2, 3], server_cpu_quota=0.5)),
    (1.5, Pinning([0, 1], [2, 3]), [0, 1, 2, 3], Pinning([0, 1], [2, 3], server_cpu_quota=1.5)),
    (2.5, Pinning([0, 1], [2, 3]), [0, 1, 2, 3], Pinning([0, 1, 2], [3], server_cpu_quota=2.5)),
    (0.5, Pinning([0], [0]), [0], Pinning([0], [0], server_cpu_quota=0.5)),  # one core: shared
])
def test_a_fractional_cpu_is_pinned_to_its_whole_cores_with_its_quota(cpus, usual, available, expected):
    pins = machine.pinning(machine.MachineProfile(cpus, None), usual, available)
    assert pins == expected
    assert pins.server_capacity == cpus
    assert Pinning.from_dict(pins.as_dict()) == pins  # as a cell stores it


def test_the_busy_share_is_of_the_quota_not_the_core():
    from dataclasses import replace
    from stackbench.analysis import outcomes

    half = record(0, StoredCost(cpu_total_us=480_000, window_us=1_000_000))  # 0.48 s of CPU a second on core 0
    assert outcomes.server_busy(half) == pytest.approx(0.48)  # a whole core: half busy
    quota = replace(half, pinning=Pinning([0], [1], server_cpu_quota=0.5))
    assert outcomes.server_busy(quota) == pytest.approx(0.96)  # 0.5 CPU: at its limit
    assert "server_cpu_quota" not in Pinning([0], [1]).as_dict()  # records without a quota are as before


def test_without_cpus_the_pinning_is_unchanged():
    usual = Pinning([0, 1], [2, 3])
    assert machine.pinning(None, usual, [0, 1, 2, 3]) is usual
    assert machine.pinning(machine.MachineProfile(None, 64 * MiB), usual, [0, 1, 2, 3]) is usual


def test_oom_reason_names_the_killer_and_the_limit():
    vps = machine.MachineProfile(1, 512 * MiB)
    assert machine.oom_reason(3, vps) == "3 processes OOM-killed under the 512 MiB limit"
    assert machine.oom_reason(1, vps) == "1 process OOM-killed under the 512 MiB limit"
    assert machine.oom_reason(0, vps) is None
    assert machine.oom_reason(2, machine.MachineProfile(1, None)) is None  # no limit, no claim
    assert machine.oom_reason(2, None) is None


# -- reading the events ---------------------------------------------------------------

def write(path, files: dict[str, str]) -> None:
    path.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (path / name).write_text(text)


def v1_machine(tmp_path, *, failcnt=0, parent_kills=0, stack_kills=0, services_kills=0, under_oom=0,
               refault_file=0, some_us=0):
    """A v1 machine cgroup as this kernel lays it out: the limit's counters on the
    machine, OOM kills on the cgroup of the process killed, PSI in the v2 tree."""
    mem, unified = tmp_path / "memory", tmp_path / "unified"
    oom = "oom_kill_disable 0\nunder_oom {}\noom_kill {}\n"
    write(mem, {"memory.failcnt": f"{failcnt}\n", "memory.memsw.failcnt": "0\n",
                "memory.oom_control": oom.format(under_oom, parent_kills),
                "memory.stat": f"cache 0\nrss 0\ntotal_workingset_refault_anon 0\n"
                               f"total_workingset_refault_file {refault_file}\ntotal_pgmajfault 5\n"})
    write(mem / "stack", {"memory.oom_control": oom.format(0, stack_kills)})
    write(mem / "stack-services", {"memory.oom_control": oom.format(0, services_kills)})
    write(unified, {"memory.pressure": f"some avg10=0.00 avg60=0.00 avg300=0.00 total={some_us}\n"
                                       f"full avg10=0.00 avg60=0.00 avg300=0.00 total={some_us // 2}\n"})
    return mem, unified


def test_v1_oom_kills_are_summed_over_the_machine_and_its_children(tmp_path):
    mem, unified = v1_machine(tmp_path, failcnt=889, stack_kills=2, services_kills=1, under_oom=1,
                              refault_file=532, some_us=5602)
    c = memory_events.read(mem, unified)
    assert (c.limit_hits, c.oom_kills, c.under_oom, c.refaults, c.pgmajfault) == (889, 3, True, 532, 5)
    assert (c.pressure_some_us, c.pressure_full_us) == (5602, 2801)
    assert (c.ooms, c.pgscan, c.pgsteal) == (None, None, None)  # v1 does not report them


def test_v2_reads_memory_events_stat_and_pressure(tmp_path):
    cg = tmp_path / "machine"
    write(cg, {"memory.events": "low 0\nhigh 0\nmax 41\noom 2\noom_kill 3\noom_group_kill 0\n",
               "memory.stat": "anon 1\npgscan 900\npgsteal 850\nworkingset_refault_anon 7\n"
                              "workingset_refault_file 13\npgmajfault 4\n",
               "memory.pressure": "some avg10=1.00 avg60=0.50 avg300=0.10 total=1200\n"
                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=300\n"})
    c = memory_events.read(cg)
    assert (c.limit_hits, c.ooms, c.oom_kills, c.pgscan, c.pgsteal, c.refaults) == (41, 2, 3, 900, 850, 20)
    assert (c.pressure_some_us, c.pressure_full_us, c.under_oom) == (1200, 300, None)


def test_a_kernel_without_the_files_reads_as_not_reported(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    c = memory_events.read(empty)
    assert c == memory_events.MemoryCounters()
    assert memory_events.read(None) == memory_events.MemoryCounters()


def test_a_cell_stores_the_differences_and_the_kills_before_its_window(tmp_path):
    start = memory_events.MemoryCounters(limit_hits=10, oom_kills=1, pressure_some_us=100, refaults=5)
    end = memory_events.MemoryCounters(limit_hits=250, oom_kills=4, pressure_some_us=900, refaults=5,
                                       under_oom=False)
    last_cell_end = memory_events.MemoryCounters(limit_hits=3, oom_kills=0)
    d = memory_events.difference(start, end, limit_bytes=512 * MiB, previous=last_cell_end, peak_bytes=500 * MiB)
    assert (d.limit_hits, d.oom_kills, d.pressure_some_us, d.refaults) == (240, 3, 800, 0)
    assert d.oom_kills_before == 1  # during the warm-up, after the last cell
    assert (d.limit_bytes, d.peak_bytes, d.under_oom) == (512 * MiB, 500 * MiB, False)
    assert d.pgscan is None  # not reported is None, never 0
    assert d.total_kills == 4
    # the first cell of a start: every kill since the machine started counts as before
    first = memory_events.difference(start, end, limit_bytes=512 * MiB)
    assert first.oom_kills_before == 1


class _NoFiles:
    """A cgroup with no controller directories: nothing to read besides the counters."""

    def path(self, controller):
        return None

    def pids(self):
        return []


class _CountersInTurn:
    """A machine cgroup whose memory counters are these readings, one per read."""

    profile = machine.MachineProfile(1, 512 * MiB)
    cgroup = _NoFiles()

    def __init__(self, *oom_kills):
        self.readings = [memory_events.MemoryCounters(oom_kills=n) for n in oom_kills]

    def read(self):
        return self.readings.pop(0)


def test_kills_during_the_system_call_pass_are_the_cells_not_the_next_ones():
    from types import SimpleNamespace
    # readings: cell 1 begins (0), ends (1), its system-call pass ends (3); cell 2 (3, 3)
    monitor = StackMonitor(None, machine=_CountersInTurn(0, 1, 3, 3, 3))
    monitor.begin_cell()
    readings = monitor.end_cell()
    monitor.end_profile(readings, SimpleNamespace(started_unix_us=0, ended_unix_us=1))
    first = readings.cost.memory_events
    monitor.begin_cell()
    second = monitor.end_cell().cost.memory_events
    assert (first.oom_kills, first.oom_kills_profile) == (1, 2) and readings.cost.oom_kills == 1
    assert first.total_kills == 3
    assert second.oom_kills_before == 0 and second.total_kills == 0
    said = sentence(caveats.memory_limit(first.as_dict())[0])
    assert "1 process during the measured window and 2 processes after it (the system-call pass)" in said


def test_an_agent_there_sends_the_system_call_pass_kills_back():
    from types import SimpleNamespace
    from stackbench.hosts.agent import Agent
    from stackbench.hosts.server import RemoteMonitor

    agent = Agent()
    agent.monitors[1] = StackMonitor(None, machine=_CountersInTurn(0, 0, 2))

    class Link:  # the agent's answers as they cross: JSON
        def call(self, op, **kw):
            return json.loads(json.dumps(getattr(agent, f"op_{op}")(**kw)))

    here = RemoteMonitor(SimpleNamespace(sid=1, session=SimpleNamespace(link=Link(), offset=None)))
    here.begin_cell()
    readings = here.end_cell()
    assert readings.cost.memory_events.total_kills == 0
    here.end_profile(readings, SimpleNamespace(started_unix_us=0, ended_unix_us=1, requests_per_s=None,
                                               requests=SimpleNamespace(completed=0)))
    events = readings.cost.memory_events
    assert events.oom_kills_profile == 2 and events.total_kills == 2


# -- caveats, store, tables -------------------------------------------------------------

def events(**kw):
    base = {"limit_bytes": 512 * MiB, "limit_hits": 0, "oom_kills": 0, "oom_kills_before": 0,
            "pressure_some_us": 0}
    return base | kw


def test_caveats_name_oom_kills_then_limit_hits_and_never_gate_a_run():
    assert caveats.memory_limit(None) == []
    assert caveats.memory_limit(events()) == []
    killed = caveats.memory_limit(events(oom_kills=3, limit_hits=900))
    assert [c.code for c in killed] == ["oom_killed"] and killed[0].params["count"] == 3
    assert "3 processes during the measured window under the 512 MiB machine limit" in sentence(killed[0])
    early = caveats.memory_limit(events(oom_kills_before=2))
    assert "2 processes before the measured window (stack start, warm-up)" in sentence(early[0])
    hits = caveats.memory_limit(events(limit_hits=1234, pressure_some_us=35_000))
    assert [c.code for c in hits] == ["memory_limit"]
    assert sentence(hits[0]) == ("the stack reached the 512 MiB machine limit 1,234 times: the kernel reclaimed "
                                 "memory (page cache) to stay under it, and its processes waited 35 ms for memory")
    assert not any(caveats.invalidates(c) for c in killed + hits)


def record(seq: int, cost: StoredCost, status=CellStatus.OK, error=None, found=(), repetition=0) -> StoredCell:
    from stackbench.engine import EngineResult

    doc = {"schema_version": 1, "started_unix_us": 1, "duration_us": 1_000_000, "requests_per_s": 900.0,
           "requests": {"completed": 900, "ok_2xx": 880, "non_2xx": 0, "failed": 20},
           "latency_us": {"mean": 10.0, "percentiles": {"50": 9, "99": 20}}, "warnings": [], "warning_codes": []}
    return StoredCell(id=0, run_id=0, seq=seq, repetition=repetition, stack_id="apache-prefork-modphp",
                      stack_label="prefork", knobs={}, workload="php-hello", concurrency=256, keepalive=True,
                      status=status, error=error, config_hash=None, versions={},
                      pinning=Pinning([0], [1]),
                      engine=EngineResult.from_doc(doc), cost=cost, caveats=tuple(found))


def test_the_store_keeps_memory_events_and_oom_kills():
    store = Store()
    env = {"cpu_count": 2, "pinning": {"server_cpus": [0], "engine_cpus": [1]},
           "machine_profile": {"cpus": 1, "memory_bytes": 512 * MiB, "server_cpus": [0]}}
    run_id = store.begin_run("vps", "vps.toml", {}, {}, env)
    ev = events(oom_kills=3, limit_hits=900)
    store.record_cell(run_id, record(0, StoredCost(memory_events=MemoryEvents.from_dict(ev), oom_kills=3),
                                     CellStatus.FAILED,
                                     "apache2 exited with status -9 during the load (3 processes OOM-killed "
                                     "under the 512 MiB limit)", caveats.memory_limit(ev)))
    store.record_cell(run_id, record(1, StoredCost()))  # no limit read: NULL, not 0
    killed, plain = store.cells(run_id)
    assert killed.cost.memory_events == MemoryEvents.from_dict(ev) and killed.cost.oom_kills == 3
    assert (plain.cost.memory_events, plain.cost.oom_kills) == (None, None)

    out = io.StringIO()
    run_report.render(analyze(store.run(run_id), store.cells(run_id)), out)
    text = out.getvalue()
    assert "machine profile: 1 CPU, 512 MiB memory (stack and its services together, no swap); the stack on " \
           "cores [0]" in text
    assert "OOM kills" in text and "3 processes OOM-killed under the 512 MiB limit" in text
    assert "the OOM killer took 3 processes during the measured window" in " ".join(text.split())
    rows = dict(environment_rows(store.run(run_id).environment))
    assert rows["machine profile (emulated)"].startswith("1 CPU, 512 MiB memory")

    doc = export.document(analyze(store.run(run_id), store.cells(run_id)))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    assert [(c["oom_kills"], c["memory_limit_bytes"]) for c in doc["cells"]] == [(3, 512 * MiB), (None, None)]


def test_the_summary_adds_oom_kills_over_every_repetition():
    from stackbench.analysis import summary

    store = Store()
    run_id = store.begin_run("vps", "vps.toml", {}, {}, {})
    for rep, kills in enumerate((2, 0, 1)):
        events_in = MemoryEvents.from_dict(events(oom_kills=kills))
        store.record_cell(run_id, record(rep, StoredCost(memory_events=events_in, oom_kills=kills), repetition=rep))
    (row,) = summary.summarize(store.cells(run_id))
    assert row.oom_kills == 3


def test_dry_run_names_the_machine():
    from stackbench.report.text import dry_run

    line = dry_run.machine_line(machine.MachineProfile(1, 512 * MiB), Pinning([0], [1]))
    assert line.startswith("machine: 1 CPU, 512 MiB memory") and "the stack on cores [0]" in line


# -- the runner: an OOM-killed stack is a result, not a failure of the lab --------------

from test_runner_order import PLAN, lab, run  # noqa: E402,F401  (the fake Lab of the lifecycle tests)


class FakeMachine:
    """A machine profile's cgroup whose OOM killer took two processes of the stack."""

    profile = machine.MachineProfile(1, 512 * MiB)

    def since_start(self):
        return MemoryEvents.from_dict(events(oom_kills=2, limit_hits=300))


def test_a_server_the_oom_killer_took_is_a_stored_result_and_the_run_completes(lab, monkeypatch):
    log, state, fake = lab
    # Whether this machine's cgroups could take the limit is not the question here (no
    # cgroup is made: the stacks are fakes), so the test runs without root too.
    monkeypatch.setattr(machine_cgroup, "unavailable_reason", lambda profile: None)
    state["die_on_cell"] = 0  # nginx-fpm's server dies during its first cell ...
    make = fake.instance

    def with_machine(*args, **kwargs):
        inst = make(*args, **kwargs)
        if "machine" in kwargs:  # a stack start (not the preflight's config check)
            assert kwargs["machine"] == machine.MachineProfile(1, 512 * MiB)  # the plan's profile reaches it
            inst.machine_cgroup = FakeMachine()  # ... killed by the OOM killer
        return inst

    fake.instance = with_machine
    store = Store()
    outcome = run(store, fake, 'machine = { cpus = 1, memory = "512M" }\n' + PLAN)
    assert outcome.status == "complete" and outcome.errors == []  # the lab did not fail: the stack did
    cells = store.cells(outcome.run_id)
    assert [(c.stack_label, c.status) for c in cells] == [
        ("nginx-fpm", "failed"), ("nginx-fpm", "failed"),
        ("apache-prefork-modphp", "ok"), ("apache-prefork-modphp", "ok")]  # the plan went on
    assert cells[1].error == "fake exited (2 processes OOM-killed under the 512 MiB limit)"
    run_row = store.run(outcome.run_id)
    assert run_row.environment.machine_profile == MachineShape(1, 512 * MiB, [0])
    checked = json.loads(store.db.execute("SELECT plan_checked_json FROM runs").fetchone()[0])
    assert checked["machine"] == {"cpus": 1, "memory_bytes": 512 * MiB}


# -- fractional CPUs: recorded, shown, and refused where no cpu controller is --------------

def test_a_fractional_machine_is_stored_and_shown_as_a_quota():
    from stackbench.analysis import axes
    from stackbench.report.text import dry_run

    store = Store()
    half = machine.MachineProfile(0.5, 512 * MiB)
    env = {"cpu_count": 2, "pinning": Pinning([0], [1], server_cpu_quota=0.5).as_dict(),
           "machine_profile": half.recorded([0])}
    run_id = store.begin_run("vps", "vps.toml", {}, {}, env)
    store.record_cell(run_id, record(0, StoredCost()))
    shape = store.run(run_id).environment.machine_profile
    assert shape == MachineShape(0.5, 512 * MiB, [0], 100_000, 50_000)
    words = "0.5 CPU (a 50 ms in 100 ms quota on 1 core), 512 MiB memory (stack and its services together, no swap)"
    out = io.StringIO()
    run_report.render(analyze(store.run(run_id), store.cells(run_id)), out)
    assert f"machine profile: {words}; the stack on cores [0]" in out.getvalue()
    assert dict(environment_rows(store.run(run_id).environment))["machine profile (emulated)"].startswith(words)
    assert axes.size_words(shape) == "0.5 CPU, 512 MiB"
    assert axes.size_words(MachineShape(1.5, None)) == "1.5 CPUs"
    assert dry_run.machine_line(half, Pinning([0], [1])).startswith(f"machine: {words}; the stack on cores [0]")
    assert store.run(run_id).environment.pinning.server_cpu_quota == 0.5


def test_an_older_store_with_whole_cpus_still_reads():
    store = Store()
    run_id = store.begin_run("vps", "vps.toml", {}, {}, {
        "pinning": {"server_cpus": [0], "engine_cpus": [1], "shared": False},
        "machine_profile": {"cpus": 1, "memory_bytes": 512 * MiB, "server_cpus": [0]}})
    env = store.run(run_id).environment
    assert env.machine_profile == MachineShape(1, 512 * MiB, [0]) and env.machine_profile.cpu_quota_us is None
    assert env.pinning == Pinning([0], [1]) and env.pinning.server_capacity == 1


def fake_cgroups(root, monkeypatch, v2: bool, controllers: str = "", v1: tuple[str, ...] = ()):
    """A /sys/fs/cgroup laid out as the kernel does it, in a temporary directory: pure v2
    with these controllers, or v1 with these hierarchies mounted."""
    from stackbench.monitor import cpu_quota

    if v2:
        write(root, {"cgroup.controllers": controllers + "\n", "cgroup.subtree_control": "\n", "cgroup.procs": ""})
    for hierarchy in v1:
        write(root / hierarchy, {"cgroup.procs": ""})
        if hierarchy == "cpu":
            write(root / "cpu", {"cpu.cfs_period_us": "100000\n", "cpu.cfs_quota_us": "-1\n"})
    monkeypatch.setattr(machine_cgroup, "ROOT", root)
    monkeypatch.setattr(cpu_quota, "ROOT", root)
    monkeypatch.setattr(cpu_quota, "V1", root / "cpu")


@pytest.mark.parametrize("v2,controllers,v1,reason", [
    (False, "", ("memory",), "no cgroup cpu controller is mounted ({root}/cpu), and a fractional CPU is a quota of it"),
    (True, "memory pids", (), "the cgroup v2 tree has no cpu controller, and a fractional CPU is a quota of it"),
    (False, "", ("memory", "cpu"), None),
    (True, "cpu memory", (), None),
])
def test_a_quota_where_no_cpu_controller_is_mounted_is_refused(tmp_path, monkeypatch, v2, controllers, v1, reason):
    from stackbench.planning import limits

    fake_cgroups(tmp_path, monkeypatch, v2, controllers, v1)
    half = machine.MachineProfile(0.5, None)
    expected = reason.format(root=tmp_path) if reason else None
    assert machine_cgroup.unavailable_reason(half) == expected
    assert machine_cgroup.unavailable_reason(machine.MachineProfile(1, None)) is None  # whole cores: pinning alone
    if expected:
        with pytest.raises(machine_cgroup.MachineUnavailable) as e:
            limits.check_profile(half, "vps.toml")
        assert e.value.message == f"vps.toml: the machine profile (0.5 CPU (a 50 ms in 100 ms quota on 1 core)) " \
                                  f"cannot be set up here: {expected}"


def test_v2_writes_the_quota_to_cpu_max_with_the_controller_enabled_down_to_it(tmp_path, monkeypatch):
    from stackbench.monitor.cgroup import Cgroup

    fake_cgroups(tmp_path, monkeypatch, True, "cpu memory")
    there = tmp_path / "stackbench" / "run-1" / "m"
    for d in (tmp_path / "stackbench", tmp_path / "stackbench" / "run-1"):
        write(d, {"cgroup.subtree_control": "\n"})
    there.mkdir()
    mc = machine_cgroup.MachineCgroup(machine.MachineProfile(1.5, None), Cgroup("run-1/m", {"v2": there}))
    mc._limit_cpu()
    assert (there / "cpu.max").read_text() == "150000 100000"
    assert [(d / "cgroup.subtree_control").read_text() for d in (tmp_path, tmp_path / "stackbench",
                                                                 tmp_path / "stackbench" / "run-1")] == ["+cpu"] * 3
    assert mc.applied["cpu"] == "cpu.max" and mc.applied["cpu_quota"] == {"cpu_period_us": 100_000,
                                                                          "cpu_quota_us": 150_000}
    assert mc.cpu_dir is None and mc.quota_dir == there  # one tree: nothing else to make or remove
