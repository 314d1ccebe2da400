"""How many runs a question needs: the power of the verdict rule (stats.py) for a family
of comparisons at a given run-to-run noise — what `run --dry-run` says of a plan before
its first cell, and where adaptive repetitions (repetitions = "auto") stop.

The model. Each run's figure is lognormal around its stack's true value: log x = μ + ε,
ε ~ N(0, σ²), the same σ for both stacks (stats.py: the noise is multiplicative), so a
coefficient of variation CV is σ = sqrt(log(1 + CV²)) (the lognormal's CV² = e^(σ²) − 1).
A true ratio r between the stacks is a shift d = |log r|. With n runs a side:

- Welch's t on the logs (stats.welch_log): its statistic is about noncentral t with
  noncentrality d / (σ·sqrt(2/n)). Its degrees of freedom are estimated from the runs
  (Welch–Satterthwaite) and so are random: 2(n − 1) only when both sides' sample
  variances happen to agree, less otherwise. WELCH_DF = 1.75 (n − 1) matches a
  simulation of Welch's test within 0.01 of power for n = 5…53 and 1…12 comparisons
  (2(n − 1) overstates it by up to 0.05 at n = 5 and α/12).
- Holm's adjustment (Holm 1979) compares the smallest p of a family of k with α/k: a
  difference that is the only real one in its family must pass that, so the power is
  taken at α/k — the worst case, and what one real difference among many equal stacks
  faces (with several real ones, Holm's later steps are easier).
- The verdict's interval is the test's dual, drawn at Holm's level (stats.py,
  "Intervals"), so it adds no condition of its own. tests/test_stats_power.py checks
  the model against a simulation of the whole rule: within 0.06 at 5–10 runs, families
  of 1 to 12. (Before, a bootstrap interval of the ratio of medians had to agree too,
  modelled with a median's π/2 variance: that condition is gone.)

Power is the chance of finding a real difference of that size: POWER = 0.8, "4 times in
5" (Cohen 1988, "Statistical Power Analysis for the Behavioral Sciences": the
conventional target). The difference a plan should find: DETECT = 20 % (bench/RESULTS.md,
"Power that fits the question"; the stacks compared here differ by 20–80 %).

This machine's noise is what its earlier runs showed (noise(): the median over stacks
and questions of the run-to-run spread of throughput), when the store has some; else
MACHINE_CV, measured on the 2-core VMs the lab was built on (bench/RESULTS.md, "Power
that fits the question").
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from stackbench.analysis import questions, student_t
from stackbench.analysis.stats import ALPHA, MIN_RUNS
from stackbench.model.cell import StoredCell

DETECT = 0.20  # the difference a plan should find, as a share (B/A = 1.2 or 1/1.2)
POWER = 0.80  # found 4 times in 5
MAX_RUNS = 200  # no advice beyond this many runs a side: "more than 200"
WELCH_DF = 1.75  # × (n − 1): the effective degrees of freedom of Welch's test (see above)
# Throughput CV between runs of one stack and question on this lab's 2-core VMs: the
# median over the 71 stack × question groups of the 14 scenarios' quick runs (1–2 s
# windows), measured on a quiet machine (bench/RESULTS.md, "Power that fits the
# question"; 6.5 %, quartiles 3.5–9.8 %). An earlier measurement while the machine was
# busy with other work gave 25 %: what a busy host does, not what this machine does.
MACHINE_CV = 0.065
MIN_GROUP_RUNS = 3  # a stack × question with fewer valid runs tells nothing of the spread


def sigma_of_cv(cv: float) -> float:
    """σ of the logs of a lognormal whose coefficient of variation is `cv`."""
    return math.sqrt(math.log1p(cv * cv))


def cv_of_sigma(sigma: float) -> float:
    return math.sqrt(math.expm1(sigma * sigma))


def power(n: int, cv: float, difference: float = DETECT, family: int = 1, alpha: float = ALPHA) -> float:
    """How often n runs a side find a true difference (B/A = 1 + difference) in a family of
    `family` comparisons, at run-to-run noise `cv` (the module docstring's model)."""
    if n < MIN_RUNS or family < 1:
        return 0.0
    d = abs(math.log1p(difference))
    sigma = sigma_of_cv(cv)
    if d == 0:
        return 0.0
    if sigma == 0:
        return 1.0
    df = WELCH_DF * (n - 1)
    ncp = d / (sigma * math.sqrt(2 / n))
    return student_t.noncentral_two_sided_tail(student_t.critical(alpha / family, df), df, ncp)


def runs_needed(cv: float, difference: float = DETECT, family: int = 1, target: float = POWER) -> int | None:
    """The fewest runs a side (≥ MIN_RUNS) that find `difference` with power `target`;
    None when more than MAX_RUNS would be needed. Power grows with n: a binary search."""
    if power(MAX_RUNS, cv, difference, family) < target:
        return None
    lo, hi = MIN_RUNS, MAX_RUNS  # power(hi) ≥ target
    if power(lo, cv, difference, family) >= target:
        return lo
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if power(mid, cv, difference, family) >= target:
            hi = mid
        else:
            lo = mid
    return hi


def smallest_difference(n: int, cv: float, family: int = 1, target: float = POWER) -> float | None:
    """The smallest difference (B/A − 1 > 0) that n runs a side find with power `target`
    among `family` comparisons at noise `cv`; None below MIN_RUNS or beyond a 100-fold one."""
    top = 99.0
    if n < MIN_RUNS or power(n, cv, top, family) < target:
        return None
    # power rises with the difference; bisection on the log scale of 1 + difference
    _, hi = _narrow(lambda d: power(n, cv, d, family) < target, 0.0, top,
                    lambda a, b: math.expm1((math.log1p(a) + math.log1p(b)) / 2))
    return hi


def tolerated_cv(n: int, difference: float = DETECT, family: int = 1, target: float = POWER) -> float | None:
    """The highest run-to-run CV at which n runs a side still find `difference` with power
    `target` among `family` comparisons; None when not even noiseless runs would."""
    if n < MIN_RUNS:
        return None
    top = 4.0
    if power(n, top, difference, family) >= target:
        return top
    lo, _ = _narrow(lambda cv: power(n, cv, difference, family) >= target, 0.0, top)  # power falls with noise
    return lo


def _narrow(holds: Callable[[float], bool], lo: float, hi: float,
            midpoint: Callable[[float, float], float] = lambda a, b: (a + b) / 2) -> tuple[float, float]:
    """Bisection: [lo, hi] narrowed to 1e-4 around where `holds` turns from true (at lo)
    to false (at hi)."""
    for _ in range(60):
        mid = midpoint(lo, hi)
        if holds(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-4:
            break
    return lo, hi


# ---------------------------------------------------------------- the machine's noise


@dataclass(frozen=True)
class Noise:
    """Run-to-run spread of throughput seen in stored runs."""

    cv: float  # the median over groups of each group's CV (lognormal: from the sd of the logs)
    groups: int  # stack × question × run groups with at least MIN_GROUP_RUNS valid runs


def spread_cv(values: Iterable[float]) -> float | None:
    """One group's CV, from the sample sd of the logs (what the model's σ is); None for
    fewer than 2 values or a value <= 0."""
    v = [float(x) for x in values]
    if len(v) < 2 or min(v) <= 0:
        return None
    return cv_of_sigma(statistics.stdev(math.log(x) for x in v))


def pair_cv(a: Iterable[float], b: Iterable[float]) -> float | None:
    """The run-to-run CV of a comparison: both sides' variances of the logs pooled (the
    model's one σ); None with fewer than 2 runs a side or a value <= 0."""
    a, b = [float(x) for x in a], [float(x) for x in b]
    if len(a) < 2 or len(b) < 2 or min(a + b) <= 0:
        return None
    var = (statistics.variance(math.log(x) for x in a) + statistics.variance(math.log(x) for x in b)) / 2
    return cv_of_sigma(math.sqrt(var))


def noise(valid: Iterable[StoredCell]) -> Noise | None:
    """The machine's noise from stored cells (the valid ones: verdicts.split_valid): for
    every (run, stack, question) with at least MIN_GROUP_RUNS runs, the CV of its
    throughput; their median (a typical pair, not the noisiest one)."""
    groups: dict[tuple[Any, ...], list[float]] = {}
    for c in valid:
        rps = c.engine.requests_per_s if c.engine is not None else None
        if rps:
            groups.setdefault((c.run_id, c.stack_label, questions.of(c)), []).append(rps)
    cvs = [cv for vs in groups.values() if len(vs) >= MIN_GROUP_RUNS for cv in [spread_cv(vs)] if cv is not None]
    if not cvs:
        return None
    return Noise(statistics.median(cvs), len(cvs))


# ---------------------------------------------------------------- a plan


@dataclass(frozen=True)
class PlanPower:
    """What a plan's repetitions can decide, before it runs."""

    runs: int  # runs a side: the plan's repetitions (the cap, with repetitions = "auto")
    family: int  # comparisons per metric, adjusted together (Holm)
    cv: float  # the noise assumed
    measured: Noise | None  # where cv came from: earlier runs, or None (MACHINE_CV)
    power: float  # of a DETECT difference
    smallest: float | None  # the smallest difference found with POWER
    needed: int | None  # runs a side that find DETECT with POWER (None: more than MAX_RUNS)

    @property
    def enough(self) -> bool:
        return self.power >= POWER

    @property
    def too_few(self) -> bool:
        """Fewer runs a side than any verdict needs (stats.MIN_RUNS)."""
        return self.runs < MIN_RUNS


def of_plan(runs: int, family: int, measured: Noise | None) -> PlanPower:
    cv = measured.cv if measured is not None else MACHINE_CV
    return PlanPower(runs, family, cv, measured, power(runs, cv, DETECT, family),
                     smallest_difference(runs, cv, family), runs_needed(cv, DETECT, family))


# ---------------------------------------------------------------- adaptive repetitions


@dataclass(frozen=True)
class Readiness:
    """Whether every compared pair has the runs its own noise needs (for repetitions = "auto")."""

    family: int
    pairs: int  # throughput comparisons with a test (or decided by the outcomes)
    short: int  # of them, with fewer valid runs a side than their noise needs
    most_needed: int | None  # the most runs a side any pair needs; None: more than MAX_RUNS (or none known)

    @property
    def enough(self) -> bool:
        return self.pairs > 0 and self.short == 0


def readiness(pairs: Iterable[tuple[Sequence[float], Sequence[float], bool]], family: int) -> Readiness:
    """`pairs`: each throughput comparison's baseline values, candidate values, and whether
    it is already settled without a test (a side fails the load). A pair is ready when its
    runs a side reach runs_needed() at its own noise (pair_cv) for a DETECT difference
    among `family` comparisons.

    Why stopping on this keeps the tests honest: the decision to go on looks at the runs'
    spread only, never at the difference between the stacks — Stein's two-stage procedure
    (Stein 1945, "A two-sample test for a linear hypothesis whose power is independent of
    the variance", Ann. Math. Statist. 16:243–258), where the second stage's size depends
    on the first stage's variance alone. Stopping when a p-value is small would inflate
    the false-positive rate with every look."""
    total = short = 0
    most: int | None = 0
    for base, cand, settled in pairs:
        total += 1
        if settled:
            continue
        cv = pair_cv(base, cand)
        need = runs_needed(cv, DETECT, max(1, family)) if cv is not None else None
        if need is None:
            short += 1
            most = None
            continue
        if most is not None:
            most = max(most, need)
        if min(len(base), len(cand)) < need:
            short += 1
    return Readiness(family, total, short, most if total else None)
