"""How often a cache answered: the engine counts the values of the headers a stack's
cache sets (X-Cache, X-Cache-Status; `count_headers` of the stack). The hit ratio is
HIT answers over all answers that carried the header — the figure caveats.py warns
about, per run and over a question's valid runs."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.analysis import questions, stats, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell

HIT = "HIT"


@dataclass(frozen=True)
class HitRatio:
    question: Question
    stack_label: str
    header: str
    ratio: stats.Summary  # share 0…1, over the valid runs


def of_cell(cell: StoredCell) -> dict[str, float]:
    """{header: share of its answers that were HIT}; headers never answered are left out."""
    out: dict[str, float] = {}
    if cell.engine is None:
        return out
    for header, values in cell.engine.header_counts.items():
        answered = sum(values.values())
        if answered:
            out[header] = values.get(HIT, 0) / answered
    return out


def by_question(cells: Iterable[StoredCell]) -> list[HitRatio]:
    valid, _ = verdicts.split_valid(cells)
    ratios: dict[tuple[Question, str, str], list[float]] = {}
    for c in sorted(valid, key=lambda c: c.seq):
        for header, share in of_cell(c).items():
            ratios.setdefault((questions.of(c), c.stack_label, header), []).append(share)
    return [HitRatio(q, label, header, stats.summarize(vs))
            for (q, label, header), vs in sorted(ratios.items(), key=lambda kv: kv[0][0].sort_key())]
