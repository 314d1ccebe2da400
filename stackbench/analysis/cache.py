"""How often a cache answered, two ways: the engine counts the values of the headers a
stack's cache sets on each answer (X-Cache; `count_headers` of the stack), and the cache
counts itself over the window (StoredCost.cache: Varnish's varnishstat). The hit ratio is
HIT answers over all answers that carried the header, and the cache's hits over every
request it handled — the figure caveats.py warns about, per run and over a question's
valid runs; beside it, the share the cache passed to the back end (a logged-in visitor's
request, which must reach PHP)."""

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
    header: str | None  # the header counted (X-Cache); None: the cache's own counts alone
    ratio: stats.Summary  # share 0…1 of the header's answers that were HIT, over the valid runs
    # The cache's own count over the same runs (None: it counts nothing, or an older store):
    server: str | None = None  # which server counted ("varnishd")
    server_ratio: stats.Summary | None = None  # its hits over every request it handled
    server_passes: stats.Summary | None = None  # the share it passed to the back end


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
    """A row per question, stack and header counted (or the cache's own counts alone),
    with the cache's own figures beside the header's."""
    valid, _ = verdicts.split_valid(cells)
    ratios: dict[tuple[Question, str], dict[str, list[float]]] = {}
    own: dict[tuple[Question, str], tuple[str, list[float], list[float]]] = {}
    for c in sorted(valid, key=lambda c: c.seq):
        key = (questions.of(c), c.stack_label)
        for header, share in of_cell(c).items():
            ratios.setdefault(key, {}).setdefault(header, []).append(share)
        counts = c.cost.cache
        if counts is not None and counts.hit_ratio is not None and counts.pass_share is not None:
            _, own_hits, own_passes = own.setdefault(key, (counts.server, [], []))
            own_hits.append(counts.hit_ratio)
            own_passes.append(counts.pass_share)
    out = []
    for key in sorted(set(ratios) | set(own), key=lambda k: (k[0].sort_key(), k[1])):
        server = own[key][0] if key in own else None
        hits, passes = own[key][1:] if key in own else ([], [])
        server_ratio = stats.summarize(hits) if hits else None
        server_passes = stats.summarize(passes) if passes else None
        by_header: dict[str | None, list[float]] = {None: hits}
        if key in ratios:
            by_header = {h: shares for h, shares in ratios[key].items()}
        for counted, shares in sorted(by_header.items(), key=lambda kv: kv[0] or ""):
            out.append(HitRatio(key[0], key[1], counted, stats.summarize(shares), server, server_ratio,
                                server_passes))
    return out
