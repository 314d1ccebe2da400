"""Verdicts: for each question a plan asks (workload × concurrency × keep-alive), each
stack against the plan's baseline, on each metric — faster / slower / no significant
difference / equivalent, with the interval and the number of runs beside it.

The unit of replication is the run (one cell's repetition), never the request: requests
inside one run are autocorrelated, and treating them as samples manufactures
significance. Repetitions that failed a validity gate (stackbench/caveats.py:
INVALIDATING, a failed server) are left out, and said so.

Holm–Bonferroni adjusts each metric's family of comparisons in a run (all its
throughput comparisons together, all its p99 ones together, …): a plan that asks many
questions must not find differences by asking often (Holm 1979, via stats.adjust).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Iterable

import difflib

from stackbench import caveats
from stackbench.analysis import figures, questions, stats
from stackbench.errors import UsageError
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell
from stackbench.model.run import StoredRun
from stackbench.states import CellStatus


@dataclass(frozen=True)
class Metric:
    key: str
    label: str  # for a sentence: "throughput", "p99 latency"
    higher_is_better: bool
    value: Callable[[figures.CellFigures], float | None]


METRICS: tuple[Metric, ...] = (
    # In page mode these are page views/s and page load time (CellFigures.throughput).
    Metric("throughput", "throughput", True, lambda f: f.throughput),
    Metric("latency_p50", "p50 latency", False, lambda f: f.p50_us),
    Metric("latency_p99", "p99 latency", False, lambda f: f.p99_us),
    Metric("memory", "peak memory", False, lambda f: f.memory_peak_bytes),
    Metric("cpu_per_request", "CPU per request", False, lambda f: f.cpu_us_per_request),
)
METRIC = {m.key: m for m in METRICS}


@dataclass(frozen=True)
class Excluded:
    """A repetition shown but kept out of verdicts, and why."""

    run_id: int
    seq: int
    stack_label: str
    question: Question
    reasons: tuple[str, ...]  # caveat codes, or "failed"


@dataclass(frozen=True)
class Verdict:
    question: Question
    metric: Metric
    baseline: str
    candidate: str
    comparison: stats.Comparison
    baseline_values: tuple[float, ...]
    candidate_values: tuple[float, ...]
    # repetitions left out by a validity gate, and their reasons (codes), per side
    baseline_excluded: tuple[str, ...] = ()
    candidate_excluded: tuple[str, ...] = ()

    @property
    def better(self) -> bool | None:
        """True: the candidate is significantly better on this metric; False: worse;
        None: no significant difference, equivalent, or not enough runs."""
        v = self.comparison.verdict
        if v == stats.Verdict.HIGHER:
            return self.metric.higher_is_better
        if v == stats.Verdict.LOWER:
            return not self.metric.higher_is_better
        return None


@dataclass(frozen=True)
class Verdicts:
    baseline: str
    verdicts: tuple[Verdict, ...]
    excluded: tuple[Excluded, ...]
    family_sizes: dict[str, int]  # per metric key: comparisons adjusted together (Holm)
    band: float

    def for_metric(self, key: str) -> list[Verdict]:
        return [v for v in self.verdicts if v.metric.key == key]

    def excluded_by_reason(self) -> dict[str, int]:
        """How many repetitions each reason kept out (one may have several), by reason."""
        counts: dict[str, int] = {}
        for e in self.excluded:
            for r in e.reasons:
                counts[r] = counts.get(r, 0) + 1
        return dict(sorted(counts.items()))


def invalid_reasons(cell: StoredCell) -> tuple[str, ...]:
    """Why a repetition cannot enter a verdict; empty when it can."""
    reasons = []
    if cell.status != CellStatus.OK or cell.engine is None:
        reasons.append("failed")
    for c in cell.caveats:
        if caveats.invalidates(c) and c.code not in reasons:
            reasons.append(c.code)
    return tuple(reasons)


def split_valid(cells: Iterable[StoredCell]) -> tuple[list[StoredCell], list[Excluded]]:
    valid, excluded = [], []
    for c in questions.levels(cells):
        reasons = invalid_reasons(c)
        if reasons:
            excluded.append(Excluded(c.run_id, c.seq, c.stack_label, questions.of(c), reasons))
        else:
            valid.append(c)
    return valid, excluded


def samples(cells: Iterable[StoredCell]) -> dict[tuple[Question, str], list[figures.CellFigures]]:
    """Valid repetitions by (question, stack label), in run order."""
    out: dict[tuple[Question, str], list[figures.CellFigures]] = {}
    for c in sorted(questions.levels(cells), key=lambda c: (c.run_id, c.seq)):
        f = figures.of(c)
        out.setdefault((f.question, f.stack_label), []).append(f)
    return out


def decide(cells: Iterable[StoredCell], baseline: str, *, band: float = stats.DEFAULT_EQUIVALENCE,
           metrics: tuple[Metric, ...] = METRICS) -> Verdicts:
    """Every stack against `baseline` on every question both answered."""
    valid, excluded = split_valid(cells)
    by = samples(valid)
    asked = sorted({q for q, _ in by} | {e.question for e in excluded}, key=Question.sort_key)
    labels = list(dict.fromkeys([f.stack_label for fs in by.values() for f in fs]
                                + [e.stack_label for e in excluded]))
    out: list[Verdict] = []
    sizes: dict[str, int] = {}
    for metric in metrics:
        family: list[Verdict] = []
        for q in asked:
            base = _values(by.get((q, baseline), []), metric)
            for label in labels:
                if label == baseline:
                    continue
                if (q, label) not in by and not any(e.question == q and e.stack_label == label for e in excluded):
                    continue
                cand = _values(by.get((q, label), []), metric)
                if not base and not cand:
                    continue
                family.append(Verdict(q, metric, baseline, label, stats.compare(base, cand, band=band),
                                      tuple(base), tuple(cand), _reasons(excluded, q, baseline),
                                      _reasons(excluded, q, label)))
        adjusted = stats.adjust([v.comparison for v in family])
        out += [replace(v, comparison=c) for v, c in zip(family, adjusted)]
        sizes[metric.key] = sum(1 for v in family if v.comparison.p_value is not None)
    return Verdicts(baseline, tuple(out), tuple(excluded), sizes, band)


def for_run(run: StoredRun, cells: list[StoredCell], baseline: str | None = None) -> Verdicts | None:
    """A stored run's verdicts: against `baseline` when given (it must be one of the
    run's stacks), else the plan's; None when there is neither."""
    checked = run.plan_checked or {}
    if baseline is not None:
        labels = list(dict.fromkeys(c.stack_label for c in cells))
        if baseline not in labels:
            close = difflib.get_close_matches(baseline, labels, n=1)
            raise UsageError(f"run {run.id} has no stack {baseline!r}"
                             + (f" (did you mean {close[0]!r}?)" if close else ""),
                             hint=f"its stacks: {', '.join(labels)}")
    baseline = baseline or checked.get("baseline")
    if not baseline:
        return None
    return decide(cells, baseline, band=checked.get("equivalence", stats.DEFAULT_EQUIVALENCE))


def _reasons(excluded: list[Excluded], q: Question, label: str) -> tuple[str, ...]:
    """One entry per excluded repetition of (q, label): its first reason."""
    return tuple(e.reasons[0] for e in excluded if e.question == q and e.stack_label == label)


def _values(fs: list[figures.CellFigures], metric: Metric) -> list[float]:
    return [float(v) for v in (metric.value(f) for f in fs) if v is not None]


@dataclass(frozen=True)
class Spread:
    """How precise the compared figures are so far (for adaptive repetitions)."""

    worst_half_width: float | None  # widest relative CI half-width among the pairs that have one
    pairs: int  # pairs (or cells, without a baseline) with enough valid runs for a verdict
    open_pairs: int  # pairs still short of stats.MIN_RUNS valid runs on a side (invalid runs count for nothing)

    def narrow_enough(self, target: float) -> bool:
        return self.open_pairs == 0 and self.worst_half_width is not None and self.worst_half_width <= target


def spread(cells: Iterable[StoredCell], baseline: str | None, metric: Metric = METRICS[0]) -> Spread:
    """With a baseline: the relative half-width of each comparison's CI of the ratio of
    medians (what a verdict prints). Without: each cell's CI of its median. A pair with
    fewer than MIN_RUNS valid runs a side is open whatever its interval: it could not
    get a verdict yet, so the repetitions must go on (up to the cap)."""
    cells = list(cells)
    valid, _ = split_valid(cells)
    by = samples(valid)
    asked = list(dict.fromkeys(samples(cells)))  # every (question, stack), valid runs or not
    widths: list[float] = []
    open_pairs = 0
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
            if min(len(base), len(mine)) >= stats.MIN_RUNS:
                c = stats.compare(base, mine, resamples=500)
                if c.ci_low is not None and c.ci_high is not None and c.ratio:
                    w = (c.ci_high - c.ci_low) / 2 / c.ratio
        if w is None:
            open_pairs += 1
        else:
            widths.append(w)
    return Spread(max(widths) if widths else None, len(widths), open_pairs)
