"""Each (question, stack) as one point of a chart against the load level: a metric's
median and CI over the valid runs (summary.py), or — when no run of it was valid — the
median over every measured run, flagged, so a chart still shows what happened at a load
the stack could not serve (its runs never enter a verdict)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.analysis import stats, summary, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class LevelPoint:
    question: Question
    stack_label: str
    runs: int
    valid: int
    value: stats.Summary  # over the valid runs; over all measured runs when all_runs
    all_runs: bool  # no run was valid: the value describes runs left out of verdicts
    reasons: tuple[str, ...]  # why runs were left out (caveat codes, "failed"), each once
    page_mode: bool


def of(cells: Iterable[StoredCell], metric: str,
       summaries: list[summary.CellSummary] | None = None) -> list[LevelPoint]:
    """`metric`: a verdicts.METRICS key. Points in table order (summary.summarize);
    `summaries`: the cells' summaries when already computed (run.py computes them once)."""
    cells = list(cells)
    _, excluded = verdicts.split_valid(cells)
    every = verdicts.samples(c for c in cells if c.engine is not None)
    out = []
    for s in (summary.summarize(cells) if summaries is None else summaries):
        value, fallback = s.metrics[metric], False
        if s.valid == 0:
            fs = every.get((s.question, s.stack_label), [])
            value = stats.summarize([float(v) for v in (verdicts.METRIC[metric].value(f) for f in fs)
                                     if v is not None])
            fallback = True
        reasons = dict.fromkeys(r for e in excluded if e.question == s.question and e.stack_label == s.stack_label
                                for r in e.reasons)
        out.append(LevelPoint(s.question, s.stack_label, s.runs, s.valid, value, fallback, tuple(reasons),
                              s.page_mode))
    return out
