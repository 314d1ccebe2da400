"""The measured visitors alone against the same visitors with others beside them (50
slow phones, say): for each stack, level by level, what the other visitors did to the
measured ones' throughput and latency — with the same statistics as stacks against a
baseline (the run is the unit, Holm over all the comparisons). A stack that spoon-feeds
slow visitors from a buffer shows no difference; one that gives each a worker does — or,
when the slow ones hold every worker, fails the load: "with slow fails this load: 16 of
16 measured visitors unserved …" (verdicts.decided)."""

from __future__ import annotations

from dataclasses import replace

from stackbench.analysis import questions, stats, verdicts
from stackbench.model.cell import StoredCell

ALONE = "alone"


def side(background: str) -> str:
    return ALONE if background == "none" else f"with {background}"


def decide(cells: list[StoredCell], band: float = stats.DEFAULT_EQUIVALENCE) -> verdicts.Verdicts | None:
    """None when no cell of the run had other visitors beside the measured ones."""
    cells = questions.levels(cells)
    if not any((c.background or "none") != "none" for c in cells):
        return None
    as_sides = [replace(c, stack_label=side(c.background or "none"), background="none",
                        workload=f"{c.stack_label} · {c.workload}") for c in cells]
    return verdicts.decide(as_sides, ALONE, band=band, self_comparison=True)
