"""A stored run, as the store gives it back."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stackbench.model.environment import Environment, IdleCores
from stackbench.model.network import Calibration
from stackbench.model.plan import CheckedPlan
from stackbench.model.stop import RepetitionStop
from stackbench.states import RunStatus


@dataclass(frozen=True)
class StoredRun:
    id: int
    started_at: str  # UTC, ISO 8601
    finished_at: str | None
    status: RunStatus
    error: str | None
    plan_name: str
    plan_source: str
    plan: dict[str, Any]  # the plan file's data as written
    plan_checked: CheckedPlan | None  # every default resolved (None: a store before v4)
    environment: Environment
    stop: RepetitionStop | None  # repetitions run and why they stopped (None: before v5)
    network: dict[str, Calibration] | None  # by profile, asked and measured (None: loopback only)

    @property
    def checked(self) -> CheckedPlan:
        """The checked plan; a store before v4 did not keep it: every field not known."""
        return self.plan_checked or CheckedPlan()

    # Idle cores (upkeep/idle.py), read in one place: what the run asked, and what its
    # cores did. Words, not imports: the model sits below the lab.
    @property
    def idle_asked(self) -> str:
        """The plan's cpu_idle as written, else what the run recorded it asked (the default
        of its day), else "as-is" — the default before the lab recorded it."""
        if "cpu_idle" in (self.plan or {}):
            return str(self.plan["cpu_idle"])  # the plan as written: a document, not typed
        return self._idle.asked or "as-is"

    @property
    def idle_regime(self) -> str:
        """What its idle cores did: "poll" (all held), "poll-engine" (the engine's), "as-is"."""
        held = self._idle
        return "poll" if held.polled else "poll-engine" if held.engine_polled else "as-is"

    @property
    def _idle(self) -> IdleCores:
        return self.environment.cpu_idle or IdleCores()


@dataclass(frozen=True)
class StoredSearch:
    """How one capacity search ended; its probes are the cells from `seq` on."""

    run_id: int
    seq: int  # the first probe's seq
    repetition: int
    stack_label: str
    workload: str
    keepalive: bool
    stopped: str  # converged | ceiling | floor | generator | probes | budget | failed (running: never ended)
    seconds: float | None  # wall time of the search
