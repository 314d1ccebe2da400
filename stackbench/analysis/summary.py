"""Each (question, stack) over its repetitions: how many runs, how many were valid, and
each metric's median with its CI and spread (stats.summarize), valid runs only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.analysis import stats, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class CellSummary:
    question: Question
    stack_label: str
    runs: int
    valid: int
    metrics: dict[str, stats.Summary]  # by verdicts.METRICS key
    page_mode: bool = False  # throughput is page views/s, latencies page load times
    # Shown beside the stack's own cost, never in a verdict: the services' (a database's)
    # memory and CPU per request, and the share of valid runs with opcache in force.
    extras: dict[str, stats.Summary] | None = None
    opcache_runs: tuple[int, int] | None = None  # (runs with opcache on, runs read back)
    # A machine profile's memory limit: processes OOM-killed over *all* the runs (a run the
    # kills made invalid still killed them); None without a limit.
    oom_kills: int | None = None


def summarize(cells: Iterable[StoredCell]) -> list[CellSummary]:
    cells = list(cells)
    valid, _ = verdicts.split_valid(cells)
    every = verdicts.samples(cells)
    counts = {key: len(fs) for key, fs in every.items()}
    good = verdicts.samples(valid)
    out = []
    # by question; within one, stacks in the order the plan ran them (sorted is stable)
    for (q, label), total in sorted(counts.items(), key=lambda kv: kv[0][0].sort_key()):
        fs = good.get((q, label), [])
        read = [f.php_opcache for f in fs if f.php_opcache is not None]
        out.append(CellSummary(q, label, total, len(fs), {
            m.key: _summary(m.value(f) for f in fs) for m in verdicts.METRICS},
            page_mode=any(f.page_mode for f in fs),
            extras={"service_memory": _summary(f.service_memory_peak_bytes for f in fs),
                    "service_cpu_per_request": _summary(f.service_cpu_us_per_request for f in fs)},
            opcache_runs=(sum(read), len(read)) if read else None,
            oom_kills=_total(f.oom_kills for f in every[(q, label)])))
    return out


def _summary(values: Iterable[float | None]) -> stats.Summary:
    return stats.summarize([float(v) for v in values if v is not None])


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
