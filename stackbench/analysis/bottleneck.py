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

ENGINE, SERVER, BOTH, NEITHER = "engine", "server", "both", "neither"
SIDES = (SERVER, ENGINE, BOTH, NEITHER)  # the order a summary names them in
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


def of(engine: EngineResult | None, server_busy: float | None, server_cpu_us_per_request: float | None,
       engine_cpu_us_per_request: float | None) -> Bottleneck | None:
    """None when the engine never ran (nothing was loaded, so nothing limited it)."""
    if engine is None:
        return None
    busy = engine.engine_busy
    # An engine document without the share may still say whether a thread saturated.
    engine_limit = busy >= ENGINE_BUSY if busy is not None else engine.engine_saturated
    server_limit = None if server_busy is None else server_busy >= SERVER_BUSY
    return Bottleneck(busy, engine_cpu_us_per_request, server_busy, server_cpu_us_per_request,
                      side(engine_limit, server_limit))


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
                             _median(b.server_cpu_us_per_request for b in bs), tuple(ordered))


def _median(values: Iterable[float | None]) -> float | None:
    known = [v for v in values if v is not None]
    return median(known) if known else None
