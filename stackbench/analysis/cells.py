"""Each stored cell read once (pure): its figures (figures.py) and its outcome
(outcomes.py: an invalid measurement, kept out of verdicts, or a valid one that served
the load or failed it). The run's analysis (run.py) and every renderer take these, so no
cell's figures or outcome is worked out twice."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from stackbench.analysis import figures, outcomes, questions
from stackbench.analysis.figures import CellFigures
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class CellAnalysis:
    cell: StoredCell  # as stored: what a chart reads beside the figures (samples, configs)
    figures: CellFigures
    invalid_reasons: tuple[str, ...]  # why it is kept out of verdicts (measurement failures); () when valid
    at_level: bool  # it answers a level the plan named (not a capacity search's probe)

    @property
    def valid(self) -> bool:
        return not self.invalid_reasons

    @property
    def outcome(self) -> outcomes.Outcome:
        """Invalid, served (perhaps engine-bound) or failed the load, and how."""
        assert self.figures.outcome is not None  # figures.of always sets it
        return self.figures.outcome


def of(cells: Iterable[StoredCell]) -> tuple[CellAnalysis, ...]:
    """Every cell, in the order given."""
    cells = list(cells)
    named = {id(c) for c in questions.levels(cells)}
    out = []
    for c in cells:
        f = figures.of(c)
        out.append(CellAnalysis(c, f, f.outcome.invalid_reasons if f.outcome else (), id(c) in named))
    return tuple(out)


def group(cells: Sequence[CellAnalysis]) -> dict[Question, list[CellAnalysis]]:
    """The cells at a named level by question, in table order; within a question, in run
    order (questions.group)."""
    by: dict[Question, list[CellAnalysis]] = {}
    for c in sorted((c for c in cells if c.at_level), key=lambda c: (c.figures.question.sort_key(), c.figures.seq)):
        by.setdefault(c.figures.question, []).append(c)
    return by
