"""A run's latency spectrum (HdrHistogram's percentile distribution): each percentile
the engine reports, placed at 1 / (1 − p) so that 90, 99, 99.9 and 99.99 % are evenly
spaced on a log axis (Gil Tene, "How NOT to measure latency"; HdrHistogram's plotter).
In page mode the spectrum is of page load times."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

STANDARD = ("50", "90", "99", "99.9", "99.99")  # the axis' marks


@dataclass(frozen=True)
class Point:
    percentile: str  # as the engine names it: "99.9"
    us: int

    @property
    def x(self) -> float:
        """1 / (1 − p): 2 at p50, 10 at p90, 100 at p99, …"""
        return 1 / (1 - float(self.percentile) / 100)


def of(cell: Mapping) -> list[Point]:
    """The measured run's percentiles below 100 % (the maximum has no place on this
    axis), in order; [] when nothing was measured."""
    doc = cell.get("engine") or {}
    key = "page_load_us" if cell.get("pages_per_s") is not None else "latency_us"
    pct = (doc.get(key) or {}).get("percentiles") or {}
    points = [Point(p, int(v)) for p, v in pct.items() if v is not None and float(p) < 100]
    return sorted(points, key=lambda p: float(p.percentile))


def percentile_us(cell: Mapping, percentile: str) -> int | None:
    """One percentile of a run's latency (from the intended send time in an open loop)."""
    pct = ((cell.get("engine") or {}).get("latency_us") or {}).get("percentiles") or {}
    value = pct.get(percentile)
    return None if value is None else int(value)
