"""How many repetitions a run measured and why it stopped (runner/repetitions.py writes
it; the store keeps it as runs.stop_json)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class RepetitionStop:
    reason: str | None  # fixed | target | power | cap | decided | budget
    repetitions: int | None
    worst_half_width: float | None = None  # the widest compared pair's CI half-width (None: not computable)
    target: float | None = None  # the plan's target_ci
    open_pairs: int | None = None
    # Power (analysis/power.py), when it was judged: the difference to find, the family
    # it is found among, the runs a side the noisiest pair needs (None: more than the most).
    detect: float | None = None
    family: int | None = None
    runs_needed: int | None = None
    budget_s: float | None = None  # the plan's time budget
    remeasured: int | None = None  # invalid cells measured again
    document: Mapping[str, Any] = field(default_factory=dict, compare=False)  # as stored: export writes it

    @property
    def judged_power(self) -> bool:
        return self.detect is not None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> RepetitionStop:
        return cls(d.get("reason"), d.get("repetitions"), d.get("worst_half_width"), d.get("target"),
                   d.get("open_pairs"), d.get("detect"), d.get("family"), d.get("runs_needed"), d.get("budget_s"),
                   d.get("remeasured"), dict(d))
