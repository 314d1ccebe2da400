"""A stored run's capacity searches, replayed from their probes: per search the bracket it
walked and the edge fitted to its probes (analysis/capacity_edge.py: the rate where a
probe meets the SLO half the time, with a 95 % interval), the latency curve, the stack's
cost near its capacity; per stack the edge fitted to all its searches' probes; and,
between stacks, verdicts on the capacity.

The verdict's unit (decide): with enough searches a side for stats.compare (five), each
search's edge is one run, compared like every other figure — that is the form that also
covers a host drifting between searches (bench/RESULTS.md saw one stack's searches range
2,188–4,500 req/s). With fewer (`capacity --quick`: one a side), the two stacks' fitted
edges are compared on their probes by a likelihood-ratio test (capacity_edge.compare),
which covers the noise between probes but not between the two searches; the report says
which one decided."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from stackbench.analysis import capacity, capacity_edge, figures, questions, stats, verdicts
from stackbench.analysis.capacity import SLO, Check, SearchParams
from stackbench.analysis.capacity_edge import Edge
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell
from stackbench.model.run import StoredRun, StoredSearch

CAPACITY = verdicts.Metric("capacity", "capacity", True, lambda f: None)
UNFINISHED = ("failed", "running")  # how a search ends that gives no capacity


@dataclass(frozen=True)
class ProbeResult:
    rate: float
    check: Check
    figures: figures.CellFigures

    @property
    def served_per_s(self) -> float | None:
        """What the probe served, in the unit it was offered: visits a second for a probe of
        visits (capacity_served.py), else requests a second."""
        v = self.check.visits_served_per_s
        return v if v is not None else self.figures.requests_per_s


@dataclass(frozen=True)
class CapacityResult:
    stack_label: str
    workload: str
    keepalive: bool
    repetition: int
    low: float | None  # the bracket: the highest rate that met the SLO below every failure
    high: float | None  # the lowest rate that did not
    confirmations: int
    stopped: str  # converged | ceiling | floor | generator | probes | budget | failed | running
    seconds: float | None
    probes: tuple[ProbeResult, ...]  # in the order probed
    edge: Edge | None  # fitted to this search's probes; None: all met or all missed

    @property
    def capacity(self) -> float | None:
        """The search's capacity: its fitted edge (None: no edge, or the search did not end)."""
        return self.edge.rate if self.edge is not None and self.stopped not in UNFINISHED else None

    @property
    def at_capacity(self) -> figures.CellFigures | None:
        """The stack near its capacity — the last probe at the highest rate that met the
        SLO at or below the edge (without an edge: at the bracket's low end): its CPU,
        memory and latency there."""
        top = self.edge.rate if self.edge is not None else self.low
        met = [p for p in self.probes if p.check.met and top is not None and p.rate <= top]
        if not met:
            return None
        best = max(p.rate for p in met)
        return [p.figures for p in met if p.rate == best][-1]

    @property
    def curve(self) -> list[ProbeResult]:
        """The probes by rate (a rate probed twice: each)."""
        return sorted(self.probes, key=lambda p: p.rate)

    @property
    def visits(self) -> bool:
        """Its probes were of visits: every rate in visits a second (capacity_served.py)."""
        return any(p.check.visits_served_per_s is not None for p in self.probes)

    @property
    def generator_limited(self) -> int:
        """Probes left out of the fit: the engine saturated, they say nothing of the stack."""
        return sum(1 for p in self.probes if p.check.generator_limited)


@dataclass(frozen=True)
class StackCapacity:
    """One stack's capacity over all its searches (per workload and keep-alive mode)."""

    stack_label: str
    workload: str
    keepalive: bool
    searches: int  # that ended
    edge: Edge | None  # fitted to every probe of those searches
    low: float | None  # without an edge: the highest bracket low end ("at least")
    high: float | None  # … and the lowest bracket high end ("below")
    stopped: tuple[str, ...]  # how its searches ended
    visits: bool = False  # its rates are visits a second (its probes were of visits)


def plan_parts(run: StoredRun) -> tuple[SLO, SearchParams] | None:
    """The SLO and search parameters a run's checked plan stored (None: not a capacity run)."""
    load = run.checked.load
    if load.kind != "capacity" or not load.slo:
        return None
    return SLO.from_dict(load.slo), SearchParams(**load.search or {})


def results(run: StoredRun, cells: list[StoredCell], searches: list[StoredSearch]) -> list[CapacityResult]:
    """`searches`: how each of the run's searches ended (Store.search_rows)."""
    parts = plan_parts(run)
    if parts is None:
        return []
    slo, params = parts
    probes = sorted((c for c in cells if c.load == "capacity"), key=lambda c: c.seq)
    out = []
    for s in searches:
        mine = [c for c in probes if s.seq <= c.seq < s.seq + capacity.MAX_PROBES]
        out.append(_result(s, mine, slo, params))
    # Probes of a search that never ended (interrupted): shown as running.
    ended = {s.seq for s in searches}
    bases = sorted({c.seq - (c.step or 0) for c in probes} - ended)
    for base in bases:
        mine = [c for c in probes if base <= c.seq < base + capacity.MAX_PROBES]
        first = mine[0]
        out.append(_result(StoredSearch(first.run_id, base, first.repetition, first.stack_label, first.workload,
                                        first.keepalive, "running", None), mine, slo, params))
    return out


def _result(s: StoredSearch, probes: list[StoredCell], slo: SLO, params: SearchParams) -> CapacityResult:
    # A probe is asked a rate (a cell of the search without one is not a probe).
    checked = [(c.rate, capacity.check(c.status, c.error, c.engine, slo), c) for c in probes if c.rate is not None]
    search = capacity.replay(params, ((r, ch) for r, ch, _ in checked), s.stopped)
    # Over TLS the protocol and handshake mode are part of what was asked: searches of
    # one workload in two protocols are never pooled nor compared with each other.
    q = questions.of(probes[0]) if probes else None
    workload = f"{s.workload} over {q.mode()}" if q is not None and q.tls else s.workload
    results = tuple(ProbeResult(r, ch, figures.of(c)) for r, ch, c in checked)
    return CapacityResult(
        stack_label=s.stack_label, workload=workload, keepalive=s.keepalive,
        repetition=s.repetition, low=search.low, high=search.high, confirmations=search.confirmations,
        stopped=s.stopped, seconds=s.seconds, probes=results, edge=fitted(results))


def fitted(probes: Iterable[ProbeResult]) -> Edge | None:
    """The edge of these probes, held at what the met ones served (`capped`). A probe
    whose generator saturated says nothing of the stack: neither in the fit nor a bound."""
    counted = [p for p in probes if not p.check.generator_limited]
    return capped(capacity_edge.fit((p.rate, p.check.met) for p in counted),
                  [p.served_per_s for p in counted if p.check.met])


def capped(edge: Edge | None, served: Iterable[float | None]) -> Edge | None:
    """The edge, never above the highest rate a met probe served (its estimate and both
    ends of its interval): a rate counts only if it was served (capacity_served.py). The
    fitted edge sits where probes meet the SLO half the time, and rounding an offered rate
    up to it would report a rate no probe served."""
    rates = [r for r in served if r is not None]
    if edge is None or not rates:
        return edge
    top = max(rates)
    if edge.rate <= top and (edge.high is None or edge.high <= top):
        return edge
    return replace(edge, rate=min(edge.rate, top), low=None if edge.low is None else min(edge.low, top),
                   high=top if edge.high is None else min(edge.high, top), served_cap=top,
                   fitted=edge.estimate)


def stacks(found: list[CapacityResult]) -> list[StackCapacity]:
    """Per stack (workload, keep-alive mode), in the order measured: the edge of all its
    ended searches' probes together (one search: that search's own fit)."""
    by: dict[tuple[str, bool, str], list[CapacityResult]] = {}
    for r in found:
        by.setdefault((r.workload, r.keepalive, r.stack_label), [])
        if r.stopped not in UNFINISHED:
            by[(r.workload, r.keepalive, r.stack_label)].append(r)
    out = []
    for (workload, ka, label), rs in by.items():
        if len(rs) == 1:
            edge = rs[0].edge
        else:
            edge = fitted(p for r in rs for p in r.probes)
        lows = [r.low for r in rs if r.low is not None]
        highs = [r.high for r in rs if r.high is not None]
        out.append(StackCapacity(label, workload, ka, len(rs), edge, max(lows) if lows else None,
                                 min(highs) if highs else None, tuple(r.stopped for r in rs),
                                 any(r.visits for r in rs)))
    return out


def decide(found: list[CapacityResult], baseline: str, pooled: list[StackCapacity] | None = None,
           band: float = stats.DEFAULT_EQUIVALENCE) -> list[verdicts.Verdict]:
    """Each stack's capacity against the baseline's, per workload and keep-alive mode,
    Holm-adjusted together (stats.adjust: the verdict rule of every comparison). With
    enough searches a side, their edges are the runs (stats.compare); with fewer, the
    pooled edges are compared on their probes (capacity_edge.compare, Comparison.test =
    capacity_edge.TEST, n_a and n_b counting probes). A search that did not end, or found
    no edge, gives no value."""
    pooled = stacks(found) if pooled is None else pooled
    per_search: dict[tuple[str, bool, str], list[float]] = {}
    for r in found:
        vals = per_search.setdefault((r.workload, r.keepalive, r.stack_label), [])
        if r.capacity is not None:
            vals.append(r.capacity)
    by = {(s.workload, s.keepalive, s.stack_label): s for s in pooled}
    family = []
    for (workload, ka, label), cand in by.items():
        if label == baseline or (workload, ka, baseline) not in by:
            continue
        base = by[(workload, ka, baseline)]
        a, b = per_search.get((workload, ka, baseline), []), per_search.get((workload, ka, label), [])
        c = stats.compare(a, b, band)
        if c.verdict == stats.Verdict.INSUFFICIENT:
            c = _on_probes(base.edge, cand.edge, band)
        family.append(verdicts.Verdict(Question(workload, 0, ka), CAPACITY, baseline, label, c, tuple(a), tuple(b)))
    adjusted = stats.adjust([v.comparison for v in family])
    return [replace(v, comparison=c) for v, c in zip(family, adjusted)]


def _on_probes(a: Edge | None, b: Edge | None, band: float) -> stats.Comparison:
    """B's pooled edge against A's as a Comparison (verdict re-derived by stats.adjust)."""
    n_a, n_b = (a.probes if a else 0), (b.probes if b else 0)
    got = capacity_edge.compare(a, b) if a is not None and b is not None else None
    if got is None:
        return stats.Comparison(n_a, n_b, None, None, None, None, None, stats.Verdict.INSUFFICIENT, None, band, 0,
                                test=capacity_edge.TEST)
    direction = (got.ratio > 1) - (got.ratio < 1)
    return stats.Comparison(n_a, n_b, got.ratio, got.ci_low, got.ci_high, got.p_value, got.p_value,
                            stats.Verdict.NO_DIFFERENCE, None, band, direction, test=capacity_edge.TEST)


def on_probes(v: verdicts.Verdict) -> bool:
    """The verdict compared two pooled edges on their probes (fewer than enough searches)."""
    return getattr(v.comparison, "test", None) == capacity_edge.TEST
