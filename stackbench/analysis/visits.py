"""Visits per question and stack (pure): complete visits a second, a visit's duration (p50
and p99, from its start to its last page's last byte, think times included) and pages a
visit, each the median over the valid runs with its interval — beside the page views and
page load times the verdicts compare (figures.py: a visit cell's throughput)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.analysis import figures, questions, stats, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class VisitFigures:
    question: Question  # its logged_in: the share of the visitors who logged in
    stack_label: str
    per_s: stats.Summary
    p50_us: stats.Summary
    p99_us: stats.Summary
    pages: stats.Summary  # pages a visit


def by_question(cells: Iterable[StoredCell]) -> list[VisitFigures]:
    """A row per question of visits and stack, in the tables' order; none without visits."""
    valid, _ = verdicts.split_valid(cells)
    by: dict[tuple[Question, str], list[figures.CellFigures]] = {}
    for c in sorted(valid, key=lambda c: c.seq):
        f = figures.of(c)
        if f.visits_per_s is not None:
            by.setdefault((questions.of(c), c.stack_label), []).append(f)
    return [VisitFigures(q, label, _summary(f.visits_per_s for f in fs), _summary(f.visit_p50_us for f in fs),
                         _summary(f.visit_p99_us for f in fs), _summary(f.pages_per_visit for f in fs))
            for (q, label), fs in sorted(by.items(), key=lambda kv: (kv[0][0].sort_key(), kv[0][1]))]


def _summary(values: Iterable[float | int | None]) -> stats.Summary:
    return stats.summarize([float(v) for v in values if v is not None])
