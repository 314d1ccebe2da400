"""Visitor classes side by side (pure): per stack and level, the measured visitors alone
and with the other classes beside them — their throughput and p99, what the other
classes got, and what the server held (busy workers from its own status pages,
processes from its cgroup). Medians over the repetitions (every run counts: the table
shows what happened; the verdicts in backgrounds.py use valid runs only)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any, Iterable

from stackbench.analysis.cells import CellAnalysis
from stackbench.analysis.questions import Question


@dataclass(frozen=True)
class ClassesRow:
    """One stack at one question (its background included); every figure a median over
    the repetitions, None when no repetition had it."""

    stack_label: str
    question: Question
    requests_per_s: float | None  # the measured visitors'
    p99_us: float | None
    others_completed: float | None  # the other classes' responses, summed per run
    others_p99_us: float | None  # the slowest other class's p99, per run
    busy: float | None  # the most workers busy at once, summed over the stack's servers
    unanswered: bool  # no busy figure because no status page answered (every worker held)
    procs: float | None  # the stack's processes, the most at once


def _median(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def of(cells: Iterable[CellAnalysis]) -> list[ClassesRow]:
    """Rows by stack, then question (table order), over the cells at a named level."""
    groups: dict[tuple[str, Question], list[CellAnalysis]] = {}
    for c in sorted((c for c in cells if c.at_level),
                    key=lambda c: (c.figures.stack_label, c.figures.question.sort_key(), c.figures.seq)):
        groups.setdefault((c.figures.stack_label, c.figures.question), []).append(c)
    out = []
    for (label, q), group in groups.items():
        others = [c.cell.classes.others if c.cell.classes else {} for c in group]
        servers = [c.cell.classes.server if c.cell.classes else None for c in group]
        busy = _median(x.busy if x else None for x in servers)
        out.append(ClassesRow(
            stack_label=label, question=q,
            requests_per_s=_median(c.figures.requests_per_s for c in group),
            p99_us=_median(c.figures.latency_p99_us for c in group),
            others_completed=_median(sum(o.completed or 0 for o in x.values()) if x else None for x in others),
            others_p99_us=_median(max((o.latency_p99_us for o in x.values() if o.latency_p99_us),
                                      default=None) if x else None for x in others),
            busy=busy, unanswered=busy is None and any(x.unanswered for x in servers if x),
            procs=_median(c.figures.procs_max for c in group)))
    return out
