"""The way up against the way down: in an up-then-down ramp each level is measured twice
on one running stack, and a pool that grows lazily and shrinks eagerly (prefork, FPM
dynamic) answers differently. Each stack's way down is compared with its own way up,
level by level, along the ramp's axis (axes.RAMP) with the same statistics as stacks
against a baseline (the run is the unit, Holm over all the comparisons). A way that
failed the load (prefork whose clients went unserved on the way up) loses to the other
in words: "way up fails this load: …" (verdicts.decided)."""

from __future__ import annotations

from stackbench.analysis import axes, questions, stats, verdicts
from stackbench.model.cell import StoredCell


def decide(cells: list[StoredCell], band: float = stats.DEFAULT_EQUIVALENCE) -> verdicts.Verdicts | None:
    """None when the run walked no level both ways."""
    both = [c for c in questions.levels(cells) if c.leg in ("up", "down")]
    if not any(c.leg == "down" for c in both):
        return None
    return verdicts.decide(both, axes.UP, axis=axes.RAMP, band=band)
