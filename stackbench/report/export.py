"""`stackbench export RUN --format csv|json`: every cell (one row per repetition, with
its outcome — an invalid measurement and why, or served, or failed the load and how —
and whether it may enter a verdict) and the verdicts with their kind, for other tools; in
JSON, a sizing's size run also carries the whole sizing's answer.

The JSON document's contract is report/schema/export-v1.schema.json (tests validate real
exports against it). CSV holds one table: the cells, or with --verdicts the verdicts.
Numbers are raw (µs, bytes, requests/s); empty / null when not computable.
"""

from __future__ import annotations

import csv
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any, Mapping, Sequence, TextIO

from stackbench.analysis import metrics, verdicts
from stackbench.analysis.cells import CellAnalysis
from stackbench.analysis.run import RunAnalysis
from stackbench.analysis.sizing import SizingAnswer
from stackbench.model.tuning import StoredTuning

SCHEMA_VERSION = 1
SCHEMA_PATH = Path(__file__).parent / "schema" / "export-v1.schema.json"

CELL_FIELDS = ("run_id", "seq", "repetition", "stack_label", "stack_id", "workload", "concurrency", "keepalive",
               "status", "valid", "invalid_reasons", "requests_per_s", "latency_mean_us", "latency_p50_us",
               "latency_p99_us", "requests_completed", "requests_failed", "non_2xx", "connections_measured",
               "connections_without_response", "memory_peak_bytes", "cgroup_peak_bytes", "cpu_us_per_request",
               "syscalls_per_request", "procs_max", "threads_max", "server_steal_share", "error",
               "pages_per_s", "page_load_p50_us", "page_load_p99_us", "php_opcache",
               "service_memory_peak_bytes", "service_cpu_us_per_request", "oom_kills", "memory_limit_bytes",
               "outcome", "failures", "engine_bound", "server_busy_share",
               # which side was the bottleneck: the engine's busiest thread, its CPU per request
               "engine_busy_share", "engine_cpu_us_per_request", "bottleneck",
               # protocols: asked, spoken, negotiated; the client's TLS handshakes
               "protocol", "handshake", "streams", "spoken", "protocol_label", "alpn", "tls_version", "tls_cipher",
               "tls_group", "handshakes_full", "handshakes_resumed", "handshake_p50_us", "handshake_p99_us",
               "connect_p50_us",
               # the warm-up before the measured window: its load's seconds, steady or not (null: fixed)
               "warmup_s", "steady", "warmup_fresh",
               # visits (a plan's [visit]): the share logged in; visits a second, a visit's duration, its pages
               "logged_in", "visits_per_s", "visit_p50_us", "visit_p99_us", "pages_per_visit")
VERDICT_FIELDS = ("workload", "concurrency", "keepalive", "metric", "baseline", "candidate", "verdict", "better",
                  "ratio", "ci_low", "ci_high", "ci_level", "p_value", "p_adjusted", "n_baseline", "n_candidate", "runs_needed",
                  "kind", "baseline_failed", "candidate_failed", "baseline_engine_bound", "candidate_engine_bound",
                  "protocol", "handshake", "axis", "stack", "logged_in")


def cell_rows(cells: Sequence[CellAnalysis]) -> list[dict[str, Any]]:
    out = []
    for a in cells:
        c, f, e = a.cell, a.figures, a.cell.engine
        out.append({
            "run_id": c.run_id, "seq": c.seq, "repetition": c.repetition, "stack_label": c.stack_label,
            "stack_id": c.stack_id, "workload": c.workload, "concurrency": c.concurrency,
            "keepalive": bool(c.keepalive), "status": c.status.value, "valid": a.valid,
            "invalid_reasons": list(a.invalid_reasons), "requests_per_s": f.requests_per_s,
            "latency_mean_us": f.latency_mean_us, "latency_p50_us": f.latency_p50_us,
            "latency_p99_us": f.latency_p99_us, "requests_completed": e and e.requests.completed,
            "requests_failed": f.requests_failed, "non_2xx": f.non_2xx,
            "connections_measured": e and e.clients.measured,
            "connections_without_response": e and e.clients.without_response,
            "memory_peak_bytes": f.memory_peak_bytes, "cgroup_peak_bytes": f.cgroup_peak_bytes,
            "cpu_us_per_request": f.cpu_us_per_request, "syscalls_per_request": f.syscalls_per_request,
            "procs_max": f.procs_max, "threads_max": f.threads_max,
            "server_steal_share": c.cost.server_steal_share, "error": f.error,
            "pages_per_s": f.pages_per_s, "page_load_p50_us": f.page_load_p50_us,
            "page_load_p99_us": f.page_load_p99_us, "php_opcache": f.php_opcache,
            "service_memory_peak_bytes": f.service_memory_peak_bytes,
            "service_cpu_us_per_request": f.service_cpu_us_per_request,
            "oom_kills": f.oom_kills, "memory_limit_bytes": f.memory_limit_bytes,
            "outcome": a.outcome.kind, "failures": [x.code for x in a.outcome.failures if a.outcome.failed],
            "engine_bound": a.outcome.engine_bound, "server_busy_share": a.outcome.server_busy,
            "engine_busy_share": e and e.engine_busy, "engine_cpu_us_per_request": f.engine_cpu_us_per_request,
            "bottleneck": f.bottleneck and f.bottleneck.side,
            "protocol": c.protocol, "handshake": c.handshake, "streams": c.streams, "spoken": e and e.protocol,
            "protocol_label": f.protocol, **dict(zip(("alpn", "tls_version", "tls_cipher", "tls_group"),
                                                     f.negotiated or (None,) * 4)),
            "handshakes_full": f.handshakes_full, "handshakes_resumed": f.handshakes_resumed,
            "handshake_p50_us": f.handshake_p50_us, "handshake_p99_us": f.handshake_p99_us,
            "connect_p50_us": f.connect_p50_us,
            "warmup_s": c.warmup and c.warmup.seconds, "steady": c.warmup and c.warmup.steady,
            "warmup_fresh": c.warmup and c.warmup.fresh,
            "logged_in": c.logged_in, "visits_per_s": f.visits_per_s, "visit_p50_us": f.visit_p50_us,
            "visit_p99_us": f.visit_p99_us, "pages_per_visit": f.pages_per_visit,
        })
    return out


def failure_details(a: CellAnalysis) -> list[dict[str, Any]]:
    """JSON only: how a failed repetition failed, with its figures (outcomes.Failure)."""
    return [asdict(x) for x in a.outcome.failures] if a.outcome.failed else []


def verdict_rows(vs: verdicts.Verdicts | None) -> list[dict[str, Any]]:
    """`axis`: what the sides differ in (analysis/axes.py); `stack`: on another axis than
    the stack's, the stack both sides ran — written before the workload too ("STACK ·
    WORKLOAD"), as exports did before the field."""
    if vs is None:
        return []
    return [{
        "workload": f"{v.within} · {v.question.workload}" if v.within else v.question.workload,
        "concurrency": v.question.concurrency, "keepalive": v.question.keepalive,
        "protocol": v.question.protocol, "handshake": v.question.handshake,
        "metric": v.metric.key, "baseline": v.baseline, "candidate": v.candidate,
        "verdict": v.comparison.verdict.value, "better": v.better, "ratio": v.comparison.ratio,
        "ci_low": v.comparison.ci_low, "ci_high": v.comparison.ci_high, "ci_level": v.comparison.confidence,
        "p_value": v.comparison.p_value,
        "p_adjusted": v.comparison.p_adjusted, "n_baseline": v.comparison.n_a, "n_candidate": v.comparison.n_b,
        "runs_needed": v.comparison.runs_needed, "kind": v.kind,
        "baseline_failed": v.baseline_side.failed if v.baseline_side else None,
        "candidate_failed": v.candidate_side.failed if v.candidate_side else None,
        "baseline_engine_bound": v.baseline_side.engine_bound if v.baseline_side else None,
        "candidate_engine_bound": v.candidate_side.engine_bound if v.candidate_side else None,
        "axis": vs.axis.name, "stack": v.within, "logged_in": v.question.logged_in,
    } for v in vs.verdicts]


def _excluded(e: verdicts.Excluded) -> dict[str, Any]:
    """A repetition kept out of the verdicts between stacks: its side is its stack."""
    return {k: v for k, v in asdict(e).items() if k not in ("side", "within")} | {"reasons": list(e.reasons)}


def tuning_rows(a: RunAnalysis, stored: Mapping[int, StoredTuning]) -> list[dict[str, Any]]:
    """Each tuned stack of the run: the stored tuning it took, the knobs it chose, and what one
    slow request cost the others (a tuning on a mix with slow requests; else None)."""
    out = []
    for label, tuning_id in a.run.checked.tunings.items():
        t = stored.get(tuning_id)
        if t is None:
            continue
        out.append({"stack_label": label, "tuning_id": t.id, "stack_id": t.stack_id, "pool_size": t.chosen_size,
                    "one_request": t.one_request, "knobs": dict(t.knobs), "reason": t.reason,
                    "question": dict(t.key), "slow_cost": t.slow_cost.as_dict() if t.slow_cost else None})
    return out


def sizing_part(a: SizingAnswer, slo: str | None, run_id: int) -> dict[str, Any]:
    """The sizing a run measured a size of (docs/guide/sizing.md): the question, the core it
    was measured on (its yardstick), every size asked with its price and run, and per stack
    the smallest enough size, the CPU a request took and each size's capacity — as
    `stackbench sizings ID` prints it (analysis/sizing.py)."""
    s = a.sizing
    runs = {r.size: r.run_id for r in s.runs}
    return {
        "id": s.id, "name": s.name, "size": next((r.size for r in s.runs if r.run_id == run_id), None),
        "target_rate": a.target_rate, "hits_per_day": a.hits_per_day, "peak_factor": a.peak_factor, "slo": slo,
        "visits_per_day": a.visits_per_day, "visit": a.visit.as_dict() if a.visit else None,
        "target_hits_per_day": a.hits(a.target_rate),
        "yardstick": a.yardstick.as_dict() if a.yardstick else None, "core": a.core,
        "sizes": [{"label": label, "price": s.price(label), "run_id": runs.get(label)} for label in s.size_labels],
        "stacks": [{"stack": st.stack, "smallest": st.smallest.size if st.smallest else None,
                    "borderline": st.borderline.size if st.borderline else None,
                    "cpu_us_per_request": st.page_cpu.cpu_us_per_request if st.page_cpu else None,
                    "sizes": [{"size": c.size, "label": c.label, "capacity": c.capacity, "low": c.low, "high": c.high,
                               "fitted": c.fitted, "enough": c.enough.value, "memory_bytes": c.memory_bytes,
                               "hits_per_day": a.hits(c.capacity), "visits_per_day": a.visits(c.capacity),
                               "probes": c.probes, "cpus": c.cpus,
                               "cpus_on_core": a.on_core(c.cpus), "cpu_us_per_request": c.cpu_us_per_request,
                               "tuning_id": c.tuning.id if c.tuning else None,
                               "pool_size": c.tuning.chosen_size if c.tuning else None, "searched": c.probes > 0,
                               "slow_cost": c.tuning.slow_cost.as_dict() if c.tuning and c.tuning.slow_cost
                               else None}
                              for c in st.sizes]}
                   for st in a.stacks],
    }


def document(a: RunAnalysis, tunings: Mapping[int, StoredTuning] | None = None,
             sizing: tuple[SizingAnswer, str | None] | None = None) -> dict[str, Any]:
    """`sizing`: the stored sizing this run measured a size of, and its SLO in words
    (commands/sizing.py read); the document's `sizing` is left out without one."""
    run, vs = a.run, a.verdicts
    baseline, band = (vs.baseline, vs.band) if vs else (None, run.checked.equivalence)
    return {
        "schema_version": SCHEMA_VERSION,
        "run": {"id": run.id, "plan_name": run.plan_name, "status": run.status.value,
                "started_at": run.started_at, "finished_at": run.finished_at, "baseline": baseline,
                "equivalence_band": band, "stop": dict(run.stop.document) if run.stop else None,
                "environment": dict(run.environment.document)},
        # Per URL (a mix, a page's assets) only here: a CSV row has no room for a list.
        "cells": [row | {"per_url": metrics.per_url(c.cell), "failure_details": failure_details(c),
                         "warmup_windows": [[w.seconds, w.completed] for w in c.cell.warmup.windows]
                         if c.cell.warmup else []}
                  for row, c in zip(cell_rows(a.cells), a.cells)],
        "time_to_steady": [{"stack_label": r.stack_label, "seconds": list(r.seconds), "median_s": r.median_s,
                            "not_steady": r.not_steady, "cap_s": r.cap_s, "tolerance": r.tolerance}
                           for r in a.steady],
        "verdicts": verdict_rows(vs),
        "protocol_verdicts": verdict_rows(a.protocols),
        "handshake_costs": [asdict(h) | {"cpu_us_per_connection": h.cpu_us_per_connection} for h in a.handshake_costs],
        "excluded": [_excluded(e) for e in (vs.excluded if vs else ())],
        "tunings": tuning_rows(a, tunings or {}),
        **({"sizing": sizing_part(*sizing, run.id)} if sizing else {}),
        "methods": {
            "unit": "run (one repetition of a cell); requests are never the unit",
            "ci": "95 % bootstrap percentile interval, fixed seed (stackbench/analysis/stats.py)",
            "test": "Welch's t on the logs of the values (the ratio of geometric means; Welch 1947), two-sided; "
                    "Mann-Whitney U where a value is <= 0; Holm-Bonferroni over each metric's comparisons; a verdict "
                    "needs the adjusted p < 0.05 and the CI excluding 1 on the same side (stackbench/analysis/stats.py)",
            "outcomes": "a repetition is invalid (a measurement failure: left out), served, or failed the load (a "
                        "result: counted with what it delivered; a side most of whose valid runs failed loses, "
                        "untested); engine-bound runs (the engine at its limit, the server's cores busy >= 90 %) "
                        "count as lower bounds of throughput (stackbench/analysis/outcomes.py, verdicts.py)",
            "warmup": "with the plan's `steady`, each stack start's first cell: windows of its load until, past "
                      "the first third of them, the later half's throughput is within the tolerance of the earlier "
                      "half's, at most the cap; a stack's time to steady is its fresh starts' "
                      "(stackbench/planning/steady.py)",
            "bottleneck": "per cell, the side at its limit over the measured window: the server when its cores were "
                          "busy >= 90 %, the engine when its busiest thread was, both, the machine (under a machine "
                          "profile, the stack and its services kept its CPU or CPU quota busy >= 90 %), or neither "
                          "(latency-bound, or a server that waited); null when a side's share is unknown "
                          "(stackbench/analysis/bottleneck.py)",
        },
    }


def write_document(a: RunAnalysis, out: TextIO, tunings: Mapping[int, StoredTuning] | None = None,
                   sizing: tuple[SizingAnswer, str | None] | None = None) -> None:
    json.dump(document(a, tunings, sizing), out, indent=2)
    out.write("\n")


def write_cells(cells: Sequence[CellAnalysis], out: TextIO) -> None:
    """The cells as CSV: one row per repetition, lists joined with ";"."""
    _csv(cell_rows(cells), CELL_FIELDS, out)


def write_verdicts(vs: verdicts.Verdicts | None, out: TextIO) -> None:
    _csv(verdict_rows(vs), VERDICT_FIELDS, out)


def _csv(rows: list[dict[str, Any]], fields: tuple[str, ...], out: TextIO) -> None:
    w = csv.DictWriter(out, fieldnames=fields, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (";".join(v) if isinstance(v, list) else v) for k, v in r.items()})
