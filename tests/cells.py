"""A stored cell for tests of analysis and reports, as the store gives it back
(stackbench/store/rows.py maps a row onto it), built from the store's column names:
`stored_cell(seq=3, requests_per_s=1000.0, latency_p99_us=9000, caveats=[...])`.

The engine's figures (requests_per_s, latency_*_us, requests_*, connections_*,
engine_cpu_us, requests_due/not_sent, pages_*, page_load_*) become the cell's engine
document, parsed by the same EngineResult.from_doc as a real one; `engine=None` is a cell
the engine never measured, and `engine={...}` adds keys of the document (header_counts,
timeline, per_url). Everything else is a column of the cells table."""

from __future__ import annotations

import json
from typing import Any

from stackbench.engine.result import Caveat
from stackbench.model.cell import StoredCell
from stackbench.model.environment import Environment
from stackbench.model.plan import CheckedPlan
from stackbench.model.run import StoredRun
from stackbench.model.stop import RepetitionStop
from stackbench.states import RunStatus
from stackbench.store.rows import cell_of

MEASURED = object()  # the default `engine`: measured, the document made of the figures given

# Column -> where the engine's document holds it.
ENGINE_FIGURES = {
    "started_unix_us": ("started_unix_us",), "duration_us": ("duration_us",),
    "requests_completed": ("requests", "completed"), "requests_failed": ("requests", "failed"),
    "non_2xx": ("requests", "non_2xx"), "requests_due": ("requests", "due"),
    "requests_not_sent": ("requests", "not_sent"), "requests_per_s": ("requests_per_s",),
    "latency_mean_us": ("latency_us", "mean"), "latency_p50_us": ("latency_us", "percentiles", "50"),
    "latency_p99_us": ("latency_us", "percentiles", "99"), "connections_measured": ("connections_measured",),
    "connections_without_response": ("connections_without_response",), "engine_cpu_us": ("engine_cpu", "user_us"),
    "pages_completed": ("pages", "completed"), "pages_failed": ("pages", "failed"), "pages_per_s": ("pages", "per_s"),
    "page_load_p50_us": ("page_load_us", "percentiles", "50"), "page_load_p99_us": ("page_load_us", "percentiles", "99"),
}
JSON_COLUMNS = ("knobs", "versions", "pinning", "php", "classes", "memory_events", "negotiated", "warmup", "cache")


def stored_cell(*, engine: Any = MEASURED, caveats: list = (), monitor_notes: list = (), **columns: Any) -> StoredCell:
    seq = columns.get("seq", 0)
    row: dict[str, Any] = {
        "id": seq + 1, "run_id": 1, "seq": seq, "repetition": 0, "stack_id": "nginx-fpm", "stack_label": "nginx-fpm",
        "workload": "php-hello", "concurrency": 16, "keepalive": True, "status": "ok", "error": None,
        "config_hash": None, "load": "closed", "rate": None, "leg": None, "step": None, "network": "loopback",
        "background": "none", "knobs": {}, "versions": {}, "pinning": {}, "php": None, "classes": None,
        "memory_events": None, "mem_peak_bytes": None, "mem_rss_peak_bytes": None, "cpu_user_us": None,
        "cpu_system_us": None, "cpu_total_us": None, "cpu_window_us": None, "procs_max": None, "threads_max": None,
        "syscalls_total": None, "syscalls_window_us": None, "syscalls_requests_per_s": None,
        "server_steal_share": None, "service_mem_peak_bytes": None, "service_cpu_us": None, "oom_kills": None,
        "protocol": "http/1.1", "handshake": None, "streams": None, "negotiated": None, "warmup": None, "cache": None, "logged_in": None,
    }
    figures = {k: columns.pop(k) for k in list(columns) if k in ENGINE_FIGURES}
    unknown = set(columns) - set(row)
    if unknown:
        raise TypeError(f"stored_cell: no column {sorted(unknown)}")
    row.update(columns)
    row["keepalive"] = int(bool(row["keepalive"]))
    for key in JSON_COLUMNS:
        value = row.pop(key)
        row[f"{key}_json"] = json.dumps(value) if value is not None else None
    row["knobs_json"], row["versions_json"], row["pinning_json"] = (row["knobs_json"] or "{}", row["versions_json"]
                                                                    or "{}", row["pinning_json"] or "{}")
    row["warnings_json"] = json.dumps([c.as_dict() if isinstance(c, Caveat) else c for c in caveats])
    row["monitor_notes_json"] = json.dumps(list(monitor_notes))
    row["engine_json"] = None if engine is None else json.dumps(_document({} if engine is MEASURED else engine,
                                                                         figures))
    return cell_of(row)


def _document(extra: dict, figures: dict[str, Any]) -> dict:
    doc = json.loads(json.dumps(extra))
    for column, value in figures.items():
        *path, last = ENGINE_FIGURES[column]
        at = doc
        for key in path:
            if not isinstance(at.get(key), dict):
                at[key] = {}
            at = at[key]
        at[last] = value
    return doc


def stored_run(**fields: Any) -> StoredRun:
    """A stored run: `stored_run(id=3, plan_checked={"baseline": "nginx-fpm"})`."""
    run = {"id": 1, "started_at": "t", "finished_at": None, "status": "complete", "error": None, "plan_name": "p",
           "plan_source": "p.toml", "plan": {}, "plan_checked": None, "environment": {}, "stop": None,
           "network": None}
    unknown = set(fields) - set(run)
    if unknown:
        raise TypeError(f"stored_run: no field {sorted(unknown)}")
    run.update(fields)
    # Documents as the store's row mapping parses them (store/rows.py).
    typed = {"plan_checked": CheckedPlan.from_dict, "stop": RepetitionStop.from_dict,
             "environment": Environment.from_dict}
    run |= {k: parse(run[k]) for k, parse in typed.items() if isinstance(run[k], dict)}
    run["environment"] = run["environment"] or Environment()  # a record with nothing in it
    return StoredRun(**{**run, "status": RunStatus(run["status"])})
