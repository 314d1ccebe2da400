"""The machine to buy (a plan's `[sizing]`, docs/guide/sizing.md): for each stack and size,
the capacity within the SLO with its 95 % interval (the edge fitted to the size's capacity
search: analysis/capacity_edge.py), the memory and the CPU a request it took near it and
the hits (requests) a day it carries — and, asked in visits a day, every rate in visits a
second and the visits a day it carries too (a visit as the plan's [visit] says); then, per
stack, the smallest size that is enough, said in cores of the machine it was measured on
(its yardstick) and, asked, rescaled to another core's (docs/methods/sizing.md).

A size is **enough** when its capacity's whole interval lies at or above the target: the
edge (the rate a probe meets the SLO half the time) could be anywhere in that interval, and
a size bought for a target must carry it wherever the edge truly is. An interval that
straddles the target is not enough — more probes might show it is; the table says so
("not shown") rather than round it up. Without an edge (every probe met, or none did) the
search's bracket speaks: every probe met up to a rate at or above the target is enough;
none met at or below it is not. A size whose tuning at the target found no pool meeting
the SLO with the CPU busy (analysis/tuning.py, Reason.CPU_SATURATED) is not enough: under
`until_enough` its search is skipped (runner/sizing.py) and its capacity is bounded by the
most its tuning's runs served, "< X" as when every probe missed (`of_tuning`). The smallest enough size is the first enough one in the
plan's order of sizes, which runs from the smallest machine up (planning/sizing.py). When
the size below it straddles the target, or either one's interval comes within 10 % of it,
the answer is **borderline** and says so: the same question asked again may find the
other size the smallest (`StackAnswer.borderline`)."""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from typing import Mapping

from stackbench.analysis import capacity_results
from stackbench.analysis import slow_requests
from stackbench.analysis import tuning as tuning_analysis
from stackbench.analysis.capacity import SLO
from stackbench.analysis.capacity_results import CapacityResult
from stackbench.model.cell import StoredCell
from stackbench.model.environment import Yardstick
from stackbench.model.run import StoredRun, StoredSearch
from stackbench.model.sizing import StoredSizing, VisitModel
from stackbench.model.tuning import ONE_REQUEST_SUFFIX, StoredTuning

DAY_S = 86_400
P99 = "99"  # the SLO's percentile a skipped size's miss is read on (_missed_by)
BORDER = 0.10  # how near the target an interval's end makes an answer borderline (_borderline)


class Enough(enum.Enum):
    YES = "enough"
    NO = "not enough"
    NOT_SHOWN = "not shown"  # the interval straddles the target
    UNKNOWN = "not measured"  # the size's search did not end (interrupted, the stack failed to start)


@dataclass(frozen=True)
class SizeCapacity:
    """One stack on one size."""

    stack: str  # the plan's label
    label: str  # as measured on that size (a tuned stack names its pool)
    size: str
    price: float | None
    capacity: float | None  # the fitted edge, requests/s (None: no edge)
    low: float | None  # its 95 % interval, or without an edge the bracket ("at least" / "below")
    high: float | None
    fitted: bool  # low/high are the edge's interval (False: the search's bracket)
    enough: Enough
    memory_bytes: int | None  # the stack and its services near the capacity
    probes: int
    cpus: float | None = None  # the size's CPUs (a share of one core: 0.5)
    # The stack's and its services' CPU time a request near the capacity (None: not read)
    cpu_us_per_request: float | None = None
    # The stored tuning that sized its pool for the target on this size (None: not tuned, or
    # not read): the chosen pool, and on a mix with slow requests what one cost the others
    tuning: StoredTuning | None = None
    # Not searched: its tuning at the target found no pool meeting the SLO with the CPU
    # busy, and `high` is the most the tuning's runs served (`of_tuning`)
    saturated: bool = False
    # Not searched: how far the chosen pool's worst p99 at the target was past the SLO's
    # (2.4: 2.4 times its limit; None: not read) — what says whether another run may meet it
    missed_by: float | None = None


@dataclass(frozen=True)
class StackAnswer:
    stack: str
    smallest: SizeCapacity | None  # the smallest enough size; None: none of them was
    sizes: tuple[SizeCapacity, ...]  # every size, in the plan's order
    # The size that makes the answer borderline (`_borderline`): the one below the smallest
    # enough, or that one itself, near the target — another run may move the answer there.
    borderline: SizeCapacity | None = None

    @property
    def page_cpu(self) -> SizeCapacity | None:
        """The size whose CPU a request is the workload's own on one core: the least
        throttled one measured (the most CPUs; the plan's later size on a tie). A quota
        stretches a request's wall time, not its CPU time, so this is what a request costs
        an unthrottled core — as long as the cores are alike (docs/methods/sizing.md)."""
        read = [c for c in self.sizes if c.cpu_us_per_request is not None]
        return max(reversed(read), key=lambda c: c.cpus or 0.0, default=None) if read else None


@dataclass(frozen=True)
class SizingAnswer:
    sizing: StoredSizing
    target_rate: float
    peak_factor: float
    hits_per_day: float | None  # the target as asked in hits a day (None: as a rate)
    stacks: tuple[StackAnswer, ...]
    sizes: tuple[str, ...]  # measured, in the plan's order
    yardstick: Yardstick | None = None  # the core the sizes were measured on (None: not measured)
    core: float | None = None  # the yardstick of the user's core to rescale to (None: not asked)
    # A target asked in visits a day: its count and visit model; every rate (the target's,
    # each capacity) is then in visits a second (None: asked in hits or as a rate)
    visits_per_day: float | None = None
    visit: VisitModel | None = None

    def visits(self, rate: float | None) -> float | None:
        """The visits a day a sustained peak `rate` of visits carries (None: not a sizing
        in visits, whose rates are requests — one request is never a visit)."""
        return None if rate is None or self.visit is None else rate * DAY_S / self.peak_factor

    def hits(self, rate: float | None) -> float | None:
        """The hits (requests) a day a sustained peak `rate` carries, on the target's day:
        of visits, their hits a visit each (VisitModel.hits)."""
        if rate is None:
            return None
        return rate * DAY_S / self.peak_factor * (self.visit.hits if self.visit is not None else 1.0)

    def on_core(self, cpus: float | None) -> float | None:
        """A size's CPUs in cores of the user's yardstick: a CPU-bound page's CPU time
        scales as 1 / a core's speed, so `cpus` here are cpus × this core's yardstick /
        the user's there (docs/methods/sizing.md states the rule and its error). None
        without both yardsticks."""
        if cpus is None or self.yardstick is None or not self.core:
            return None
        return cpus * self.yardstick.score / self.core


def enough(capacity: float | None, low: float | None, high: float | None, fitted: bool, target: float) -> Enough:
    """The rule in the module docstring."""
    if fitted:
        if low is not None and low >= target:
            return Enough.YES
        if high is not None and high < target:
            return Enough.NO
        return Enough.NOT_SHOWN
    if low is not None and low >= target:
        return Enough.YES  # met at or above the target
    if high is not None and high <= target:
        return Enough.NO  # missed at or below it
    if capacity is None and low is None and high is None:
        return Enough.UNKNOWN
    return Enough.NOT_SHOWN


def of_run(sizing: StoredSizing, size: str, run: StoredRun, cells: list[StoredCell],
           searches: list[StoredSearch], tunings: Mapping[int, StoredTuning] | None = None) -> list[SizeCapacity]:
    """Each stack's capacity on one size, from that size's capacity run; `tunings`: the
    stored tunings by id (the run's tuned stacks name theirs)."""
    found = capacity_results.results(run, cells, searches)
    pooled = {s.stack_label: s for s in capacity_results.stacks(found)}
    measured = [s.label for s in run.checked.stacks]
    price = sizing.price(size)
    out = []
    for stack in sizing.stacks:
        label = next((m for m in measured if as_measured(stack, m)), stack)
        p = pooled.get(label)
        mine = [r for r in found if r.stack_label == label]
        one = _one(stack, label, size, price, p, mine, sizing.target_rate, sizing.cpus(size))
        tuning_id = run.checked.tunings.get(label)
        out.append(replace(one, tuning=(tunings or {}).get(tuning_id)) if tuning_id is not None else one)
    return out


def of_tuning(sizing: StoredSizing, size: str, stack: str, tuning: StoredTuning,
              cells: list[StoredCell]) -> SizeCapacity:
    """A stack whose search was skipped on `size` (runner/sizing.py): its tuning at the target
    found no pool meeting the SLO with the CPU busy, and no larger pool serves more (rule 3 of
    analysis/tuning.py) — so the size is not enough, and its capacity is below the most any
    of the tuning's runs served (`cells`: its candidates' runs), the target if none served."""
    found = tuning_analysis.review(tuning, cells, None).trials
    # The tuning served requests a second; a target in visits is carried at its PHP
    # requests a visit (planning/sizing.py Target.tune_rate).
    per = sizing.visit.php if sizing.visit is not None else 1.0
    served = [f / per for t in found for f in t.figures if f]
    high = min(sizing.target_rate, max(served)) if served else sizing.target_rate
    return SizeCapacity(stack, stack, size, sizing.price(size), None, None, high, False, Enough.NO, None, 0,
                        sizing.cpus(size), tuning=tuning, saturated=True, missed_by=_missed_by(tuning, cells))


def _missed_by(t: StoredTuning, cells: list[StoredCell]) -> float | None:
    """The chosen pool's worst p99 at the target over the SLO's p99 limit, as the tuning
    judged it (the other pages' on a mix with slow requests: analysis/slow_requests.py);
    None when the tuning had no p99 limit or no such cell."""
    limit = SLO.from_dict(t.slo_table).latency_us.get(P99) if t.slo_table else None
    labels = {label for label, n in t.sizes.items() if n == t.chosen_size
              and label.endswith(ONE_REQUEST_SUFFIX) == t.one_request}
    p99s = [slow_requests.judged(c.engine, t.slow_paths).latency.p99_us for c in cells
            if c.stack_label in labels and c.engine is not None]
    worst = max((p for p in p99s if p is not None), default=None)
    return worst / limit if limit and worst is not None else None


def of_size(sizing: StoredSizing, size: str, measured: list[SizeCapacity],
            skipped: Mapping[str, SizeCapacity]) -> list[SizeCapacity]:
    """Each plan stack on one size: as its tuning bounded it where its search was skipped
    (`skipped`, by the plan's label), else as the size's run measured it (`of_run`; []
    when the size had no run: every stack on it skipped), else not measured."""
    mine = {c.stack: c for c in measured}
    return [skipped.get(stack) or mine.get(stack) or SizeCapacity(stack, stack, size, sizing.price(size), None, None,
                                                                  None, False, Enough.UNKNOWN, None, 0,
                                                                  sizing.cpus(size))
            for stack in sizing.stacks]


def saturated(t: StoredTuning) -> bool:
    """A tuning at a rate that found no pool meeting the SLO with the CPU busy: the size
    does not carry the rate, whatever its search would say (`of_tuning`)."""
    return t.rate is not None and t.reason == tuning_analysis.Reason.CPU_SATURATED.value


def as_measured(stack: str, measured: str) -> bool:
    """A size's run names a plan's stack as it was, or tuned for that size
    ("nginx + FPM (tuned: 1 PHP-FPM child)": runner/tune.py's label)."""
    return measured == stack or measured.startswith(stack + " (tuned")


def enough_on(sizing: StoredSizing, size: str, run: StoredRun, cells: list[StoredCell],
              searches: list[StoredSearch]) -> set[str]:
    """The plan's stacks (labels) that one size's run showed enough: what `until_enough`
    measures no further."""
    return {c.stack for c in of_run(sizing, size, run, cells, searches) if c.enough is Enough.YES}


def _one(stack: str, label: str, size: str, price: float | None, p: capacity_results.StackCapacity | None,
         mine: list[CapacityResult], target: float, cpus: float | None) -> SizeCapacity:
    if p is None:
        return SizeCapacity(stack, label, size, price, None, None, None, False, Enough.UNKNOWN, None, 0, cpus)
    edge = p.edge
    capacity, low, high, fitted = (edge.rate, edge.low, edge.high, True) if edge else (None, p.low, p.high, False)
    if not fitted and p.low is None and high is not None:
        # Every probe missed: the stack cannot sustain within the SLO more than it served
        # when overloaded (its throughput there is its most), so that is the bound — "< 4.9"
        # rather than "< 6.2", the rate it missed, which says nothing of how far below.
        served = [pr.served_per_s for r in mine for pr in r.probes if pr.served_per_s]
        high = min([high, *served])
    near = [r.at_capacity for r in mine if r.at_capacity is not None]
    memory = cpu = None
    if near:
        f = near[-1]
        parts = [f.memory_peak_bytes, f.service_memory_peak_bytes]
        memory = sum(x for x in parts if x is not None) if f.memory_peak_bytes is not None else None
        # a page's CPU: the stack's and its database's, each per request over the same window
        cpu = f.cpu_us_per_request + (f.service_cpu_us_per_request or 0.0) if f.cpu_us_per_request else None
    probes = sum(len(r.probes) for r in mine)
    return SizeCapacity(stack, label, size, price, capacity, low, high, fitted,
                        enough(capacity, low, high, fitted, target), memory, probes, cpus, cpu)


def answer(sizing: StoredSizing, per_size: dict[str, list[SizeCapacity]], core: float | None = None) -> SizingAnswer:
    """`per_size`: each measured size's capacities (of_run), by the size's label; `core`:
    the yardstick to rescale to (default: the plan's `core`, if it named one)."""
    order = [label for label in sizing.size_labels if label in per_size]
    stacks = []
    for stack in sizing.stacks:
        mine = tuple(c for size in order for c in per_size[size] if c.stack == stack)
        smallest = next((c for c in mine if c.enough is Enough.YES), None)
        stacks.append(StackAnswer(stack, smallest, mine, _borderline(mine, smallest, sizing.target_rate)))
    return SizingAnswer(sizing, sizing.target_rate, sizing.peak_factor, sizing.hits_per_day, tuple(stacks),
                        tuple(order), sizing.yardstick, core if core is not None else sizing.core,
                        sizing.visits_per_day, sizing.visit)


def _borderline(sizes: tuple[SizeCapacity, ...], smallest: SizeCapacity | None, target: float) -> SizeCapacity | None:
    """The size that makes the answer borderline: the one just below `smallest` (the
    plan's order) when it is near the target, else `smallest` itself when near. Near: the
    size's interval, widened by BORDER on each side, holds the target — the interval covers
    the noise between probes, not a machine a few per cent faster or slower on another day
    (the speed of this kind of VM varied with a CV of 6–42 % across an afternoon:
    docs/methods/capacity.md), so the same question asked again may put the edge on the
    other side and the answer names both sizes rather than flip between them."""
    if smallest is None:
        return None
    i = sizes.index(smallest)
    below = sizes[i - 1] if i > 0 else None
    if below is not None and (below.enough is Enough.NOT_SHOWN or near(below, target)):
        return below
    return smallest if below is not None and near(smallest, target) else None


def near(c: SizeCapacity, target: float) -> bool:
    """The rule in `_borderline`'s docstring. A size not searched is near only when its
    tuning missed the SLO's p99 by no more than BORDER: at a rate its runs served about the
    target whatever their latency (late, but served), so its bound says nothing of how near
    it came."""
    if c.saturated:
        return c.missed_by is not None and c.missed_by <= 1 + BORDER
    lo = c.low if c.low is not None else c.capacity
    hi = c.high if c.high is not None else c.capacity
    if lo is None and hi is None:
        return False
    return (lo is None or lo / (1 + BORDER) <= target) and (hi is None or target <= hi * (1 + BORDER))
