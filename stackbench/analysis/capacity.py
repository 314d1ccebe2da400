"""Capacity under a latency target: "how many requests per second can this stack take
before p99 passes 50 ms?" — the service-level objective (SLO), the check of one probe
against it, and the search over arrival rates. Pure: the runner asks `Search` for the
next rate and tells it each probe's outcome; a report replays the same search over the
stored probes and gets the same probes and bracket.

The search, in three phases:
1. Bracketing (after Nighthawk's adaptive load controller and the usual bracketing of a
   monotone predicate): exponential steps from `start` (× `factor`) until a probe fails,
   then bisection between the highest passing rate and the lowest failing one until the
   interval is narrower than `precision`. A pass above a known failure never widens the
   bracket: the lowest failure is its upper end whatever passed above it.
2. `confirm` more probes of the bracket's low end; a failed one makes it the new upper
   end and the bisection goes on below it.
3. The edge: `edge` probes of an up-and-down series (Dixon & Mood 1948, JASA
   43:109–126) on rates `precision` apart in ratio, from the bracket's geometric middle:
   one step up after a probe met the SLO, one down after it missed — from the third probe
   of a run of one outcome on, the step doubles, and halves at a reversal (a bracket one unlucky miss put at half the
   edge, Apache at 500/s after a start-up stall at 1,000/s, was walked 5 % a probe and the
   search ran out of budget still meeting it: bench/RESULTS.md, "A rate counts only if it
   was served"). Near the edge a
   probe's outcome is a coin toss (met at 7,500 req/s after a miss at 6,250); this series
   puts the probes where the coin is fair, and the stack's capacity is the edge fitted to
   every probe of the search (analysis/capacity_edge.py: where a probe meets the SLO half
   the time, with a 95 % interval) — not the bracket, which one unlucky miss can put
   below the edge. The series walks out of a wrong bracket (a step a probe), so a lucky
   or unlucky probe during bracketing costs some steps, not the answer.
Deterministic: the same outcomes give the same rates (no random draws), so a stored search
can be replayed (`replay`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from stackbench.analysis import capacity_served
from stackbench.engine.result import EngineResult
from stackbench.states import CellStatus

# The engine's percentile table (loadgen/src/stats/histogram.rs PERCENTILES); an SLO
# may name any of them, and "max".
PERCENTILES = ("50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100")
# A probe whose generator could not send more than this share of the due requests did
# not offer the rate it names: it fails (the stack held every connection the lab gave).
NOT_SENT_SHARE = 0.005
MAX_PROBES = 60  # a hard bound on one search, whatever its time budget
# A probe long enough to hold this many responses at its rate: at capacity_served's 97 %,
# one request of 100 is a third of the tolerance (docs/methods/capacity.md).
PROBE_RESPONSES = 100


@dataclass(frozen=True)
class SLO:
    """What a stack must meet at a rate: latency percentiles (µs, from the intended send
    time, so a stall cannot hide), and at most `errors` failed or non-2xx responses and
    `unserved` connections that got no response (None: not checked)."""

    latency_us: dict[str, int]  # percentile ("99", "99.9", "100") -> at most this
    errors: int | None = 0
    unserved: int | None = 0

    def describe(self) -> str:
        parts = [f"{_pname(p)} ≤ {_ms(v)}" for p, v in self.latency_us.items()]
        if self.errors is not None:
            parts.append("no errors" if self.errors == 0 else f"errors ≤ {self.errors}")
        if self.unserved is not None:
            parts.append("every connection served" if self.unserved == 0 else f"unserved ≤ {self.unserved}")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return {"latency_us": self.latency_us, "errors": self.errors, "unserved": self.unserved}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "SLO":
        # As the checked plan stores it (as_dict), or a plan's own table: its one parser.
        return cls(dict(d["latency_us"]), d.get("errors"), d.get("unserved"))

    @property
    def latency_budget_us(self) -> int:
        """The loosest latency the SLO allows: what sizes the engine's connections."""
        return max(self.latency_us.values())


@dataclass(frozen=True)
class SearchParams:
    start: float = 100.0  # first rate probed, requests/s
    factor: float = 2.0  # exponential phase: × this after each pass (÷ after a first failure)
    precision: float = 0.05  # stop bisecting when (high − low) / low is at most this; the edge's step
    confirm: int = 0  # extra probes of the bracket's low end
    ceiling: float = 200_000.0  # never probe above this
    floor: float = 1.0  # never probe below this
    budget_s: float = 180.0  # wall time of one search, at most
    edge: int = 8  # probes of the up-and-down series around the edge (0: none, the bracket only)


@dataclass(frozen=True)
class Check:
    """One probe against the SLO: met or not, and the reasons in words-ready data."""

    met: bool
    reasons: tuple[str, ...] = ()  # e.g. "p99 12.3 ms > 10 ms", "3 errors"
    generator_limited: bool = False  # the engine saturated: the probe says nothing of the stack
    # A probe of visits: the visits a second its served pages carry (capacity_served.py),
    # the rate a capacity in visits is held at; None for requests (their served rate is
    # the probe's requests/s)
    visits_served_per_s: float | None = None


def check(status: CellStatus, error: str | None, result: EngineResult | None, slo: SLO) -> Check:
    """One probe against the SLO: the runner's record as it measures, a stored cell when
    a report replays the search. A probe without an engine result (its server failed)
    does not meet it."""
    if status != CellStatus.OK or result is None:
        return Check(False, ("the stack failed" + (f": {error}" if error else ""),))
    reasons = []
    # Of visits, the SLO is the page loads' (a page and its assets, from when the visitor
    # wanted it: docs/methods/capacity.md, "Visits"); of requests, the requests'.
    visits = result.visits
    latency = result.pages.load if visits is not None and result.pages and result.pages.load else result.latency
    for p, limit in slo.latency_us.items():
        value = latency.percentiles_us.get(p)
        if value is None:
            reasons.append(f"{_pname(p)}: nothing completed")
        elif value > limit:
            reasons.append(f"{_pname(p)} {_ms(value)} > {_ms(limit)}")
    req = result.requests
    # Requests still unanswered at the end, older than the loosest latency allowed, would
    # have broken it: the latency table cannot show them (they never completed).
    oldest = req.in_flight_oldest_us
    if oldest is not None and oldest > slo.latency_budget_us:
        reasons.append(f"requests unanswered at the end, the oldest {_ms(oldest)}")
    due, not_sent = req.due, req.not_sent
    if due and not_sent and not_sent > NOT_SENT_SHARE * due:
        reasons.append(f"{not_sent:,} of {due:,} due requests never sent (every connection busy)")
    if visits is not None and visits.due and visits.not_started and visits.not_started > NOT_SENT_SHARE * visits.due:
        reasons.append(f"{visits.not_started:,} of {visits.due:,} due visits never started (every visitor busy)")
    # A rate counts only if it was served (capacity_served.py): the share of what could be
    # answered in the window, and a queue that did not grow.
    served = capacity_served.of(result)
    if served is not None:
        if served.share < capacity_served.SERVED_SHARE:
            unit = " visits" if visits is not None else ""
            reasons.append(f"served {_rate(served.served_per_s)}{unit}/s of {_rate(served.offered_per_s)}{unit}/s "
                           f"offered ({min(served.share, 1.0):.0%} of what it could answer)")
        if served.growing(slo.latency_budget_us):
            assert served.first_p50_us is not None and served.last_p50_us is not None
            reasons.append(f"the queue grew: p50 {_ms(served.first_p50_us)} in the probe's first third, "
                           f"{_ms(served.last_p50_us)} in its last")
    errors = req.failed + req.non_2xx
    if slo.errors is not None and errors > slo.errors:
        reasons.append(f"{errors:,} errors")
    unserved = result.clients.without_response
    if slo.unserved is not None and unserved is not None and unserved > slo.unserved:
        reasons.append(f"{unserved} connections unserved")
    return Check(not reasons, tuple(reasons), generator_limited=bool(result.engine_saturated),
                 visits_served_per_s=served.served_per_s if visits is not None and served is not None else None)


@dataclass(frozen=True)
class Probe:
    rate: float
    met: bool
    generator_limited: bool = False


@dataclass
class Search:
    """The search (the module docstring's three phases). `next_rate()` says what to
    probe (None: done, `stopped` says why); `record()` takes the outcome. Deterministic:
    the same outcomes give the same rates, so a stored search can be replayed (`replay`)."""

    params: SearchParams
    probes: list[Probe] = field(default_factory=list)
    stopped: str | None = None  # converged | ceiling | floor | generator | probes | budget
    # The up-and-down series, once begun: its middle rate, where in `probes` it began,
    # and its level (steps of × (1 + precision) from the middle).
    _middle: float | None = None
    _began: int = 0
    _level: int = 0
    _streak: int = 0  # the series' run of one outcome: +k after k meets in a row, −k after k misses
    _step: int = 1  # the series' step, in levels

    # -- what is known ------------------------------------------------------------------
    @property
    def low(self) -> float | None:
        """The bracket's low end: the highest rate that met the SLO below every failure."""
        high = self.high
        ok = [p.rate for p in self.probes if p.met and (high is None or p.rate < high)]
        return max(ok) if ok else None

    @property
    def high(self) -> float | None:
        """The bracket's high end: the lowest rate that did not meet the SLO."""
        bad = [p.rate for p in self.probes if not p.met]
        return min(bad) if bad else None

    @property
    def confirmations(self) -> int:
        """Probes at the low end that met the SLO (the first one included)."""
        low = self.low
        return sum(1 for p in self.probes if p.met and p.rate == low)

    @property
    def edge_probes(self) -> int:
        """Probes of the up-and-down series so far."""
        return 0 if self._middle is None else len(self.probes) - self._began

    def record(self, rate: float, met: bool, generator_limited: bool = False) -> None:
        self.probes.append(Probe(rate, met, generator_limited))
        if self._middle is not None:
            # A run of one outcome means the bracket was wrong (one unlucky probe put it far
            # from the edge): from the third probe of a run on, the step doubles, and at a
            # reversal it halves back towards one (PEST's rules: Taylor & Creelman 1967,
            # JASA 41:782–787), so the series walks out in a few probes and settles again.
            reversed_ = (self._streak > 0) != met and self._streak != 0
            self._streak = (max(self._streak, 0) + 1) if met else (min(self._streak, 0) - 1)
            if reversed_:
                self._step = max(1, self._step // 2)
            elif abs(self._streak) >= 3:
                self._step *= 2
            self._level += self._step if met else -self._step
        if generator_limited and met:
            # The engine saturated while the stack still kept up: beyond this rate the lab
            # would measure its own generator, so the search ends with "at least".
            self.stopped = "generator"

    # -- what to do next ----------------------------------------------------------------
    def next_rate(self) -> float | None:
        if self.stopped:
            return None
        if len(self.probes) >= MAX_PROBES:
            return self.stop("probes")
        p = self.params
        if self._middle is not None:
            if self.edge_probes >= p.edge:
                return self.stop("converged")
            return self._series_rate(self._middle)
        low, high = self.low, self.high
        if not self.probes:
            return _round_rate(min(max(p.start, p.floor), p.ceiling))
        if high is None:  # every probe passed: climb
            assert low is not None  # the highest of them
            nxt = low * p.factor
            if low >= p.ceiling:
                return self.stop("ceiling")
            return _round_rate(min(nxt, p.ceiling))
        if low is None:  # every probe failed: descend
            nxt = high / p.factor
            if high <= p.floor:
                return self.stop("floor")
            return _round_rate(max(nxt, p.floor))
        if (high - low) / low > p.precision:
            mid = _round_rate((low + high) / 2)
            if low < mid < high:
                return mid
        # Narrow enough (or no rate left between): confirm the low end.
        if self.confirmations < 1 + p.confirm:
            return low
        if p.edge <= 0:
            return self.stop("converged")
        # The up-and-down series, from the bracket's geometric middle.
        self._middle, self._began, self._level, self._streak, self._step = math.sqrt(low * high), len(self.probes), 0, 0, 1
        return self._series_rate(self._middle)

    def _series_rate(self, middle: float) -> float:
        p = self.params
        rate = middle * (1 + p.precision) ** self._level
        return _round_rate(min(max(rate, p.floor), p.ceiling))

    def stop(self, reason: str) -> float | None:
        """End the search (the runner's time budget ends it from outside); the next rate
        is then none, so `return self.stop(why)` ends next_rate too."""
        self.stopped = reason
        return None


def replay(params: SearchParams, outcomes: Iterable[tuple[float, Check]], stopped: str | None) -> Search:
    """A stored search rebuilt from its probes (in order) and how it stopped."""
    s = Search(params)
    for rate, c in outcomes:
        s.record(rate, c.met, c.generator_limited)
    if stopped:
        s.stopped = stopped
    return s


def probe_seconds(rate: float, at_least_s: float) -> float:
    """How long a probe at `rate` lasts: `at_least_s` (the plan's, five SLO budgets at
    least), or long enough for PROBE_RESPONSES responses, whichever is longer; rounded up
    to a tenth of a second."""
    need = PROBE_RESPONSES / rate if rate > 0 else at_least_s
    return math.ceil(round(max(at_least_s, need) * 10, 6)) / 10


def open_loop_connections(rate: float, latency_budget_s: float, *, at_most: int = 10_000) -> int:
    """How many connections an open loop at `rate` needs so that it never runs out while
    the stack answers within `latency_budget_s` (Little's law: in flight = rate × latency),
    × 2 for bursts, and at least rate × 2 ms (the engine's timer resolution, see
    loadgen/README.md) and 4. Beyond the budget the connections do run out, and the
    engine counts the requests it could not send — which is then the finding."""
    need = max(math.ceil(2 * rate * latency_budget_s), math.ceil(rate * 0.002) + 1, 4)
    return min(need, at_most)


def _round_rate(rate: float) -> float:
    """Rates probed are whole requests/s from 10/s up (tables stay readable; the search's
    precision is a few per cent), a tenth below."""
    return float(round(rate)) if rate >= 10 else round(rate, 1)


def _pname(p: str) -> str:
    return "max" if p == "100" else f"p{p}"


def _rate(r: float) -> str:
    return f"{r:,.1f}" if r < 100 else f"{r:,.0f}"


def _ms(us: float) -> str:
    return f"{round(us / 1000, 1):,g} ms" if us >= 1000 else f"{us:,g} µs"
