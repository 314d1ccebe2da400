"""A stored sizing (a plan's `[sizing]`: runner/sizing.py): the question as asked, the
plan's stacks, and each size's capacity run. What each stack carried on each size is those
runs' capacity searches, read by analysis/sizing.py."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SizeRun:
    size: str  # the size's label ("0.5 CPU, 512 MiB")
    run_id: int


@dataclass(frozen=True)
class StoredSizing:
    id: int
    name: str
    question: dict[str, Any]  # planning/sizing.py SizingQuestion.as_dict: target, sizes
    stacks: tuple[str, ...]  # the plan's stack labels, in its order
    runs: tuple[SizeRun, ...]  # in the sizes' order (smallest asked first, as written)
    created_at: str

    @property
    def target_rate(self) -> float:
        return float(self.question["target"]["rate"])

    def size(self, label: str) -> dict[str, Any]:
        """The size's table as asked: its machine, price and label."""
        return next(s for s in self.question["sizes"] if s["label"] == label)
