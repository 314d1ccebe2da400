"""How a cell's stack was warmed before its measured window (runner/warmup.py makes it,
the store keeps it as cells.warmup_json): a fixed time, or windows of the cell's load
until its throughput was steady (planning/steady.py) — how long that took, whether it got
there within the cap, and each window, so a reader sees the climb.

A cell whose stack had just started (`fresh`) carries its start's time to steady: the
JIT's compiling, the opcache's first compile, the children prefork spawned."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping


@dataclass(frozen=True)
class WarmupWindow:
    seconds: float  # how long its load lasted
    completed: int  # responses in it

    @property
    def per_s(self) -> float:
        return self.completed / self.seconds if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class StoredWarmup:
    seconds: float  # load before the measured window (the windows' sum, or the fixed warm-up)
    # True: steady within the cap; False: the cap came first (measured anyway, the cell
    # says so); None: a fixed warm-up, not judged.
    steady: bool | None
    fresh: bool  # the first cell on a freshly started stack: its time is the start's
    windows: tuple[WarmupWindow, ...] = ()
    tolerance: float | None = None  # the rule's, when judged
    cap_s: float | None = None
    change: float | None = None  # the last judgement: the later windows' throughput against the earlier ones'

    @property
    def judged(self) -> bool:
        return self.steady is not None

    def as_dict(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "steady": self.steady, "fresh": self.fresh,
                "windows": [[w.seconds, w.completed] for w in self.windows], "tolerance": self.tolerance,
                "cap_s": self.cap_s, "change": self.change}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> StoredWarmup:
        return cls(float(d.get("seconds") or 0.0), d.get("steady"), bool(d.get("fresh")),
                   tuple(WarmupWindow(float(s), int(n)) for s, n in d.get("windows") or ()),
                   d.get("tolerance"), d.get("cap_s"), d.get("change"))
