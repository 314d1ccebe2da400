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

    # The question, typed (planning/sizing.py wrote it):
    @property
    def target_rate(self) -> float:
        return float(self.question["target"]["rate"])

    @property
    def visits_per_day(self) -> float | None:
        v = self.question["target"].get("visits_per_day")
        return float(v) if v is not None else None

    @property
    def peak_factor(self) -> float:
        return float(self.question["target"].get("peak_factor") or 3.0)

    @property
    def requests_per_visit(self) -> float:
        return float(self.question["target"].get("requests_per_visit") or 1.0)

    @property
    def size_labels(self) -> list[str]:
        """The sizes as asked, in the plan's order."""
        return [str(s["label"]) for s in self.question["sizes"]]

    def price(self, label: str) -> float | None:
        """A size's price a month, when the plan gave one."""
        found = next((s.get("price") for s in self.question["sizes"] if s["label"] == label), None)
        return float(found) if found is not None else None
