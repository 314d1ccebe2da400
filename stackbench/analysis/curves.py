"""A stack's curve: its figures at each load level a plan walked or swept (concurrency
or rate), in the order the levels were asked — the table a ramp, stages or a rate sweep
is read from, and the latency-against-throughput "hockey stick" of the report.

With repetitions each point is the median over the stack's runs at that level (all
runs: a curve shows what happened, gates included; verdicts use valid runs only)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from stackbench.analysis import figures, questions
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class Point:
    question: Question
    runs: int
    throughput: float | None
    p50_us: float | None
    p99_us: float | None
    errors: int | None  # failed + non-2xx, summed over the runs
    unserved: int | None  # connections without a response, the most in one run
    not_sent: int | None  # open loop: due requests never sent, summed
    cpu_us_per_request: float | None
    memory_peak_bytes: float | None
    procs_max: int | None
    page_mode: bool = False


@dataclass(frozen=True)
class Curve:
    stack_label: str
    workload: str
    keepalive: bool
    points: tuple[Point, ...]
    mode: str | None = None  # over TLS: questions.Question.mode() ("https full handshakes"); None in clear text


def of(cells: Iterable[StoredCell]) -> list[Curve]:
    """One curve per (stack, workload, keep-alive) with more than one level, points in
    the order of the first repetition's walk (run order)."""
    groups: dict[tuple[Any, ...], dict[Question, list[StoredCell]]] = {}
    for c in sorted(questions.levels(cells), key=lambda c: (c.repetition, c.seq)):
        q = questions.of(c)
        groups.setdefault((c.stack_label, q.workload, q.keepalive, q.mode() if q.tls else None), {}
                          ).setdefault(q, []).append(c)
    out = []
    for (label, workload, ka, mode), by_level in groups.items():
        if len(by_level) > 1:
            out.append(Curve(label, workload, ka, tuple(_point(q, cs) for q, cs in by_level.items()), mode))
    return out


def _point(q: Question, cells: list[StoredCell]) -> Point:
    fs = [figures.of(c) for c in cells if c.engine is not None]
    return Point(
        question=q, runs=len(cells),
        throughput=_median(f.throughput for f in fs), p50_us=_median(f.p50_us for f in fs),
        p99_us=_median(f.p99_us for f in fs),
        errors=_sum((f.requests_failed or 0) + (f.non_2xx or 0) for f in fs if f.requests_failed is not None),
        unserved=max((f.unserved.without_response for f in fs if f.unserved), default=None),
        not_sent=_sum(c.engine.requests.not_sent for c in cells if c.engine is not None),
        cpu_us_per_request=_median(f.cpu_us_per_request for f in fs),
        memory_peak_bytes=_median(f.memory_peak_bytes for f in fs),
        procs_max=max((f.procs_max for f in fs if f.procs_max is not None), default=None),
        page_mode=any(f.page_mode for f in fs),
    )


def _median(values: Iterable[float | None]) -> float | None:
    vs = [v for v in values if v is not None]
    return statistics.median(vs) if vs else None


def _sum(values: Iterable[int | None]) -> int | None:
    vs = [v for v in values if v is not None]
    return sum(vs) if vs else None
