"""What every stage of a run reads, passed as one thing instead of ten parameters.

Three contexts, nested as the run goes: the `Session` (from the run lock to its release:
the plan, the store, the observer, the placed lab, its pinning, the connected clients),
the `Run` under way in it (a run id, the run's monitor, the lab whose loads go where the
plan sends them), and a `StartedStack` within the run (one start of one stack: the
instance, its versions, its monitor, its network). Each stage takes the contexts it
needs and the cell it works on; nothing here does anything.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from stackbench.errors import StackbenchError
from stackbench.events import Events
from stackbench.states import RunStatus
from stackbench.upkeep.idle import IdleState
from stackbench.upkeep.pinning import Pinning

if TYPE_CHECKING:
    from stackbench.hosts.clients import ClientSession
    from stackbench.monitor.run import RunMonitor
    from stackbench.monitor.session import StackMonitor
    from stackbench.network.topology import Topology
    from stackbench.planning.plan import Plan
    from stackbench.runner.lab import Lab
    from stackbench.stacks.lifecycle import StackInstance
    from stackbench.store import Store


@dataclass
class Options:
    workdir: Path | None = None
    keep_rundir: bool = False
    pinning: Pinning | None = None
    allow_remote_target: bool = False  # --allow-remote-target (target.py)


@dataclass
class Outcome:
    run_id: int
    status: RunStatus
    errors: list[StackbenchError] = field(default_factory=list)
    # How many repetitions ran and why they stopped: {"reason": "fixed" | "target" |
    # "power" | "decided" | "budget" | "cap", "repetitions": n, "worst_half_width": w,
    # "target": t, "open_pairs": k, "budget_s": b, "remeasured": cells measured again}
    stop: dict | None = None


@dataclass(frozen=True)
class Session:
    """A measuring session, everything checked and connected (session.py)."""

    plan: Plan
    store: Store
    events: Events
    options: Options
    lab: Lab  # placed: with a server on another host, its stack and monitor are the agent's there
    pins: Pinning
    clients: ClientSession | None
    idle: IdleState | None = None  # what this machine's idle cores did (upkeep/idle.py)


@dataclass(frozen=True)
class Run:
    """One run under way: the session's parts, the run's id and its monitor."""

    plan: Plan
    store: Store
    run_id: int
    events: Events
    options: Options
    lab: Lab  # with clients, its `load` spreads every load over them
    pins: Pinning
    monitor: RunMonitor
    # How fast each stack answered each question when last measured in this run
    # (runner/cell.py), so the next repetition's window is sized to it (planning/window.py).
    paces: dict = field(default_factory=dict)
    # … and each stack start's latest cell (by the instance's id): the pace a level climbed
    # to on the same start begins from, before its own question has one.
    start_paces: dict = field(default_factory=dict)

    @classmethod
    def within(cls, session: Session, run_id: int, monitor: RunMonitor) -> Run:
        lab = session.lab
        # With clients, every load of the run is spread over them.
        if session.clients:
            lab = replace(lab, load=session.clients.load, background_load=lab.load)
        return cls(session.plan, session.store, run_id, session.events, session.options, lab, session.pins,
                   monitor)


@dataclass(frozen=True)
class StartedStack:
    """One start of a stack, what its cells are measured on (starts.py)."""

    instance: StackInstance
    versions: dict
    topo: Topology | None  # None on loopback
    monitor: StackMonitor | None = None  # once the stack is up and verified
    fresh: bool = True  # no cell measured on it yet: its first cell's warm-up is the start's
