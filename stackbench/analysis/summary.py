"""Each (question, stack) over its repetitions: how many runs, how many were valid, and
each metric's median with its CI and spread (stats.summarize), valid runs only."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping

from stackbench.analysis import stats, verdicts
from stackbench.analysis.questions import Question


@dataclass(frozen=True)
class CellSummary:
    question: Question
    stack_label: str
    runs: int
    valid: int
    metrics: dict[str, stats.Summary]  # by verdicts.METRICS key


def summarize(cells: Iterable[Mapping]) -> list[CellSummary]:
    cells = list(cells)
    valid, _ = verdicts.split_valid(cells)
    counts = {key: len(fs) for key, fs in verdicts.samples(cells).items()}
    good = verdicts.samples(valid)
    out = []
    # by question; within one, stacks in the order the plan ran them (sorted is stable)
    for (q, label), total in sorted(counts.items(), key=lambda kv: kv[0][0].sort_key()):
        fs = good.get((q, label), [])
        out.append(CellSummary(q, label, total, len(fs), {
            m.key: stats.summarize([float(v) for v in (m.value(f) for f in fs) if v is not None])
            for m in verdicts.METRICS}))
    return out
