"""Which side was the bottleneck of a repetition (pure): the load engine, the server, both,
or neither — from how busy each side's cores were over the measured window, with each
side's CPU per request beside it (a reader must see, per cell, how close the engine came
to its core's limit and how busy the server's cores were).

- The engine's share is its busiest thread's CPU over the measured phase as a share of
  one core (EngineResult.engine_busy; one thread is one core's worth of work, and the
  busiest one is the first to run out).
- The server's share is the stack's cgroup CPU over the window as a share of its cores
  (outcomes.server_busy: the same figure the validity gate takes).
- A side is at its limit from 0.90 of that: outcomes.SERVER_BUSY for the server, and the
  engine's own rule for itself (a thread busy >= 90 %: loadgen/README.md, the
  `engine_saturated` caveat) — both sides judged alike.
- MACHINE: under a machine profile (planning/machine.py: the small VPS, its CPUs or CPU
  quota shared by the stack and its services), the stack and its services together kept
  the machine's CPU busy from 0.90 of it — the stack alone may be well below (small-vps:
  PHP and MariaDB on 1 CPU, PHP ~80 %, MariaDB the rest): the machine was the limit, not
  "neither". Only there: without a profile the database is no part of the question.
  A cell ran under one when its CPU had a quota (pinning.server_cpu_quota) or its memory a
  limit (cost.memory_events): a profile of whole cores alone leaves no mark on a cell, and
  there the stack's own share decides as before.
- NEITHER: neither side was at its CPU limit, so the load was bound by something else —
  latency (one client at a time, a shaped network) or a server that waited (a sleeping
  script, a pool smaller than the clients, its database).

None, never a guess, when either side's share is unknown (no cgroup, an older engine):
knowing one side at its limit does not say whether the other was too.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from statistics import median
from typing import Iterable

from stackbench.analysis.outcomes import SERVER_BUSY
from stackbench.engine.result import EngineResult
from stackbench.model.cell import StoredCell

ENGINE, SERVER, BOTH, NEITHER, MACHINE = "engine", "server", "both", "neither", "machine"
SIDES = (SERVER, MACHINE, ENGINE, BOTH, NEITHER)  # the order a summary names them in
# The engine's own saturation rule (loadgen/src/report/mod.rs SATURATION, the
# `engine_saturated` caveat), so the word and the warning never disagree.
ENGINE_BUSY = 0.90


@dataclass(frozen=True)
class Bottleneck:
    """One repetition's two sides: each one's busy share (0..1) and CPU per completed
    request (µs), and which one limited the load (`side`; None: not known)."""

    engine_busy: float | None
    engine_cpu_us_per_request: float | None
    server_busy: float | None
    server_cpu_us_per_request: float | None
    side: str | None
    # Under a machine profile: the stack's and its services' CPU as a share of the machine's
    # (its cores, or its quota), and that CPU in cores (1.0, 0.5); None without a profile.
    machine_busy: float | None = None
    machine_cpus: float | None = None


@dataclass(frozen=True)
class Machine:
    """A machine profile's CPU as a cell used it: the share the stack and its services
    kept busy (None: not measured) and how many cores' worth the machine had."""

    busy: float | None
    cpus: float


def machine_of(cell: StoredCell) -> Machine | None:
    """The machine profile's CPU as this cell used it; None when the cell ran under none
    (or its mark is not on the cell: the module docstring)."""
    cost, pins = cell.cost, cell.pinning
    if pins.server_cpu_quota is None and cost.memory_events is None:
        return None
    cpus = pins.server_capacity
    if not cpus:
        return None
    if cost.cpu_total_us is None or not cost.window_us:
        return Machine(None, cpus)
    return Machine((cost.cpu_total_us + (cost.service_cpu_us or 0)) / (cost.window_us * cpus), cpus)


def of(engine: EngineResult | None, server_busy: float | None, server_cpu_us_per_request: float | None,
       engine_cpu_us_per_request: float | None, machine: Machine | None = None) -> Bottleneck | None:
    """None when the engine never ran (nothing was loaded, so nothing limited it)."""
    if engine is None:
        return None
    busy = engine.engine_busy
    # An engine document without the share may still say whether a thread saturated.
    engine_limit = busy >= ENGINE_BUSY if busy is not None else engine.engine_saturated
    server_limit = None if server_busy is None else server_busy >= SERVER_BUSY
    machine_limit = machine is not None and machine.busy is not None and machine.busy >= SERVER_BUSY
    found = side(engine_limit, server_limit)
    if machine_limit and found in (SERVER, NEITHER):
        found = MACHINE  # the machine's CPU, shared with its services, was what ran out
    elif machine_limit and found == ENGINE:
        found = BOTH
    return Bottleneck(busy, engine_cpu_us_per_request, server_busy, server_cpu_us_per_request, found,
                      machine.busy if machine else None, machine.cpus if machine else None)


def side(engine_at_limit: bool | None, server_at_limit: bool | None) -> str | None:
    if engine_at_limit is None or server_at_limit is None:
        return None
    if engine_at_limit:
        return BOTH if server_at_limit else ENGINE
    return SERVER if server_at_limit else NEITHER


@dataclass(frozen=True)
class BottleneckSummary:
    """Over a (question, stack)'s measured repetitions — invalid ones included: an
    engine-limited run is invalid *because* of its bottleneck, and belongs in the count —
    each side's median share and CPU per request, and how many runs each side limited."""

    runs: int  # measured repetitions
    engine_busy: float | None
    engine_cpu_us_per_request: float | None
    server_busy: float | None
    server_cpu_us_per_request: float | None
    sides: tuple[tuple[str, int], ...]  # (side, runs), most runs first (SIDES order on ties); unknown left out
    machine_busy: float | None = None  # under a machine profile: the median share (Bottleneck.machine_busy)
    machine_cpus: float | None = None

    @property
    def side(self) -> str | None:
        """The side every run with a known side agrees on; None when they differ or none is known."""
        return self.sides[0][0] if len(self.sides) == 1 else None


def summarize(found: Iterable[Bottleneck | None]) -> BottleneckSummary | None:
    """None when no repetition was measured."""
    bs = [b for b in found if b is not None]
    if not bs:
        return None
    counts = Counter(b.side for b in bs if b.side is not None)
    ordered = sorted(counts.items(), key=lambda kv: (-kv[1], SIDES.index(kv[0])))
    return BottleneckSummary(len(bs), _median(b.engine_busy for b in bs),
                             _median(b.engine_cpu_us_per_request for b in bs), _median(b.server_busy for b in bs),
                             _median(b.server_cpu_us_per_request for b in bs), tuple(ordered),
                             _median(b.machine_busy for b in bs), _median(b.machine_cpus for b in bs))


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None
