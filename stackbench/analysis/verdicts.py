"""Verdicts: for each question a plan asks (workload × concurrency × keep-alive), each
stack against the plan's baseline — or, along another axis (axes.py: the protocol, the
ramp's way, the visitors beside, a knob, the machine's size), each side against its
baseline within what the axis holds equal — on each metric — faster / slower / no significant
difference / equivalent, with the interval and the number of runs beside it; or, where
the runs' outcomes (outcomes.py) decide it, fails this load / neither serves it / at
least faster (a lower bound) / not separable on this machine.

The unit of replication is the run (one cell's repetition), never the request: requests
inside one run are autocorrelated, and treating them as samples manufactures
significance. Invalid repetitions (a measurement failure: caveats.MEASUREMENT_FAILURES,
or no engine result) are left out, and said so. A repetition that failed the load is a
result: it counts with what it delivered (outcomes.py), and a side whose valid runs
mostly failed loses the comparison — "fails this load" — without a test: the failure is
the answer, not noise to average (docs/methods.md, "Two kinds of bad runs").

Holm–Bonferroni adjusts each metric's family of comparisons in a run (all its
throughput comparisons together, all its p99 ones together, …): a plan that asks many
questions must not find differences by asking often (Holm 1979, via stats.adjust).
Comparisons the outcomes decide are not tested, so they are not in the family.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median
from typing import Callable, Iterable

import difflib

from stackbench.analysis import axes, figures, outcomes, questions, stats
from stackbench.errors import UsageError
from stackbench.analysis.axes import Axis, Group
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell
from stackbench.model.run import StoredRun


@dataclass(frozen=True)
class Metric:
    key: str
    label: str  # for a sentence: "throughput", "p99 latency"
    higher_is_better: bool
    value: Callable[[figures.CellFigures], float | None]


def _outcome(f: figures.CellFigures) -> outcomes.Outcome:
    return f.outcome if f.outcome is not None else outcomes.Outcome(outcomes.SERVED, (), (), False, None, None,
                                                                    f.throughput, f.p50_us, f.p99_us)


# In page mode these are page views/s and page load time (CellFigures.throughput).
# What a repetition gives a verdict is its outcome's (outcomes.py): a failed run's
# delivered throughput and its latency counting the unserved clients; an engine-bound
# run's throughput (a lower bound) and no latency (the generator's queueing is in it).
# Named, so a reader picks one by its constant (summaries and points are keyed by .key).
THROUGHPUT = Metric("throughput", "throughput", True, lambda f: _outcome(f).throughput)
LATENCY_P50 = Metric("latency_p50", "p50 latency", False, lambda f: _outcome(f).p50_us)
LATENCY_P99 = Metric("latency_p99", "p99 latency", False, lambda f: _outcome(f).p99_us)
MEMORY = Metric("memory", "peak memory", False, lambda f: f.memory_peak_bytes)
CPU_PER_REQUEST = Metric("cpu_per_request", "CPU per request", False, lambda f: f.cpu_us_per_request)
METRICS: tuple[Metric, ...] = (THROUGHPUT, LATENCY_P50, LATENCY_P99, MEMORY, CPU_PER_REQUEST)
METRIC = {m.key: m for m in METRICS}

# What a comparison says (Verdict.kind): the statistics' own verdicts (stats.Verdict
# values: higher, lower, no_difference, equivalent, insufficient), or one of these.
CANDIDATE_FAILS = "candidate_fails"  # most of the candidate's valid runs failed the load, not the baseline's
BASELINE_FAILS = "baseline_fails"  # the other way round
NEITHER_SERVES = "neither_serves"  # both sides mostly failed it
AT_LEAST_HIGHER = "at_least_higher"  # the candidate's runs are lower bounds, and still significantly higher
AT_LEAST_LOWER = "at_least_lower"  # the baseline's runs are lower bounds, and the candidate still lower
NOT_SEPARABLE = "not_separable"  # lower bounds that the comparison cannot settle
NOT_RESOLVABLE = "not_resolvable"  # throughput counted in steps of one response coarser than the question
FAILURE_KINDS: frozenset[str | None] = frozenset({CANDIDATE_FAILS, BASELINE_FAILS, NEITHER_SERVES})
# What more runs can settle: no significant difference yet, too few valid runs.
OPEN_KINDS = frozenset({stats.Verdict.NO_DIFFERENCE.value, stats.Verdict.INSUFFICIENT.value})
BOUND_KINDS = frozenset({AT_LEAST_HIGHER, AT_LEAST_LOWER, NOT_SEPARABLE})
# A secondary metric (p50, p99, memory, CPU) joins a throughput verdict's sentence when it
# differs by this much or more and significantly (the rest are in `stackbench export`).
NOTABLE = 0.10
KINDS = tuple(v.value for v in stats.Verdict) + (CANDIDATE_FAILS, BASELINE_FAILS, NEITHER_SERVES, AT_LEAST_HIGHER,
                                                 AT_LEAST_LOWER, NOT_SEPARABLE, NOT_RESOLVABLE)


@dataclass(frozen=True)
class Excluded:
    """A repetition shown but kept out of verdicts (an invalid measurement), and why."""

    run_id: int
    seq: int
    stack_label: str
    question: Question  # the question of its comparison (the axis's own dimension taken out)
    reasons: tuple[str, ...]  # measurement failures: caveat codes, or "not_measured"
    side: str | None = None  # the side it was on ("way up"); None: its stack, on the stack axis
    within: str | None = None  # the stack its sides are conditions of (Verdict.within)


@dataclass(frozen=True)
class Side:
    """One side of a comparison as its valid repetitions ended: what the sentence of a
    failed or bounded comparison says of it."""

    label: str
    runs: int  # valid repetitions (the ones a verdict takes)
    failed: int  # of them, failed the load
    engine_bound: int  # of them, the generator at its limit with the server busy too
    failures: tuple[outcomes.FailureSummary, ...]  # how the failed ones failed
    throughput: float | None  # median over the valid runs, as verdicts take it
    p99_us: float | None  # median p99 as verdicts take it (None: not computable)
    p99_floor: bool  # that p99 is at least the window: unserved clients in it
    page_mode: bool
    beside: tuple[tuple[str, int], ...] = ()  # other visitor classes beside a failed run (name, connections)
    busy_workers: float | None = None  # median of the most workers busy at once in the failed runs
    # Asked for HTTP/2 and answered in HTTP/1.1 ("h2 → http/1.1", figures.protocol) in
    # any of its runs: a result the sentence names; None when it spoke what was asked.
    fallback: str | None = None
    # How finely its throughput was counted (outcomes.resolution): the median over its
    # valid runs of one response a window, per second (0: windows that ended at a
    # response), and of the responses a client completed in the window.
    step_per_s: float = 0.0
    per_client: float | None = None
    # median p50 as verdicts take it, and whether it is a floor (as p99_us, p99_floor)
    p50_us: float | None = None
    p50_floor: bool = False

    @property
    def step_share(self) -> float | None:
        """One response a window as a share of its own throughput (None: it served none)."""
        return self.step_per_s / self.throughput if self.throughput else None

    @property
    def fails(self) -> bool:
        """Most of its valid runs failed the load (a majority, so one unlucky run of a
        stack that serves does not make it fail)."""
        return self.runs > 0 and 2 * self.failed > self.runs

    @property
    def bound(self) -> bool:
        """Its throughput is a lower bound: some valid run was engine-bound (a median of
        values some of which are lower bounds is one too: outcomes.any_floor)."""
        return self.engine_bound > 0


def side_of(label: str, fs: list[figures.CellFigures]) -> Side:
    os_ = [_outcome(f) for f in fs]
    # Asked HTTP/2, spoke HTTP/1.1: said beside the sentence — unless the side's own
    # name says it already ("HTTP/2 → http/1.1" on the protocol axis).
    fallback = None if "→" in label else next((f.protocol for f in fs if "→" in f.protocol), None)
    failed = [o for o in os_ if o.failed]
    through = [o.throughput for o in os_ if o.throughput is not None]
    p99 = [(o.p99_us, o.p99_floor) for o in os_ if o.p99_us is not None]
    p50 = [(o.p50_us, o.p50_floor) for o in os_ if o.p50_us is not None]
    busy = [o.busy_workers for o in failed if o.busy_workers is not None]
    per_client = [o.per_client for o in os_ if o.per_client is not None]
    return Side(label, len(os_), len(failed), sum(1 for o in os_ if o.engine_bound),
                outcomes.summarize_failures(failed), median(through) if through else None,
                median(v for v, _ in p99) if p99 else None, outcomes.any_floor(p99),
                any(f.page_mode for f in fs), failed[0].beside if failed else (),
                median(busy) if busy else None, fallback,
                median(o.step_per_s or 0.0 for o in os_) if os_ else 0.0, median(per_client) if per_client else None,
                median(v for v, _ in p50) if p50 else None, outcomes.any_floor(p50))


@dataclass(frozen=True)
class Verdict:
    question: Question
    metric: Metric
    baseline: str
    candidate: str
    comparison: stats.Comparison
    baseline_values: tuple[float, ...]
    candidate_values: tuple[float, ...]
    # repetitions left out as invalid measurements, and their reasons (codes), per side
    baseline_excluded: tuple[str, ...] = ()
    candidate_excluded: tuple[str, ...] = ()
    # how each side's valid runs ended (None: a comparison made without outcomes, e.g.
    # capacity searches), and what they decided when they did (None: the statistics did)
    baseline_side: Side | None = None
    candidate_side: Side | None = None
    decided: str | None = None  # one of FAILURE_KINDS or BOUND_KINDS, or NOT_RESOLVABLE
    # The stack both sides are conditions of, on an axis other than the stack's ("HTTPS
    # against HTTP on nginx + FPM"); None when the sides are stacks.
    within: str | None = None

    @property
    def kind(self) -> str:
        """What the comparison says: the outcome's kind when the runs' outcomes decided,
        else the statistics' verdict (stats.Verdict's value)."""
        return self.decided or self.comparison.verdict.value

    @property
    def short(self) -> tuple[tuple[str, int, int, tuple[str, ...]], ...]:
        """The sides short of stats.MIN_RUNS valid runs, candidate first: (label, valid
        runs, runs still needed, the reasons its invalid runs were left out)."""
        return tuple((label, n, stats.MIN_RUNS - n, excluded) for label, n, excluded in (
            (self.candidate, self.comparison.n_b, self.candidate_excluded),
            (self.baseline, self.comparison.n_a, self.baseline_excluded)) if n < stats.MIN_RUNS)

    @property
    def lost_to_holm(self) -> bool:
        """Alone the test says "different"; the difference does not survive the
        adjustment for the run's many comparisons (its interval, drawn at Holm's level,
        contains 0): more runs would settle it."""
        c = self.comparison
        return (c.verdict == stats.Verdict.NO_DIFFERENCE and c.p_adjusted is not None and c.p_value is not None
                and c.p_value < stats.ALPHA)

    @property
    def better(self) -> bool | None:
        """True: the candidate is better on this metric (significantly, or because the
        baseline failed the load, or by a lower bound); False: worse; None: no
        significant difference, equivalent, neither serves, not separable, or not enough runs."""
        kind = self.kind
        if kind == CANDIDATE_FAILS:
            return False
        if kind == BASELINE_FAILS:
            return True
        if kind == AT_LEAST_HIGHER or kind == stats.Verdict.HIGHER.value:
            return self.metric.higher_is_better
        if kind == AT_LEAST_LOWER or kind == stats.Verdict.LOWER.value:
            return not self.metric.higher_is_better
        return None


@dataclass(frozen=True)
class Verdicts:
    baseline: str
    verdicts: tuple[Verdict, ...]
    excluded: tuple[Excluded, ...]
    family_sizes: dict[str, int]  # per metric key: comparisons adjusted together (Holm)
    band: float
    axis: Axis = axes.STACK  # what the sides differ in

    @property
    def self_comparison(self) -> bool:
        """Each stack against itself (the way down against the way up, with other
        visitors against alone): the sides are two conditions of one stack."""
        return self.axis.per_stack

    def for_metric(self, key: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.metric.key == key]

    def asides(self, v: Verdict) -> list[Verdict]:
        """The other metrics of a throughput verdict's comparison worth a word beside it:
        significant and at least NOTABLE apart — none when the outcomes decided it (a
        stack that fails the load is not "also 0.6x the memory")."""
        if v.kind in FAILURE_KINDS:
            return []
        return [x for x in self.verdicts if x.metric.key != "throughput" and x.question == v.question
                and x.within == v.within and x.candidate == v.candidate and x.baseline == v.baseline
                and x.decided is None and x.better is not None
                and x.comparison.ratio is not None and abs(x.comparison.ratio - 1) >= NOTABLE]

    def excluded_by_reason(self) -> dict[str, int]:
        """How many repetitions each reason kept out (one may have several), by reason."""
        counts: dict[str, int] = {}
        for e in self.excluded:
            for r in e.reasons:
                counts[r] = counts.get(r, 0) + 1
        return dict(sorted(counts.items()))


def invalid_reasons(cell: StoredCell) -> tuple[str, ...]:
    """Why a repetition cannot enter a verdict (an invalid measurement); empty when it
    can — a repetition that failed the load can (outcomes.py)."""
    return outcomes.of(cell).invalid_reasons


def split_valid(cells: Iterable[StoredCell]) -> tuple[list[StoredCell], list[Excluded]]:
    valid, excluded = [], []
    for c in questions.levels(cells):
        reasons = invalid_reasons(c)
        if reasons:
            excluded.append(Excluded(c.run_id, c.seq, c.stack_label, questions.of(c), reasons))
        else:
            valid.append(c)
    return valid, excluded


# A comparison's cells by what they share on the axis (axes.Group) and their side on it.
Key = tuple[Group, str]


def samples(cells: Iterable[StoredCell]) -> dict[tuple[Question, str], list[figures.CellFigures]]:
    """Repetitions by (question, stack label), in run order."""
    return {(g.question, side): fs for (g, side), fs in along(cells, axes.STACK).items()}


def along(cells: Iterable[StoredCell], axis: Axis) -> dict[Key, list[figures.CellFigures]]:
    """Repetitions by (group, side) on `axis`, in run order."""
    out: dict[Key, list[figures.CellFigures]] = {}
    for c in sorted(questions.levels(cells), key=lambda c: (c.run_id, c.seq)):
        out.setdefault((axis.group(c), axis.side(c)), []).append(figures.of(c))
    return out


def _split(cells: Iterable[StoredCell], axis: Axis = axes.STACK) -> tuple[dict[Key, list[figures.CellFigures]],
                                                                        dict[Key, list[Excluded]]]:
    """The valid repetitions by (group, side) and the invalid ones, each cell's figures
    (and outcome) worked out once."""
    by: dict[Key, list[figures.CellFigures]] = {}
    excluded: dict[Key, list[Excluded]] = {}
    for (group, side), fs in along(cells, axis).items():
        for x in fs:
            reasons = _outcome(x).invalid_reasons
            if reasons:
                excluded.setdefault((group, side), []).append(
                    Excluded(x.run_id, x.seq, x.stack_label, group.question, reasons, side, group.within))
            else:
                by.setdefault((group, side), []).append(x)
    return by, excluded


def decided(metric: Metric, comparison: stats.Comparison, base: Side | None, cand: Side | None,
            band: float = stats.DEFAULT_EQUIVALENCE) -> str | None:
    """What the sides' outcomes decide of a comparison; None when the statistics do.

    Failures first: a side most of whose valid runs failed the load loses to one that
    served it (both need a valid run; how many is said beside it), whatever the metric.

    Then lower bounds, for throughput: an engine-bound side's true throughput is at least
    what was measured. The ratio of medians and its bootstrap interval only grow when
    the candidate's values grow (an order statistic is monotone in every value, and so
    is each resampled median), so a candidate measured significantly higher while its
    runs were lower bounds is at least that much higher ("at least N % faster"), and a
    candidate measured lower than a bounded baseline is at least that much lower. (The
    test's p is not monotone in the values — Welch's variance grows too — but the claim
    worded is the ratio's, and it stands.) A bounded side measured ahead but not
    significantly is left to the statistics ("no significant difference", more runs may
    settle it — as a lower bound). Any other outcome — a bounded side measured behind or
    level, equivalent, or both sides bounded — could be reversed by what the generator
    could not reach: not separable on this machine, whatever the number of runs.
    Not enough runs stays "insufficient": only more runs decide it.

    Then resolution, for throughput: a window of fixed length counts the throughput in
    steps of one response over its length. Where a side's step is over half the
    equivalence band of the baseline's figure, the comparison cannot resolve a
    difference the size of the question: "equivalent" or "no significant difference"
    would be read off the steps (16 clients completing two WordPress pages each in 3 s:
    every run 10.7 req/s, an interval of zero width), and a difference within two steps
    may be one response more or less — not resolvable with that many responses a client.
    Steps are set against the baseline's figure: a stack that served nothing beside one
    that served hundreds in the window is resolved. Sides not known (None): the statistics."""
    if base is None or cand is None:
        return None
    if base.runs and cand.runs:
        if base.fails and cand.fails:
            return NEITHER_SERVES
        if cand.fails:
            return CANDIDATE_FAILS
        if base.fails:
            return BASELINE_FAILS
    v = comparison.verdict
    if metric.key == "throughput" and v != stats.Verdict.INSUFFICIENT and coarse(base, cand, band):
        step = max(base.step_per_s, cand.step_per_s)
        apart = abs((cand.throughput or 0.0) - (base.throughput or 0.0))
        if v in (stats.Verdict.EQUIVALENT, stats.Verdict.NO_DIFFERENCE) or apart < 2 * step:
            return NOT_RESOLVABLE
    if metric.key != "throughput" or v == stats.Verdict.INSUFFICIENT or not (base.bound or cand.bound):
        return None
    if base.bound and cand.bound:
        return NOT_SEPARABLE
    ratio = 1.0 if comparison.ratio is None else comparison.ratio  # 0.0: a side served nothing
    ahead = ratio > 1 if cand.bound else ratio < 1  # the bounded side
    if v == (stats.Verdict.HIGHER if cand.bound else stats.Verdict.LOWER):
        return AT_LEAST_HIGHER if cand.bound else AT_LEAST_LOWER
    if v == stats.Verdict.NO_DIFFERENCE and ahead:
        return None
    return NOT_SEPARABLE


def coarse(base: Side, cand: Side, band: float) -> bool:
    """Is either side's throughput counted in steps over half the equivalence band of
    the baseline's figure?"""
    step = max(base.step_per_s, cand.step_per_s)
    return step > 0 and step > band / 2 * (base.throughput or 0.0)


Against = Callable[[str, list[str]], "str | None"]


def decide(cells: Iterable[StoredCell], baseline: str, *, axis: Axis = axes.STACK,
           band: float = stats.DEFAULT_EQUIVALENCE, metrics: tuple[Metric, ...] = METRICS,
           against: Against | None = None) -> Verdicts:
    """Along `axis`, every side against `baseline` in each group of cells that share
    what the axis holds equal — on the stack axis, every stack against the baseline
    stack on every question both answered. `against(side, sides)` names another side's
    baseline among the sides its group has (None: that side is compared with nothing);
    by default every side's is `baseline`. One Holm family per metric over all of them."""
    by, invalid = _split(cells, axis)
    excluded = sorted((e for es in invalid.values() for e in es), key=lambda e: (e.run_id, e.seq))
    present = set(by) | set(invalid)
    groups = sorted({g for g, _ in present}, key=Group.sort_key)
    labels = list(dict.fromkeys([side for _, side in by] + [side for _, side in invalid]))
    sides = {key: side_of(key[1], fs) for key, fs in by.items()}
    out: list[Verdict] = []
    sizes: dict[str, int] = {}
    for metric in metrics:
        family: list[Verdict] = []
        for g in groups:
            here = [label for label in labels if (g, label) in present]
            for label in here:
                base_label = baseline if against is None else against(label, here)
                if base_label is None or label == base_label:
                    continue
                base = _values(by.get((g, base_label), []), metric)
                cand = _values(by.get((g, label), []), metric)
                base_side = sides.get((g, base_label)) or side_of(base_label, [])
                cand_side = sides.get((g, label)) or side_of(label, [])
                if not base and not cand and not (base_side.runs and cand_side.runs):
                    continue
                family.append(Verdict(g.question, metric, base_label, label, stats.compare(base, cand, band=band),
                                      tuple(base), tuple(cand), _reasons(invalid.get((g, base_label), [])),
                                      _reasons(invalid.get((g, label), [])), base_side, cand_side, within=g.within))
        # The outcomes decide before any test: those comparisons stay out of Holm's family.
        tested = [i for i, v in enumerate(family)
                  if decided(metric, v.comparison, v.baseline_side, v.candidate_side, band) not in FAILURE_KINDS]
        adjusted = dict(zip(tested, stats.adjust([family[i].comparison for i in tested])))
        for i, v in enumerate(family):
            c = adjusted.get(i, v.comparison)
            out.append(replace(v, comparison=c, decided=decided(metric, c, v.baseline_side, v.candidate_side, band)))
        sizes[metric.key] = sum(1 for i in tested if family[i].comparison.p_value is not None)
    return Verdicts(baseline, tuple(out), tuple(excluded), sizes, band, axis)


def for_run(run: StoredRun, cells: list[StoredCell], baseline: str | None = None) -> Verdicts | None:
    """A stored run's verdicts: against `baseline` when given (it must be one of the
    run's stacks), else the plan's; None when there is neither."""
    checked = run.checked
    if baseline is not None:
        labels = list(dict.fromkeys(c.stack_label for c in cells))
        if baseline not in labels:
            close = difflib.get_close_matches(baseline, labels, n=1)
            raise UsageError(f"run {run.id} has no stack {baseline!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else ""),
                             hint=f"its stacks: {', '.join(labels)}")
    baseline = baseline or checked.baseline
    if not baseline:
        return None
    return decide(cells, baseline, band=stats.band_of(checked.equivalence))


def _reasons(excluded: list[Excluded]) -> tuple[str, ...]:
    """One entry per excluded repetition of a side: its first reason, in run order."""
    return tuple(e.reasons[0] for e in sorted(excluded, key=lambda e: (e.run_id, e.seq)))


def _values(fs: list[figures.CellFigures], metric: Metric) -> list[float]:
    return [float(v) for v in (metric.value(f) for f in fs) if v is not None]


@dataclass(frozen=True)
class Spread:
    """How precise the compared figures are so far (for adaptive repetitions)."""

    worst_half_width: float | None  # widest relative CI half-width among the pairs that have one
    pairs: int  # pairs (or cells, without a baseline) with enough valid runs for a verdict
    open_pairs: int  # pairs still short of stats.MIN_RUNS valid runs on a side (invalid runs count for nothing)
    settled: int = 0  # pairs the outcomes decided (a side fails the load), with MIN_RUNS valid runs a side

    def narrow_enough(self, target: float) -> bool:
        if self.open_pairs:
            return False
        if self.worst_half_width is None:
            return self.pairs == 0 and self.settled > 0  # every pair settled by the outcomes
        return self.worst_half_width <= target


def spread(cells: Iterable[StoredCell], baseline: str | None, metric: Metric = METRICS[0]) -> Spread:
    """With a baseline: the relative half-width of each comparison's CI of the ratio of
    medians (what a verdict prints). Without: each cell's CI of its median. A pair with
    fewer than MIN_RUNS valid runs a side is open whatever its interval: it could not
    get a verdict yet, so the repetitions must go on (up to the cap). A pair the
    outcomes decide (a side fails the load) is settled once both sides have MIN_RUNS
    valid runs: its interval is no longer the question."""
    cells = list(cells)
    by, _ = _split(cells)
    asked = list(dict.fromkeys(along(cells, axes.STACK)))  # every (question, stack), valid runs or not
    widths: list[float] = []
    open_pairs = settled = 0
    for q, label in asked:
        if label == baseline:
            continue
        mine = _values(by.get((q, label), []), metric)
        if baseline is None:
            base: list[float] = []
            w = stats.ci_half_width(stats.summarize(mine)) if len(mine) >= stats.MIN_RUNS else None
        else:
            base = _values(by.get((q, baseline), []), metric)
            w = None
            ours, theirs = side_of(label, by.get((q, label), [])), side_of(baseline, by.get((q, baseline), []))
            if min(ours.runs, theirs.runs) >= stats.MIN_RUNS and (ours.fails or theirs.fails):
                settled += 1  # by the outcomes: neither open nor a width
                continue
            if min(len(base), len(mine)) >= stats.MIN_RUNS:
                c = stats.compare(base, mine, resamples=500)
                if c.ci_low is not None and c.ci_high is not None and c.ratio:
                    w = (c.ci_high - c.ci_low) / 2 / c.ratio
        if w is None:
            open_pairs += 1
        else:
            widths.append(w)
    return Spread(max(widths) if widths else None, len(widths), open_pairs, settled)
