"""A run's latency spectrum (HdrHistogram's percentile distribution): each percentile
the engine reports, placed at 1 / (1 − p) so that 90, 99, 99.9 and 99.99 % are evenly
spaced on a log axis (Gil Tene, "How NOT to measure latency"; HdrHistogram's plotter).
In page mode the spectrum is of page load times."""

from __future__ import annotations

from dataclasses import dataclass

from stackbench.engine.result import Latency
from stackbench.model.cell import StoredCell

STANDARD = ("50", "90", "99", "99.9", "99.99")  # the axis' marks


@dataclass(frozen=True)
class Point:
    percentile: str  # as the engine names it: "99.9"
    us: int

    @property
    def x(self) -> float:
        """1 / (1 − p): 2 at p50, 10 at p90, 100 at p99, …"""
        return 1 / (1 - float(self.percentile) / 100)


def of(cell: StoredCell) -> list[Point]:
    """The measured run's percentiles below 100 % (the maximum has no place on this
    axis), in order; [] when nothing was measured."""
    latency = _spectrum_of(cell)
    if latency is None:
        return []
    points = [Point(p, int(v)) for p, v in latency.percentiles_us.items() if v is not None and float(p) < 100]
    return sorted(points, key=lambda p: float(p.percentile))


def _spectrum_of(cell: StoredCell) -> Latency | None:
    """Page load times in page mode (pages per second known), else request latency."""
    e = cell.engine
    if e is None:
        return None
    if e.pages is not None and e.pages.per_s is not None:
        return e.pages.load
    return e.latency


def percentile_us(cell: StoredCell, percentile: str) -> int | None:
    """One percentile of a run's latency (from the intended send time in an open loop)."""
    return None if cell.engine is None else cell.engine.latency.percentile_us(percentile)
