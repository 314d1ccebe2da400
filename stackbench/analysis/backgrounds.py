"""The measured visitors alone against the same visitors with others beside them (50
slow phones, say): for each stack, level by level, what the other visitors did to the
measured ones' throughput and latency — along the visitors' axis (axes.VISITORS) with the
same statistics as stacks against a baseline (the run is the unit, Holm over all the
comparisons). A stack that spoon-feeds slow visitors from a buffer shows no difference;
one that gives each a worker does — or, when the slow ones hold every worker, fails the
load: "with slow fails this load: 16 of 16 measured visitors unserved …"
(verdicts.decided)."""

from __future__ import annotations

from stackbench.analysis import axes, questions, stats, verdicts
from stackbench.model.cell import StoredCell


def decide(cells: list[StoredCell], band: float = stats.DEFAULT_EQUIVALENCE) -> verdicts.Verdicts | None:
    """None when no cell of the run had other visitors beside the measured ones."""
    cells = questions.levels(cells)
    if not any((c.background or "none") != "none" for c in cells):
        return None
    return verdicts.decide(cells, axes.ALONE, axis=axes.VISITORS, band=band)
