"""The checked plan a run stored (planning/plan.py's Plan.checked(): every default
resolved), read back once (store/rows.py) into what the readers of a stored run ask of
it. Not planning's Plan itself: the model sits below planning, and analysis imports no
planning (docs/architecture.md), so these are the plan's fields that analysis and the
reports read, typed; planning parses what only it reads (the hosts, for a resume)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

LOOPBACK = "loopback"  # the profile of a plan that names none (network/profiles.py)


@dataclass(frozen=True)
class CheckedLoad:
    """The plan's load model (planning/loads.py's LoadModel), as readers use it."""

    kind: str = "closed"  # closed | rate | stages | capacity
    walk: bool = False  # its levels walked on one running stack (a ramp, stages, a search)
    # A capacity search's target and parameters, as fields: analysis/capacity.py's SLO
    # and SearchParams read them (None: not a capacity run).
    slo: Mapping[str, Any] | None = None
    search: Mapping[str, Any] | None = None

    @property
    def walked(self) -> bool:
        """The load was walked or swept (ramps, stages, rate sweeps): curves say the most."""
        return self.walk or self.kind in ("rate", "stages")

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckedLoad:
        return cls(str(d.get("kind") or "closed"), bool(d.get("walk")), d.get("slo") or None,
                   d.get("search") or None)


@dataclass(frozen=True)
class CheckedStack:
    """One of the plan's stacks (planning/plan.py's StackVariant), as readers use it."""

    id: str
    label: str
    # knobs = "tuned": the stored tuning whose chosen pool it ran with (runner/tune.py
    # resolve); None: its knobs were the plan's
    tuning: int | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckedStack:
        tuning = d.get("tuning")
        return cls(str(d["id"]), str(d.get("label") or d["id"]), int(tuning) if tuning is not None else None)


@dataclass(frozen=True)
class CheckedPlan:
    baseline: str | None = None  # the stack the others are compared with (None: no verdicts)
    equivalence: float | None = None  # the band of "equivalent" (None: not stored)
    load: CheckedLoad = field(default_factory=CheckedLoad)
    # The network profiles the run used, by name: those swept, then every other one a
    # visitor class used.
    profiles: tuple[str, ...] = (LOOPBACK,)
    hosts: Mapping[str, Any] = field(default_factory=dict)  # planning/hosts.py reads it
    stacks: tuple[CheckedStack, ...] = ()  # in the plan's order (() in a store before v4)

    @property
    def tunings(self) -> dict[str, int]:
        """Each tuned stack's label → the stored tuning it ran with."""
        return {s.label: s.tuning for s in self.stacks if s.tuning is not None}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> CheckedPlan:
        names = [str(p["name"]) for p in d.get("networks") or [{"name": LOOPBACK}]]
        names += [str(n) for n in d.get("links") or {} if n not in names]
        equivalence = d.get("equivalence")
        return cls(d.get("baseline"), float(equivalence) if equivalence is not None else None,
                   CheckedLoad.from_dict(d.get("load") or {}), tuple(names), d.get("hosts") or {},
                   tuple(CheckedStack.from_dict(s) for s in d.get("stacks") or ()))
