"""The results store, on :memory: (unit)."""

from __future__ import annotations

import sqlite3
from dataclasses import replace

import pytest

from stackbench.engine import Caveat, EngineResult
from stackbench.engine.result import ClientShare, Clients, Second, StartSync
from stackbench.errors import UsageError
from stackbench.model.cell import StoredCell
from stackbench.model.plan import CheckedPlan
from stackbench.model.cost import CacheCounts, MemoryEvents, StoredCost
from stackbench.monitor import memory_events
from stackbench.monitor.session import CellReadings
from stackbench.monitor.syscalls import WindowCounts
from stackbench.states import CellStatus
from stackbench.store import SCHEMA_VERSION, Store
from stackbench.upkeep.pinning import Pinning


def engine_doc(rps: float = 1234.5) -> dict:
    return {"schema_version": 1, "started_unix_us": 1_700_000_000_000_000, "duration_us": 2_000_000,
            "requests": {"completed": 2469, "ok_2xx": 2469, "non_2xx": 0, "failed": 0},
            "requests_per_s": rps, "latency_us": {"mean": 810.2, "percentiles": {"50": 790, "99": 1500}},
            "connections_measured": 16, "connections_without_response": 0,
            "engine_cpu": {"user_us": 300_000, "system_us": 100_000},
            "warnings": ["w"], "warning_codes": [{"code": "short_run", "params": {"duration_us": 2}}]}


FILES = {"nginx/nginx.conf": "daemon off;\n"}


def record(seq: int, **kw) -> StoredCell:
    """A cell as the runner hands it to the store."""
    base = dict(id=0, run_id=0, seq=seq, repetition=0, stack_id="nginx-fpm", stack_label="nginx-fpm",
                knobs={"pm": "dynamic"}, workload="php-hello", concurrency=16, keepalive=True, status=CellStatus.OK,
                error=None, config_hash=None, versions={"nginx": "1.22.1"},
                pinning=Pinning([0], [1]), engine=EngineResult.from_doc(engine_doc()),
                caveats=(Caveat("short_run", {"duration_us": 2}),))
    base.update(kw)
    return StoredCell(**base)


def test_round_trip():
    store = Store(":memory:")
    run_id = store.begin_run("default", "<default plan>", {"name": "default"}, {"name": "default", "x": 1},
                             {"kernel": "6.1"})
    kept = store.record_cell(run_id, record(0), files=FILES)
    store.record_cell(run_id, record(1, status=CellStatus.FAILED, engine=None, error="nginx exited", caveats=()),
                      files=FILES)
    store.finish_run(run_id, "complete")

    run = store.run(run_id)
    assert run.status == "complete" and run.environment.kernel == "6.1" and run.finished_at
    assert run.environment.document == {"kernel": "6.1"}
    assert run.plan == {"name": "default"} and run.plan_checked == CheckedPlan()  # nothing a reader asks of it
    cells = store.cells(run_id)
    assert [c.seq for c in cells] == [0, 1]
    ok, failed = cells
    # The engine's figures come back parsed from its stored document, as the runner had them.
    assert ok.engine == EngineResult.from_doc(engine_doc()) and ok.engine.raw == engine_doc()
    assert ok.engine.requests_per_s == 1234.5 and ok.engine.latency.p50_us == 790 and ok.engine.latency.p99_us == 1500
    assert ok.engine.requests.completed == 2469 and ok.keepalive is True and ok.knobs == {"pm": "dynamic"}
    assert ok.caveats == (Caveat("short_run", {"duration_us": 2}),)
    assert ok.engine.clients == Clients(16, 0) and ok.engine.engine_cpu_us == 400_000
    assert store.config_files(ok.config_hash) == {"nginx/nginx.conf": "daemon off;\n"}
    assert store.cell(run_id, 1) == failed
    assert kept == ok  # what the store was handed is what it gives back, its row id and config hash set
    # Not computable stays NULL, never 0.
    assert failed.engine is None and failed.error == "nginx exited" and failed.status == CellStatus.FAILED
    assert failed.cost == StoredCost()
    assert store.runs()[0]["cells"] == 2 and store.latest_run_id() == run_id


def test_the_stored_cost_comes_back_as_the_monitor_derived_it():
    store = Store(":memory:")
    run_id = store.begin_run("default", "<default plan>", {}, {}, {})
    cost = StoredCost(
        peak_mem_bytes=30, anon_peak_bytes=20, cpu_user_us=7, cpu_system_us=3, cpu_total_us=11, window_us=2_000_000,
        procs_max=4, threads_max=9, syscalls_total=50, syscalls_window_us=2_000_000, syscalls_requests_per_s=100.0,
        notes=("n",), server_steal_share=0.25, service_mem_peak_bytes=5, service_cpu_us=6,
        memory_events=MemoryEvents(limit_bytes=1, oom_kills=2), oom_kills=2,
        cache=CacheCounts("varnishd", hits=90, misses=4, passes=6))
    readings = CellReadings(cost=cost, syscalls=WindowCounts({"total": 50}, 2.0))
    store.record_cell(run_id, record(0, cost=cost), readings=readings)
    assert store.cells(run_id)[0].cost == cost
    assert store.syscalls(store.cells(run_id)[0].id) == {"total": 50, "other": 50}


def test_memory_events_type_every_counter_the_monitor_stores():
    """A counter memory_events.difference stores but MemoryEvents does not name would be
    dropped when the cell is read back."""
    before = memory_events.MemoryCounters(**{name: 0 for name in memory_events.COUNTERS})
    events = memory_events.difference(before, before, limit_bytes=1, peak_bytes=2)
    assert all(getattr(events, name) == 0 for name in memory_events.COUNTERS)
    stored = replace(events, oom_kills_profile=0).as_dict()
    assert set(stored) == set(MemoryEvents.__dataclass_fields__)
    assert MemoryEvents.from_dict(stored).as_dict() == stored
    assert "oom_kills_profile" not in events.as_dict()  # no profile pass: stored as before the events were typed


def test_engine_result_reads_what_analysis_needs_and_none_from_an_old_document():
    doc = engine_doc() | {
        "requests": {"completed": 10, "ok_2xx": 10, "non_2xx": 0, "failed": 0, "in_flight_at_end": 2,
                     "in_flight_oldest_us": 80_000},
        "engine_cpu": {"user_us": 1, "system_us": 1, "saturated": True},
        "per_url": [{"path": "/a", "weight": 3, "requests": {"completed": 4, "ok_2xx": 4, "non_2xx": 0, "failed": 1},
                     "latency_us": {"mean": 2, "percentiles": {"50": 5, "99": 9}}}],
        "timeline": [{"t_s": 0, "requests": 10, "errors": 1, "p50_us": 5, "p99_us": None}],
        "clients": [{"host": "ssh:b", "completed": 10, "failed": 0, "offset_us": 120, "offset_uncertainty_us": 40,
                     "cpus": 2}],
        "start_sync": {"spread_us": 110, "clock_uncertainty_us": 40},
        "pages": {"completed": 3, "failed": 0, "per_s": 1}, "page_load_us": {"percentiles": {"50": 7, "99.9": 8}},
        "errors": {"connect": 3, "timeout": 1, "reset": 0, "read": 0, "write": 0, "parse": 0, "length_mismatch": 0}}
    r = EngineResult.from_doc(doc)
    assert (r.requests.in_flight_at_end, r.requests.in_flight_oldest_us, r.engine_saturated) == (2, 80_000, True)
    (url,) = r.per_url
    assert (url.path, url.weight, url.requests.completed, url.requests.failed, url.latency.p99_us) == ("/a", 3, 4, 1, 9)
    assert r.timeline == (Second(0, 10, 1, 5, None),)
    assert r.client_shares == (ClientShare("ssh:b", 10, 0, 120, 40, 2),) and r.start_sync == StartSync(110, 40)
    assert r.pages.per_s == 1.0 and isinstance(r.pages.per_s, float) and r.pages.load.percentile_us("99.9") == 8
    assert r.latency.percentile_us("99") == 1500 and r.latency.percentile_us("99.99") is None
    assert (r.errors.connect, r.errors.total, r.errors.too_large) == (3, 4, None)  # too_large: engine >= 0.5
    old = EngineResult.from_doc(engine_doc())  # an engine before these figures
    assert (old.requests.in_flight_oldest_us, old.engine_saturated, old.per_url, old.timeline, old.client_shares,
            old.start_sync, old.pages, old.errors) == (None, None, (), (), (), None, None, None)


def test_identical_configs_are_stored_once():
    store = Store(":memory:")
    run_id = store.begin_run("p", "s", {}, {}, {})
    for seq in range(3):
        store.record_cell(run_id, record(seq), files=FILES)
    assert store.db.execute("SELECT COUNT(*) FROM configs").fetchone()[0] == 1


def test_schema_version_and_duplicate_cells_rejected():
    store = Store(":memory:")
    assert store.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    run_id = store.begin_run("p", "s", {}, {}, {})
    store.record_cell(run_id, record(0))
    with pytest.raises(sqlite3.IntegrityError):
        store.record_cell(run_id, record(0))
    assert len(store.cells(run_id)) == 1  # the failed transaction left nothing behind


def test_a_store_from_the_future_is_refused(tmp_path):
    path = tmp_path / "future.sqlite"
    db = sqlite3.connect(path)
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.close()
    with pytest.raises(UsageError, match="schema"):
        Store(path)


def test_unknown_run_is_a_clear_error():
    with pytest.raises(UsageError, match="no run 42"):
        Store(":memory:").run(42)


def test_each_profiles_calibration_is_added_to_the_runs_and_comes_back_typed():
    from stackbench.model.network import Calibration, Direction, Rtt
    from stackbench.report.network import lines

    store = Store(":memory:")
    run_id = store.begin_run("p", "s", {}, {}, {})
    assert store.run(run_id).network is None
    lan = {"profile": "lan", "emulation": "netem on veth", "asked": {"down": {"rate_bit_s": 1e8, "delay_ms": 1.0,
                                                                             "jitter_ms": 0.0, "loss": 0.0},
                                                                    "up": {"rate_bit_s": 1e8, "delay_ms": 1.0}},
           "measured": {"rtt_ms": {"probes": 25, "answered": 25, "p50": 2.01, "min": 2.0, "p99": 2.2},
                        "down_bit_s": 9.5e7, "up_bit_s": 9.4e7}}
    store.add_calibration(run_id, "lan", lan)
    store.add_calibration(run_id, "far", lan | {"measured": {"rtt_ms": {"probes": 25, "answered": 0}}})
    network = store.run(run_id).network
    assert list(network) == ["lan", "far"]
    assert network["lan"] == Calibration("netem on veth", network["lan"].asked, Rtt(25, 25, 2.01, 2.2), 9.5e7, 9.4e7)
    assert network["lan"].asked.up == Direction(1e8, 1.0)
    assert lines(("lan", "far"), network) == [
        "lan: netem on veth; asked 100 Mbit/s, 1 ms one way each way; measured RTT p50 2.01 ms (p99 2.2, 25/25 "
        "probes), down 95 Mbit/s, up 94 Mbit/s",
        "far: netem on veth; asked 100 Mbit/s, 1 ms one way each way; measured no RTT probe answered, down "
        "unshaped, up unshaped"]
