"""`stackbench export RUN --format csv|json`: every cell (one row per repetition, with
whether it may enter a verdict and why not) and the verdicts, for other tools.

The JSON document's contract is report/schema/export-v1.schema.json (tests validate real
exports against it). CSV holds one table: the cells, or with --verdicts the verdicts.
Numbers are raw (µs, bytes, requests/s); empty / null when not computable.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO

from stackbench.analysis import figures, metrics, verdicts

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).parent / "schema" / "export-v1.schema.json"

CELL_FIELDS = ("run_id", "seq", "repetition", "stack_label", "stack_id", "workload", "concurrency", "keepalive",
               "status", "valid", "invalid_reasons", "requests_per_s", "latency_mean_us", "latency_p50_us",
               "latency_p99_us", "requests_completed", "requests_failed", "non_2xx", "connections_measured",
               "connections_without_response", "memory_peak_bytes", "cgroup_peak_bytes", "cpu_us_per_request",
               "syscalls_per_request", "procs_max", "threads_max", "server_steal_share", "error",
               "pages_per_s", "page_load_p50_us", "page_load_p99_us", "php_opcache",
               "service_memory_peak_bytes", "service_cpu_us_per_request", "oom_kills", "memory_limit_bytes")
VERDICT_FIELDS = ("workload", "concurrency", "keepalive", "metric", "baseline", "candidate", "verdict", "better",
                  "ratio", "ci_low", "ci_high", "p_value", "p_adjusted", "n_baseline", "n_candidate", "runs_needed")


def cell_rows(cells: list[dict]) -> list[dict[str, Any]]:
    out = []
    for c in cells:
        f = figures.of(c)
        reasons = verdicts.invalid_reasons(c)
        out.append({
            "run_id": c["run_id"], "seq": c["seq"], "repetition": c["repetition"], "stack_label": c["stack_label"],
            "stack_id": c["stack_id"], "workload": c["workload"], "concurrency": c["concurrency"],
            "keepalive": bool(c["keepalive"]), "status": c["status"], "valid": not reasons,
            "invalid_reasons": list(reasons), "requests_per_s": f.requests_per_s,
            "latency_mean_us": f.latency_mean_us, "latency_p50_us": f.latency_p50_us,
            "latency_p99_us": f.latency_p99_us, "requests_completed": c.get("requests_completed"),
            "requests_failed": f.requests_failed, "non_2xx": f.non_2xx,
            "connections_measured": c.get("connections_measured"),
            "connections_without_response": c.get("connections_without_response"),
            "memory_peak_bytes": f.memory_peak_bytes, "cgroup_peak_bytes": f.cgroup_peak_bytes,
            "cpu_us_per_request": f.cpu_us_per_request, "syscalls_per_request": f.syscalls_per_request,
            "procs_max": f.procs_max, "threads_max": f.threads_max,
            "server_steal_share": c.get("server_steal_share"), "error": f.error,
            "pages_per_s": f.pages_per_s, "page_load_p50_us": f.page_load_p50_us,
            "page_load_p99_us": f.page_load_p99_us, "php_opcache": f.php_opcache,
            "service_memory_peak_bytes": f.service_memory_peak_bytes,
            "service_cpu_us_per_request": f.service_cpu_us_per_request,
            "oom_kills": f.oom_kills, "memory_limit_bytes": f.memory_limit_bytes,
        })
    return out


def verdict_rows(vs: verdicts.Verdicts | None) -> list[dict[str, Any]]:
    if vs is None:
        return []
    return [{
        "workload": v.question.workload, "concurrency": v.question.concurrency, "keepalive": v.question.keepalive,
        "metric": v.metric.key, "baseline": v.baseline, "candidate": v.candidate,
        "verdict": v.comparison.verdict.value, "better": v.better, "ratio": v.comparison.ratio,
        "ci_low": v.comparison.ci_low, "ci_high": v.comparison.ci_high, "p_value": v.comparison.p_value,
        "p_adjusted": v.comparison.p_adjusted, "n_baseline": v.comparison.n_a, "n_candidate": v.comparison.n_b,
        "runs_needed": v.comparison.runs_needed,
    } for v in vs.verdicts]


def document(run: dict, cells: list[dict], baseline: str | None = None) -> dict[str, Any]:
    vs = verdicts.for_run(run, cells, baseline)
    baseline, band = (vs.baseline, vs.band) if vs else (None, (run.get("plan_checked") or {}).get("equivalence"))
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {"id": run["id"], "plan_name": run["plan_name"], "status": run["status"],
                "started_at": run["started_at"], "finished_at": run["finished_at"], "baseline": baseline,
                "equivalence_band": band, "stop": run.get("stop"), "environment": run["environment"]},
        # Per URL (a mix, a page's assets) only here: a CSV row has no room for a list.
        "cells": [row | {"per_url": metrics.per_url(c)} for row, c in zip(cell_rows(cells), cells)],
        "verdicts": verdict_rows(vs),
        "excluded": [asdict(e) | {"reasons": list(e.reasons)} for e in (vs.excluded if vs else ())],
        "methods": {
            "unit": "run (one repetition of a cell); requests are never the unit",
            "ci": "95 % bootstrap percentile interval, fixed seed (stackbench/analysis/stats.py)",
            "test": "Mann-Whitney U, two-sided; Holm-Bonferroni over each metric's comparisons",
        },
    }


def write(run: dict, cells: list[dict], fmt: str, out: TextIO, *, verdicts_only: bool = False,
          baseline: str | None = None) -> None:
    if fmt == "json":
        json.dump(document(run, cells, baseline), out, indent=2)
        out.write("\n")
        return
    if verdicts_only:
        rows = verdict_rows(verdicts.for_run(run, cells, baseline))
        fields = VERDICT_FIELDS
    else:
        rows, fields = cell_rows(cells), CELL_FIELDS
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (";".join(v) if isinstance(v, list) else v) for k, v in r.items()})
