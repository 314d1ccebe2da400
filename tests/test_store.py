"""The results store, on :memory: (unit)."""

from __future__ import annotations

import sqlite3

import pytest

from stackbench.engine import Caveat, EngineResult
from stackbench.errors import UsageError
from stackbench.store import SCHEMA_VERSION, CellRecord, Store


def engine_doc(rps: float = 1234.5) -> dict:
    return {"schema_version": 1, "started_unix_us": 1_700_000_000_000_000, "duration_us": 2_000_000,
            "requests": {"completed": 2469, "ok_2xx": 2469, "non_2xx": 0, "failed": 0},
            "requests_per_s": rps, "latency_us": {"mean": 810.2, "percentiles": {"50": 790, "99": 1500}},
            "connections_measured": 16, "connections_without_response": 0,
            "engine_cpu": {"user_us": 300_000, "system_us": 100_000},
            "warnings": ["w"], "warning_codes": [{"code": "short_run", "params": {"duration_us": 2}}]}


def record(seq: int, **kw) -> CellRecord:
    base = dict(seq=seq, repetition=0, stack_id="nginx-fpm", stack_label="nginx-fpm", knobs={"pm": "dynamic"},
                workload="php-hello", concurrency=16, keepalive=True, status="ok",
                versions={"nginx": "1.22.1"}, pinning={"server_cpus": [0], "engine_cpus": [1]},
                files={"nginx/nginx.conf": "daemon off;\n"}, result=EngineResult.from_doc(engine_doc()),
                caveats=[Caveat("short_run", {"duration_us": 2})])
    base.update(kw)
    return CellRecord(**base)


def test_round_trip():
    store = Store(":memory:")
    run_id = store.begin_run("default", "<default plan>", {"name": "default"}, {"name": "default", "x": 1},
                             {"kernel": "6.1"})
    store.record_cell(run_id, record(0))
    store.record_cell(run_id, record(1, status="failed", result=None, error="nginx exited", caveats=[]))
    store.finish_run(run_id, "complete")

    run = store.run(run_id)
    assert run["status"] == "complete" and run["environment"] == {"kernel": "6.1"} and run["finished_at"]
    assert run["plan"] == {"name": "default"} and run["plan_checked"] == {"name": "default", "x": 1}
    cells = store.cells(run_id)
    assert [c["seq"] for c in cells] == [0, 1]
    ok, failed = cells
    assert ok["requests_per_s"] == 1234.5 and ok["latency_p50_us"] == 790 and ok["latency_p99_us"] == 1500
    assert ok["requests_completed"] == 2469 and ok["keepalive"] is True
    assert ok["engine"] == engine_doc() and ok["knobs"] == {"pm": "dynamic"}
    assert ok["caveats"] == [{"code": "short_run", "params": {"duration_us": 2}}]
    assert ok["connections_measured"] == 16 and ok["connections_without_response"] == 0
    assert ok["engine_cpu_us"] == 400_000
    assert store.config_files(ok["config_hash"]) == {"nginx/nginx.conf": "daemon off;\n"}
    # Not computable stays NULL, never 0.
    assert failed["requests_per_s"] is None and failed["engine"] is None and failed["error"] == "nginx exited"
    assert store.runs()[0]["cells"] == 2 and store.latest_run_id() == run_id


def test_identical_configs_are_stored_once():
    store = Store(":memory:")
    run_id = store.begin_run("p", "s", {}, {}, {})
    for seq in range(3):
        store.record_cell(run_id, record(seq))
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
