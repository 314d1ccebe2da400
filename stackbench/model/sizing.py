"""A stored sizing (a plan's `[sizing]`: runner/sizing.py): the question as asked, the
plan's stacks, each size's capacity run, and the yardstick of the core the sizes were
measured on. What each stack carried on each size is those runs' capacity searches, read
by analysis/sizing.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

from stackbench.yardstick import Yardstick

DAY_S = 86_400


@dataclass(frozen=True)
class VisitModel:
    """A visit as a sizing in visits states it (the plan's [visit] to its workload at its
    one logged-in share, planning/sizing.py visit_model): what one visit costs, said
    beside every figure in visits. Kept in the sizing's question as it was asked."""

    pages: float  # pages a visit (planning/visits.py Visit.pages_a_visit)
    assets: int  # assets a visit fetches once, its browser keeping them for the visit
    think: str  # the think time, in words ("5 s mean think time")
    logged_in: float  # the share of the visitors who log in first, 0 to 1
    hits: float  # requests a visit (Visit.hits_a_visit): what hits a day count
    php: float  # requests a visit makes of PHP (Visit.php_a_visit): the tuning's rate

    def as_dict(self) -> dict[str, Any]:
        return {"pages_a_visit": self.pages, "assets_a_visit": self.assets, "think": self.think,
                "logged_in_share": self.logged_in, "hits_a_visit": self.hits, "php_a_visit": self.php}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "VisitModel":
        return cls(float(d["pages_a_visit"]), int(d["assets_a_visit"]), str(d["think"]), float(d["logged_in_share"]),
                   float(d["hits_a_visit"]), float(d["php_a_visit"]))


@dataclass(frozen=True)
class SizeRun:
    size: str  # the size's label ("0.5 CPU, 512 MiB")
    run_id: int | None  # its capacity run; None: every stack on it was skipped (below)
    # Under `until_enough`, the plan's stacks (labels) whose tuning at the target found no
    # pool meeting the SLO with the CPU busy, by that tuning's id: not enough, no search
    # (runner/sizing.py); their capacity is bounded by what the tuning served
    skipped: Mapping[str, int] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        """As stored in a sizing's runs_json (a size without skips as before: no migration)."""
        return {"size": self.size, "run_id": self.run_id} | ({"skipped": dict(self.skipped)} if self.skipped else {})

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SizeRun":
        run_id = d.get("run_id")
        return cls(str(d["size"]), int(run_id) if run_id is not None else None,
                   {str(k): int(v) for k, v in (d.get("skipped") or {}).items()})


@dataclass(frozen=True)
class StoredSizing:
    id: int
    name: str
    question: dict[str, Any]  # planning/sizing.py SizingQuestion.as_dict: target, sizes, core
    stacks: tuple[str, ...]  # the plan's stack labels, in its order
    runs: tuple[SizeRun, ...]  # in the order measured (`until_enough` bisects: the middle size first)
    created_at: str
    # The server's core, as each size's run measured it before it began, pooled
    # (Yardstick.pooled); None: not measured (no PHP there), or a store before v13
    yardstick: Yardstick | None = None

    # The question, typed (planning/sizing.py wrote it):
    @property
    def target_rate(self) -> float:
        return float(self.question["target"]["rate"])

    @property
    def visit(self) -> VisitModel | None:
        """The visit model of a target asked in visits a day (None: asked in hits or as a rate)."""
        v = self.question["target"].get("visit")
        return VisitModel.from_dict(v) if v else None

    @property
    def visits_per_day(self) -> float | None:
        """The target as asked in visits a day, with its visit model (`visit`); None otherwise."""
        t = self.question["target"]
        return float(t["visits_per_day"]) if t.get("visit") and t.get("visits_per_day") is not None else None

    @property
    def hits_per_day(self) -> float | None:
        """The target as asked in hits (requests) a day; None when asked as a rate or in
        visits (`visits_per_day`). A sizing stored before hits were named gave it as
        one-request visits, without a visit model: the same count."""
        t = self.question["target"]
        if t.get("hits_per_day") is not None:
            return float(t["hits_per_day"])
        if t.get("visit"):
            return None
        old = t.get("visits_per_day")  # the key of sizings stored before v13, a request each
        return float(old) * float(t.get("requests_per_visit") or 1.0) if old is not None else None

    @property
    def peak_factor(self) -> float:
        return float(self.question["target"].get("peak_factor") or 3.0)

    @property
    def core(self) -> float | None:
        """The plan's `core`: the yardstick of the user's core, to rescale the answer to."""
        core = self.question.get("core")
        return float(core) if core is not None else None

    @property
    def size_labels(self) -> list[str]:
        """The sizes as asked, in the plan's order."""
        return [str(s["label"]) for s in self.question["sizes"]]

    def price(self, label: str) -> float | None:
        """A size's price a month, when the plan gave one."""
        found = next((s.get("price") for s in self.question["sizes"] if s["label"] == label), None)
        return float(found) if found is not None else None

    def cpus(self, label: str) -> float | None:
        """A size's CPUs, as its machine table gave them (0.5: half a core's time)."""
        found = next((s.get("machine", {}).get("cpus") for s in self.question["sizes"] if s["label"] == label), None)
        return float(found) if found is not None else None
