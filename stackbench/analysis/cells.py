"""Each stored cell read once (pure): its figures (figures.py) and whether it may enter a
verdict (verdicts.invalid_reasons). The run's analysis (run.py) and every renderer take
these, so no cell's figures or validity is worked out twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from stackbench.analysis import figures, questions, verdicts
from stackbench.analysis.figures import CellFigures
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class CellAnalysis:
    cell: StoredCell  # as stored: what a chart reads beside the figures (samples, configs)
    figures: CellFigures
    invalid_reasons: tuple[str, ...]  # why it is kept out of verdicts (caveat codes, "failed"); () when valid
    at_level: bool  # it answers a level the plan named (not a capacity search's probe)

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons


def of(cells: Iterable[StoredCell]) -> tuple[CellAnalysis, ...]:
    """Every cell, in the order given."""
    cells = list(cells)
    named = {id(c) for c in questions.levels(cells)}
    return tuple(CellAnalysis(c, figures.of(c), verdicts.invalid_reasons(c), id(c) in named) for c in cells)


def group(cells: Sequence[CellAnalysis]) -> dict[Question, list[CellAnalysis]]:
    """The cells at a named level by question, in table order; within a question, in run
    order (questions.group)."""
    by: dict[Question, list[CellAnalysis]] = {}
    for c in sorted((c for c in cells if c.at_level), key=lambda c: (c.figures.question.sort_key(), c.figures.seq)):
        by.setdefault(c.figures.question, []).append(c)
    return by
