"""Each stack's time to steady: how long its fresh starts took, under load, to serve at a
steady rate (planning/steady.py) — a cost of its own, beside what it then served (a JVM's
JIT compiling, PHP's opcache compiling each script, prefork spawning children).

Read from the warm-ups stored with the cells (model/warmup.py): a start's is its first
cell's. Pure; None where not computable.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Sequence

from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class StackSteady:
    stack_label: str
    seconds: tuple[float, ...]  # each fresh start's warm-up, in run order (a capped one: its cap)
    not_steady: int  # of those starts, how many reached the cap still moving
    cap_s: float | None  # the rule's cap (the largest seen)
    tolerance: float | None

    @property
    def starts(self) -> int:
        return len(self.seconds)

    @property
    def median_s(self) -> float | None:
        return statistics.median(self.seconds) if self.seconds else None

    @property
    def low_s(self) -> float | None:
        return min(self.seconds, default=None)

    @property
    def high_s(self) -> float | None:
        return max(self.seconds, default=None)

    @property
    def never(self) -> bool:
        """No start became steady within the cap."""
        return bool(self.seconds) and self.not_steady == self.starts


def of(cells: Sequence[StoredCell]) -> list[StackSteady]:
    """Per stack, in the order the run measured them, the starts whose warm-up was judged
    (the plan's `steady`); [] when the run warmed for a fixed time alone."""
    by_stack: dict[str, list[StoredCell]] = {}
    for c in cells:
        w = c.warmup
        if w is not None and w.fresh and w.judged:
            by_stack.setdefault(c.stack_label, []).append(c)
    out = []
    for label, started in by_stack.items():
        warmups = [c.warmup for c in started if c.warmup is not None]
        caps = [w.cap_s for w in warmups if w.cap_s is not None]
        out.append(StackSteady(label, tuple(w.seconds for w in warmups), sum(1 for w in warmups if w.steady is False),
                               max(caps, default=None), warmups[0].tolerance))
    return out
