"""A stored run's capacity searches, replayed from their probes: per stack the rate
interval it sustains within the SLO, the latency curve the search walked, the stack's
cost at the sustained rate — and, between stacks, verdicts on the sustained rate with
the same statistics as every other verdict (the search is the unit of replication)."""

from __future__ import annotations

import statistics
from dataclasses import dataclass, replace

from stackbench.analysis import capacity, figures, stats, verdicts
from stackbench.analysis.capacity import SLO, Check, SearchParams
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell
from stackbench.model.run import StoredRun, StoredSearch

CAPACITY = verdicts.Metric("capacity", "sustained rate", True, lambda f: None)


@dataclass(frozen=True)
class ProbeResult:
    rate: float
    check: Check
    figures: figures.CellFigures


@dataclass(frozen=True)
class CapacityResult:
    stack_label: str
    workload: str
    keepalive: bool
    repetition: int
    low: float | None  # the highest rate that met the SLO below every failure
    high: float | None  # the lowest rate that did not
    confirmations: int
    stopped: str  # converged | ceiling | floor | generator | probes | budget | failed | running
    seconds: float | None
    probes: tuple[ProbeResult, ...]  # in the order probed

    @property
    def at_low(self) -> figures.CellFigures | None:
        """The last probe at the sustained rate: the stack's CPU and memory there."""
        at = [p.figures for p in self.probes if p.rate == self.low and p.check.met]
        return at[-1] if at else None

    @property
    def curve(self) -> list[ProbeResult]:
        """The probes by rate (a rate probed twice: each)."""
        return sorted(self.probes, key=lambda p: p.rate)


def plan_parts(run: StoredRun) -> tuple[SLO, SearchParams] | None:
    """The SLO and search parameters a run's checked plan stored (None: not a capacity run)."""
    load = (run.plan_checked or {}).get("load") or {}
    if load.get("kind") != "capacity" or not load.get("slo"):
        return None
    return SLO.from_dict(load["slo"]), SearchParams(**load["search"])


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
    checked = [(c.rate, capacity.check(c.status, c.error, c.engine, slo), c) for c in probes]
    search = capacity.replay(params, ((r, ch) for r, ch, _ in checked), s.stopped)
    return CapacityResult(
        stack_label=s.stack_label, workload=s.workload, keepalive=s.keepalive,
        repetition=s.repetition, low=search.low, high=search.high, confirmations=search.confirmations,
        stopped=s.stopped, seconds=s.seconds,
        probes=tuple(ProbeResult(r, ch, figures.of(c)) for r, ch, c in checked))


def decide(found: list[CapacityResult], baseline: str) -> list[verdicts.Verdict]:
    """Each stack's sustained rates (one per search) against the baseline's, per workload
    and keep-alive mode, Holm-adjusted together. A search that failed, or found nothing
    the stack sustains, gives no value."""
    by: dict[tuple[str, bool, str], list[float]] = {}
    for r in found:
        vals = by.setdefault((r.workload, r.keepalive, r.stack_label), [])
        if r.low is not None and r.stopped not in ("failed", "running"):
            vals.append(r.low)
    family = []
    for (workload, ka, label), cand in by.items():
        if label == baseline or (workload, ka, baseline) not in by:
            continue
        base = by[(workload, ka, baseline)]
        q = Question(workload, 0, ka)
        family.append(verdicts.Verdict(q, CAPACITY, baseline, label, stats.compare(base, cand), tuple(base),
                                       tuple(cand)))
    adjusted = stats.adjust([v.comparison for v in family])
    return [replace(v, comparison=c) for v, c in zip(family, adjusted)]


def median_interval(found: list[CapacityResult]) -> tuple[float | None, float | None]:
    lows = [r.low for r in found if r.low is not None]
    highs = [r.high for r in found if r.high is not None]
    return (statistics.median(lows) if lows else None, statistics.median(highs) if highs else None)
