"""Statistics over repetitions: one cell's summary, and candidate B against baseline A.

Pure: numbers in, numbers out, no I/O. "Not computable" is None, never 0.

The unit of replication is the run: each value passed here is one repetition's figure
(its throughput, its p99, …). Requests inside one run are autocorrelated; treating them
as samples would manufacture significance.

Verdict rule (compare(), and again in adjust() after Holm)
-----------------------------------------------------------
1. INSUFFICIENT if either side has fewer than MIN_RUNS runs, or the ratio or its
   interval is not computable (a baseline median <= 0, or, without the logs, a baseline
   value <= 0, which lets a resampled baseline median reach 0). No test is made then:
   p_value is None, so the comparison does not join a Holm family it could not win
   anyway. `runs_needed` says how many more runs a side would make it decidable (None
   when more runs would not help, e.g. a baseline median of 0).
2. EQUIVALENT if the whole interval of the ratio lies inside [1 - band, 1 + band]. This
   is an interval-inclusion equivalence test (Schuirmann 1987's two one-sided tests are
   the same thing with a 1 - 2α interval; a 95 % interval inside the band is the
   stricter, α = 2.5 % version). It needs no p-value: "the data rule out any difference
   bigger than the band" is what a reader wants from "equivalent".
3. HIGHER / LOWER only if the (Holm-adjusted) p of the test below is < ALPHA AND the
   interval of the ratio excludes 1 on that side AND the test's statistic points the
   same way. With every value > 0 the interval is the test's own (below), so the three
   agree by construction; with a value <= 0 (rank test, bootstrap interval of medians)
   requiring all three means a verdict never contradicts the interval printed beside it.
4. Otherwise NO_DIFFERENCE.

The test: Welch's t on the logarithms of the values (Welch 1947, "The generalization of
'Student's' problem when several different population variances are involved",
Biometrika 34:28–35; degrees of freedom by Welch–Satterthwaite, Satterthwaite 1946).
- Why logs: every metric compared here (throughput, latencies, memory, CPU per request)
  is positive, and run-to-run noise on them is multiplicative — a busy host slows a run
  by a share, not by a fixed number of requests — so the log makes the noise additive
  and about equal for a fast and a slow stack, and the test is of the ratio of geometric
  means, the ratio a verdict prints (Limpert, Stahel & Abbt 2001,
  "Log-normal distributions across the sciences", BioScience 51:341–352; Keene 1995,
  "The log transformation is special", Stat. Med. 14:811–819).
- Why Welch rather than a rank test: its p is not floored by the number of runs. The
  exact Mann–Whitney p cannot go below 2 / C(2n, n) (2/252 ≈ 0.0079 at 5 vs 5), and
  Holm's first step over a family of k comparisons needs p < α/k (0.0042 for k = 12):
  such a plan could never give a verdict, however clear the difference. Welch's p falls
  as the evidence grows, at any n ≥ 2; power.py says beforehand how many runs a family
  needs at a given noise (and the dry run says it for a plan).
- Why Welch rather than Student: it does not assume both stacks are equally noisy (they
  are not: prefork under keep-alive varies far more than nginx).
- Values <= 0 (a failed run that served nothing): the log is undefined, so that
  comparison falls back to the Mann–Whitney rank test (below), which needs no transform
  — with its floor, so with 5 runs a side it decides alone or in a small family only.
  Whether such a stack "fails the load" is the outcome rule's question (verdicts.py),
  not this test's.
- Zero variance on both sides (all runs of each stack equal): t = d / 0. Equal means
  give p = 1 (no evidence of any difference); different means give p = 0, the limit of
  Welch's p as both variances go to 0 with the difference fixed — the runs were exactly
  repeatable and differ (R's t.test refuses such data as "essentially constant"; the
  limit is the answer that matches what the runs show). Still no verdict without the
  interval agreeing, and MIN_RUNS a side.
- Fewer than 2 runs a side: no variance, no test (None); MIN_RUNS keeps verdicts away
  from that anyway.

Why MIN_RUNS = 5, although Welch on logs can reach a small p with 3 a side: with 3 runs
a side Welch's variance has 2 degrees of freedom per side, so one slow run decides the
verdict, and the t quantile at so few degrees of freedom (4.3 at 95 %, 2 df) makes the
interval nearly useless; the bootstrap interval of a median (the fallback) is the range
of the runs at 3 (P(median* = x_(1)) = P(Binomial(3, 1/3) ≥ 2) = 7/27), covering the
true median only 1 − 2·(1/2)³ = 75 % of the time, and about 94 % at 5. At this machine's
noise (bench/RESULTS.md: a CV of 5–25 % between runs) 3 a side would find only huge
differences anyway.

Holm–Bonferroni over each metric's family (Holm 1979, Scand. J. Statist. 6:65–70):
the family-wise error rate stays ≤ α under any dependence between the comparisons.
tests/test_stats_power.py checks it by simulation with this machine's noise, and how
often a 20 % difference is found with the runs the plans ask for.

Intervals of a comparison. With every value > 0: Welch's interval of the difference of
mean logs, exp(d ± t·se) — the ratio of geometric means with the interval that is the
test's dual, so "the interval excludes 1" and "p < 1 − level" are one statement. Its
level follows Holm's decision over the family (adjust()): with k comparisons tested and
r of them decided, a decided one is shown at 1 − α/(k − r + 1) and an undecided one at
1 − α/(k − r). Holm decided the j-th smallest p because p_(j) < α/(k − j + 1) ≤
α/(k − r + 1), so its interval excludes 1; the first undecided p was ≥ α/(k − r) and
every later one is larger, so theirs contain it. A verdict and its interval never
disagree: every interval that excludes 1 carries a verdict, and none that contains it
does. One comparison alone (k = 1) or a family Holm decides entirely (r = k) is shown
at 95 %; a family where nothing is decided at Bonferroni's 1 − α/k. (Before, a
bootstrap interval of the ratio of medians sat beside the t test: at 5 runs a side it
was narrower than the test, so a line could read "−7 %, CI −24 % to −2 %, not
significant".)

With a value <= 0 (a run that served nothing): the ratio of medians and its bootstrap
percentile interval at 95 % (Efron & Tibshirani 1993, "An Introduction to the
Bootstrap", ch. 13), seeded `random.Random(seed)` so a report is reproducible; a cell's
own summary (summarize()) uses the same interval of its median. Why percentile rather
than BCa (E&T 1993 ch. 14): BCa's acceleration is estimated by the jackknife, and the
jackknife is inconsistent for the median, a non-smooth statistic (E&T 1993 §11.6) —
with 5–15 runs its estimate jumps with every added run; and BCa's bias correction z0 is
ill-defined when, as for the median of a few values, the bootstrap distribution has
large atoms at the sample median. The percentile interval is simple,
transformation-respecting (so the interval of B/A is the reciprocal of the interval of
A/B up to resampling noise) and documented.
"""

from __future__ import annotations

import enum
import math
import random
from bisect import bisect_right
from dataclasses import dataclass, replace
from functools import lru_cache
from statistics import mean as _exact_mean, stdev as _exact_stdev
from typing import Iterable, Sequence

from stackbench.analysis import student_t

ALPHA = 0.05
DEFAULT_EQUIVALENCE = 0.02  # ±2 %: the default practical band (plan key `equivalence`)


def band_of(stored: float | None) -> float:
    """The equivalence band a run's checked plan stored (the default when it stored none)."""
    return DEFAULT_EQUIVALENCE if stored is None else stored
MIN_RUNS = 5  # fewer a side -> no verdict (see the module docstring)
WELCH_LOG = "welch_log"  # Comparison.test: Welch's t on the logs of the values
MANN_WHITNEY = "mann_whitney"  # the fallback when a value is <= 0

# Exact Mann–Whitney null distribution up to this many values in both samples together
# (a few ms at worst, cached by tie pattern); beyond it the normal approximation is
# within a few thousandths of the exact p (tests/test_stats.py checks it at 24 vs 25).
EXACT_MAX_N = 50
# Resample medians are drawn from their exact law up to this sample size (the law has
# O(n²) support points); beyond it, resamples are drawn literally. Same distribution.
LAW_MAX_N = 100


@dataclass(frozen=True)
class Summary:
    """One cell over its repetitions."""

    n: int
    median: float | None
    mean: float | None
    min: float | None
    max: float | None
    cv: float | None  # sample stdev (n - 1) / |mean|; None when n < 2 or mean == 0
    ci_low: float | None  # bootstrap percentile CI of the median; None when n < 2
    ci_high: float | None


class Verdict(enum.Enum):
    HIGHER = "higher"  # B's median significantly above A's
    LOWER = "lower"
    NO_DIFFERENCE = "no_difference"
    EQUIVALENT = "equivalent"  # the whole CI of the ratio lies inside 1 ± band
    INSUFFICIENT = "insufficient"  # fewer than MIN_RUNS a side, or the ratio is not computable


@dataclass(frozen=True)
class Comparison:
    """B against baseline A."""

    n_a: int
    n_b: int
    ratio: float | None  # B / A: of geometric means (Welch on logs), or of medians (a value <= 0)
    ci_low: float | None  # its interval at `confidence` (see "Intervals" in the module docstring)
    ci_high: float | None
    p_value: float | None  # two-sided, of `test`; None when no test was made (INSUFFICIENT)
    p_adjusted: float | None  # after Holm (== p_value until adjust())
    verdict: Verdict
    runs_needed: int | None  # when INSUFFICIENT for lack of runs: how many more a side
    band: float = DEFAULT_EQUIVALENCE  # the equivalence band the verdict was decided with (adjust() re-decides)
    direction: int = 0  # +1: the test finds B above A, -1 below (Welch: the mean log difference; ranks: U_B - n_a·n_b/2)
    test: str | None = None  # WELCH_LOG, MANN_WHITNEY (a value <= 0), or None when no test was made
    confidence: float = 0.95  # the interval's level: 1 − α/m, m from Holm's decision (adjust())
    logs: LogDifference | None = None  # Welch's estimate on the logs; None: medians and the bootstrap


@dataclass(frozen=True)
class LogDifference:
    """Welch's estimate of log B − log A: all an interval at any level needs."""

    diff: float  # mean log B − mean log A
    se: float  # sqrt(s²_A/n_A + s²_B/n_B)
    df: float | None  # Welch–Satterthwaite; None when se == 0 (every run of each side equal)

    def interval(self, confidence: float) -> tuple[float, float]:
        """The ratio's interval exp(diff ± t·se): dual to the two-sided Welch test — it
        excludes 1 exactly when the test's p < 1 − confidence."""
        if self.df is None:
            return math.exp(self.diff), math.exp(self.diff)
        half = student_t.critical(1 - confidence, self.df) * self.se
        return math.exp(self.diff - half), math.exp(self.diff + half)


# ---------------------------------------------------------------- descriptive


def _clean(values: Iterable[float]) -> list[float]:
    out = [float(v) for v in values]
    for v in out:
        if not math.isfinite(v):
            raise ValueError(f"statistics need finite values, got {v!r}")
    return out


def _median_sorted(s: Sequence[float]) -> float:
    """The sample median: the middle order statistic, or the mean of the two middle ones
    (Hyndman & Fan 1996's definition 7 at p = 0.5; same as statistics.median)."""
    n = len(s)
    h = n // 2
    return s[h] if n % 2 else (s[h - 1] + s[h]) / 2


def median(values: Iterable[float]) -> float | None:
    s = sorted(_clean(values))
    return _median_sorted(s) if s else None


def summarize(values: Iterable[float], confidence: float = 0.95, resamples: int = 2000,
              seed: int = 1) -> Summary:
    """Median, mean, range, coefficient of variation and a bootstrap percentile CI of the
    median (Efron & Tibshirani 1993 ch. 13; see percentile_interval) of one cell's runs.

    cv is the sample standard deviation (n - 1 denominator) over |mean| (the usual
    coefficient of variation, e.g. Everitt, Cambridge Dictionary of Statistics);
    None for n < 2 or a mean of 0. The CI is None for n < 2; for all-equal values it
    collapses to that value."""
    _check(confidence, resamples)
    s = sorted(_clean(values))
    n = len(s)
    if n == 0:
        return Summary(0, None, None, None, None, None, None, None)
    mu = float(_exact_mean(s))  # exact (fractions): all-equal values give that value back
    cv = None
    if n >= 2 and mu != 0:
        cv = float(_exact_stdev(s)) / abs(mu)
    lo = hi = None
    if n >= 2:
        lo, hi = percentile_interval(resample_medians(s, resamples, random.Random(seed)), confidence)
    return Summary(n, _median_sorted(s), mu, s[0], s[-1], cv, lo, hi)


def ci_half_width(s: Summary) -> float | None:
    """Half the CI of the median relative to the median, (ci_high - ci_low) / 2 / |median|:
    the precision figure adaptive repetition stops on. None when not computable."""
    if s.ci_low is None or s.ci_high is None or not s.median:
        return None
    return (s.ci_high - s.ci_low) / 2 / abs(s.median)


# ---------------------------------------------------------------- bootstrap


@lru_cache(maxsize=128)
def _median_position_law(n: int) -> tuple[tuple[tuple[int, int], ...], tuple[float, ...]]:
    """The exact law of the median of a bootstrap resample, over positions in the sorted
    sample: pairs (i, j) of 0-based positions whose values' mean is the resample median
    (i == j for a middle order statistic), with cumulative probabilities.

    Efron 1979 ("Bootstrap methods: another look at the jackknife", Ann. Statist. 7, §3)
    and Maritz & Jarrett 1978 (JASA 73) give it for odd n = 2k - 1: the resample median
    is ≤ x_(i) iff at least k of the n draws are ≤ x_(i), so
        P(median* ≤ x_(i)) = P(Binomial(n, i/n) ≥ k).
    For even n = 2k the median is (X*_(k) + X*_(k+1)) / 2. For positions i < j (1-based)
    the k-th order statistic is x_(i) and the (k+1)-th is x_(j) iff exactly k draws are
    ≤ x_(i) with the largest of them at i, and the other k are ≥ x_(j) with the smallest
    at j:  P = C(n, k)·(i^k − (i−1)^k)·((n−j+1)^k − (n−j)^k) / n^n; the diagonal i = j is
    the rest of P(X*_(k) = x_(i)). Integer arithmetic throughout, so the law is exact.
    It depends on n only, hence the cache."""
    total = n ** n

    def at_most(i: int, k: int) -> int:  # n^n · P(X*_(k) ≤ x_(i))
        return sum(math.comb(n, t) * i ** t * (n - i) ** (n - t) for t in range(k, n + 1))

    weights: list[tuple[tuple[int, int], int]] = []
    if n % 2:
        k = (n + 1) // 2
        f = [at_most(i, k) for i in range(n + 1)]
        weights = [((i - 1, i - 1), f[i] - f[i - 1]) for i in range(1, n + 1)]
    else:
        k = n // 2
        f = [at_most(i, k) for i in range(n + 1)]
        pw = [i ** k for i in range(n + 1)]
        ck = math.comb(n, k)
        for i in range(1, n + 1):
            low = ck * (pw[i] - pw[i - 1])
            off = 0
            for j in range(i + 1, n + 1):
                w = low * (pw[n - j + 1] - pw[n - j])
                weights.append(((i - 1, j - 1), w))
                off += w
            weights.append(((i - 1, i - 1), f[i] - f[i - 1] - off))
    pairs, cum, acc = [], [], 0
    for pair, w in weights:
        if w:
            acc += w
            pairs.append(pair)
            cum.append(acc / total)
    assert acc == total
    return tuple(pairs), tuple(cum)


def resample_medians(sorted_values: Sequence[float], resamples: int, rng: random.Random) -> list[float]:
    """Medians of `resamples` bootstrap resamples (n draws with replacement) of a sorted
    sample. Each median is drawn from its exact law (_median_position_law) by inverse CDF
    — the same distribution as materialising the resample and taking its median, about
    ten times faster. Samples larger than LAW_MAX_N are resampled literally."""
    s = sorted_values
    n = len(s)
    if n > LAW_MAX_N:
        choices = rng.choices
        return [_median_sorted(sorted(choices(s, k=n))) for _ in range(resamples)]
    pairs, cum = _median_position_law(n)
    vals = [s[i] if i == j else (s[i] + s[j]) / 2 for i, j in pairs]
    r = rng.random
    return [vals[bisect_right(cum, r())] for _ in range(resamples)]


def percentile_interval(replicates: Sequence[float], confidence: float = 0.95) -> tuple[float, float]:
    """The bootstrap percentile interval (Efron & Tibshirani 1993, §13.3): the α/2 and
    1 − α/2 empirical quantiles of the replicates, α = 1 − confidence. Quantile
    definition: the inverse of the empirical CDF, the ⌈qB⌉-th smallest of B
    (Hyndman & Fan 1996, definition 1), as E&T's "B·α-th value"."""
    v = sorted(replicates)
    b = len(v)
    tail = (1 - confidence) / 2

    def q(p: float) -> float:
        # 1e-9: (1 - 0.95) / 2 · 2000 is 50.00000000000004 in floating point, not 50
        return v[min(b - 1, max(0, math.ceil(p * b - 1e-9) - 1))]

    return q(tail), q(1 - tail)


# ---------------------------------------------------------------- Mann–Whitney


def _doubled_midranks(values: Sequence[float]) -> tuple[list[int], int]:
    """Twice the mid-ranks (integers) of the values, in input order, and Σ(t³ − t) over
    tie groups of size t (for the variance's tie correction)."""
    order = sorted(range(len(values)), key=values.__getitem__)
    ranks = [0] * len(values)
    ties = 0
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        r2 = i + j + 2  # (i+1) + (j+1): twice the mean 1-based rank of the group
        for k in range(i, j + 1):
            ranks[order[k]] = r2
        t = j - i + 1
        ties += t ** 3 - t
        i = j + 1
    return ranks, ties


@lru_cache(maxsize=256)
def _rank_sum_counts(ranks: tuple[int, ...], m: int) -> tuple[int, ...]:
    """counts[t] = how many of the C(N, m) ways to pick m of the N (integer) ranks sum to t:
    the exact permutation null distribution of a rank sum, conditional on the tie pattern
    (Hollander, Wolfe & Chicken 2014, "Nonparametric Statistical Methods", 3rd ed., §4.1
    on ties; Lehmann 1975, "Nonparametrics", ch. 1 on ties). Computed as the coefficients of
    Π(1 + y·x^r) (the shift algorithm of Streitberg & Röhmel 1986), each polynomial in x
    packed into one Python integer so a step is one shift and one add."""
    n_all = len(ranks)
    # every partial count is ≤ C(N, m) when m ≤ N/2: fixed-width slots never overflow
    width = (math.comb(n_all, m).bit_length() // 8 + 1) * 8
    polys = [1] + [0] * m
    for i, r in enumerate(ranks):
        shift = r * width
        for k in range(min(m, i + 1), 0, -1):
            polys[k] += polys[k - 1] << shift
    p = polys[m]
    step = width // 8
    raw = p.to_bytes((p.bit_length() + 7) // 8, "little")
    return tuple(int.from_bytes(raw[o:o + step], "little") for o in range(0, len(raw), step))


def _rank_test(a: Sequence[float], b: Sequence[float]) -> tuple[float, int] | None:
    """Two-sided Mann–Whitney p and the direction of B against A (sign of U_B − mn/2)."""
    m, n = len(a), len(b)
    if not m or not n:
        return None
    n_all = m + n
    r2, ties = _doubled_midranks([*a, *b])
    t_b2 = sum(r2[m:])  # twice B's rank sum
    # U_B = R_B − n(n+1)/2; E[U_B] = mn/2. In doubled units: 2U_B − mn = t_b2 − n(N+1).
    dev2 = t_b2 - n * (n_all + 1)
    direction = (dev2 > 0) - (dev2 < 0)
    if n_all <= EXACT_MAX_N:
        small, t2 = (m, sum(r2[:m])) if m <= n else (n, t_b2)
        g = math.gcd(*r2)  # 2 unless some tie group has even size: halves the work
        counts = _rank_sum_counts(tuple(sorted(x // g for x in r2)), small)
        centre2 = small * (n_all + 1)  # twice E[rank sum]
        d = abs(t2 - centre2)
        # P(|T − E T| ≥ |t − E T|): symmetric without ties, where it equals 2·min(tails)
        extreme = sum(c for t, c in enumerate(counts) if abs(t * g - centre2) >= d)
        return min(1.0, extreme / math.comb(n_all, small)), direction
    # Normal approximation with tie and continuity correction (Hollander, Wolfe & Chicken
    # 2014 §4.1; as scipy.stats.mannwhitneyu(method="asymptotic", use_continuity=True)).
    var = m * n / 12 * ((n_all + 1) - ties / (n_all * (n_all - 1)))
    if var <= 0:
        return 1.0, 0
    z = max(0.0, abs(dev2) / 2 - 0.5) / math.sqrt(var)
    return min(1.0, math.erfc(z / math.sqrt(2))), direction


def mann_whitney_u(a: Iterable[float], b: Iterable[float]) -> float | None:
    """Two-sided p of the Mann–Whitney U (Wilcoxon rank-sum) test (Mann & Whitney 1947,
    Ann. Math. Statist. 18:50–60). None when either sample is empty.

    Exact for up to EXACT_MAX_N values in all: the permutation distribution of the
    (mid-)rank sum, enumerated by _rank_sum_counts. Without ties this is Mann & Whitney's
    exact null; with ties it is the exact conditional null — better than the normal
    approximation at 5 runs a side, where ties of integer microseconds or bytes are
    common. p = P(|W − E W| ≥ |w − E W|), which for untied data is twice the smaller tail
    (5 vs 5 fully separated: 2/252). Larger samples: normal approximation with tie and
    continuity correction."""
    r = _rank_test(_clean(a), _clean(b))
    return None if r is None else r[0]


# ---------------------------------------------------------------- Welch on logs


def _log_moments(values: Sequence[float]) -> tuple[int, float, float]:
    """n, mean and sample variance (n − 1) of the logs. Exact (fractions) like summarize,
    so all-equal values have a variance of exactly 0."""
    logs = [math.log(v) for v in values]
    return len(logs), float(_exact_mean(logs)), float(_exact_stdev(logs)) ** 2


def _log_difference(a: Sequence[float], b: Sequence[float]) -> LogDifference | None:
    """Welch's estimate on the logs; None when a side has fewer than 2 values or a value <= 0."""
    if len(a) < 2 or len(b) < 2 or min(a) <= 0 or min(b) <= 0:
        return None
    n_a, m_a, v_a = _log_moments(a)
    n_b, m_b, v_b = _log_moments(b)
    se_a, se_b = v_a / n_a, v_b / n_b
    if se_a + se_b == 0:  # every run of each side equal: see the module docstring
        return LogDifference(m_b - m_a, 0.0, None)
    # Welch–Satterthwaite; a side with zero variance adds nothing to the denominator
    df = (se_a + se_b) ** 2 / (se_a ** 2 / (n_a - 1) + se_b ** 2 / (n_b - 1))
    return LogDifference(m_b - m_a, math.sqrt(se_a + se_b), df)


def ratio_interval(a: Iterable[float], b: Iterable[float], confidence: float = 0.95) -> tuple[float, float, float] | None:
    """B / A as the ratio of geometric means with Welch's interval on the logs: (ratio,
    low, high). None when a side has fewer than 2 values or a value <= 0."""
    est = _log_difference(_clean(a), _clean(b))
    if est is None:
        return None
    lo, hi = est.interval(confidence)
    return math.exp(est.diff), lo, hi


def _welch_log(a: Sequence[float], b: Sequence[float]) -> tuple[float, int] | None:
    """Two-sided p of Welch's t on the logs, and the direction of B against A (sign of
    mean log B − mean log A). None when a side has fewer than 2 values or a value <= 0."""
    est = _log_difference(a, b)
    if est is None:
        return None
    d = est.diff
    direction = (d > 0) - (d < 0)
    if est.df is None:
        return (1.0 if d == 0 else 0.0), direction
    return student_t.two_sided_p(d / est.se, est.df), direction


def welch_log(a: Iterable[float], b: Iterable[float]) -> float | None:
    """Two-sided p of Welch's t test (Welch 1947) on the logs of the values: the test of
    the ratio of geometric means (see the module docstring). None when not computable:
    fewer than 2 values on a side, or a value <= 0 (the log is undefined)."""
    r = _welch_log(_clean(a), _clean(b))
    return None if r is None else r[0]


def _test(a: Sequence[float], b: Sequence[float]) -> tuple[float, int, str]:
    """The comparison's test: Welch on logs, or Mann–Whitney when a value is <= 0."""
    r = _welch_log(a, b)
    if r is not None:
        return r[0], r[1], WELCH_LOG
    ranked = _rank_test(a, b)
    assert ranked is not None, "compare() tests only sides with runs"
    p, direction = ranked
    return p, direction, MANN_WHITNEY


# ---------------------------------------------------------------- Holm


def holm(p_values: Sequence[float | None]) -> list[float | None]:
    """Holm–Bonferroni adjusted p-values (Holm 1979, Scand. J. Statist. 6:65–70; adjusted
    p-values as in Wright 1992, Biometrics 48:1005–1013): with the k non-None p sorted
    ascending, p̃_(i) = max_{j ≤ i} min(1, (k − j + 1)·p_(j)). Monotone in p, capped at 1,
    never below p; None (no test made) stays None and does not count in k. Rejecting
    p̃ < α controls the family-wise error rate at α under any dependence."""
    made = {i: float(p) for i, p in enumerate(p_values) if p is not None}
    idx = sorted(made, key=lambda i: made[i])
    k = len(idx)
    out: list[float | None] = [None] * len(p_values)
    running = 0.0
    for rank, i in enumerate(idx):
        p = made[i]
        if not 0.0 <= p <= 1.0:
            raise ValueError(f"a p-value must lie in [0, 1], got {p!r}")
        running = max(running, min(1.0, (k - rank) * p))
        out[i] = running
    return out


# ---------------------------------------------------------------- comparison


def _verdict(n_a: int, n_b: int, ratio: float | None, lo: float | None, hi: float | None,
             p: float | None, direction: int, band: float) -> Verdict:
    """The module docstring's rule, in order."""
    if min(n_a, n_b) < MIN_RUNS or ratio is None or lo is None or hi is None:
        return Verdict.INSUFFICIENT
    if lo >= 1 - band and hi <= 1 + band:
        return Verdict.EQUIVALENT
    if p is not None and p < ALPHA:
        if lo > 1 and direction > 0:
            return Verdict.HIGHER
        if hi < 1 and direction < 0:
            return Verdict.LOWER
    return Verdict.NO_DIFFERENCE


def compare(a: Iterable[float], b: Iterable[float], band: float = DEFAULT_EQUIVALENCE, confidence: float = 0.95,
            resamples: int = 2000, seed: int = 1) -> Comparison:
    """B against baseline A: the ratio of geometric means and Welch's interval of it on
    the logs (when every value is > 0; else the ratio of medians and its bootstrap
    percentile interval, A and B resampled independently — Efron & Tibshirani 1993
    §13.3), the two-sided p of Welch's t on the logs (Mann–Whitney when a value is
    <= 0), and a verdict by the module docstring's rule. Seeded: the same input gives the
    same output."""
    _check(confidence, resamples)
    if band < 0:
        raise ValueError(f"the equivalence band must be >= 0, got {band!r}")
    sa, sb = sorted(_clean(a)), sorted(_clean(b))
    n_a, n_b = len(sa), len(sb)
    logs = _log_difference(sa, sb)
    ratio = lo = hi = None
    if logs is not None:
        ratio = math.exp(logs.diff)
        lo, hi = logs.interval(confidence)
    elif n_a and n_b and _median_sorted(sa) > 0:
        ratio = _median_sorted(sb) / _median_sorted(sa)
        # a resampled baseline median can be as low as min(A): the ratio needs it > 0
        if n_a >= 2 and n_b >= 2 and sa[0] > 0:
            rng = random.Random(seed)
            ma = resample_medians(sa, resamples, rng)
            mb = resample_medians(sb, resamples, rng)
            lo, hi = percentile_interval([y / x for x, y in zip(ma, mb)], confidence)
    short = min(n_a, n_b) < MIN_RUNS
    p, direction, test = None, 0, None
    if not short and lo is not None:
        p, direction, test = _test(sa, sb)
    runs_needed = MIN_RUNS - min(n_a, n_b) if short and not (n_a and n_b and ratio is None) else None
    return Comparison(n_a, n_b, ratio, lo, hi, p, p,
                      _verdict(n_a, n_b, ratio, lo, hi, p, direction, band), runs_needed, band, direction, test,
                      confidence, logs)


def adjust(comparisons: Sequence[Comparison]) -> list[Comparison]:
    """Holm over a family of comparisons (one metric's comparisons in one report):
    p_adjusted = holm(p_value); each Welch interval re-drawn at the level of Holm's
    decision (the module docstring's "Intervals"), and each verdict re-derived by the
    same rule. Uses the raw p_value, so adjusting twice changes nothing."""
    adjusted = holm([c.p_value for c in comparisons])
    k = sum(p is not None for p in adjusted)
    rejected = sum(p is not None and p < ALPHA for p in adjusted)
    out = []
    for c, p in zip(comparisons, adjusted):
        lo, hi, confidence = c.ci_low, c.ci_high, c.confidence
        if c.logs is not None and p is not None:
            confidence = 1 - ALPHA / (k - rejected + 1 if p < ALPHA else k - rejected)
            lo, hi = c.logs.interval(confidence)
        out.append(replace(c, p_adjusted=p, ci_low=lo, ci_high=hi, confidence=confidence,
                           verdict=_verdict(c.n_a, c.n_b, c.ratio, lo, hi, p, c.direction, c.band)))
    return out


def _check(confidence: float, resamples: int) -> None:
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must lie in (0, 1), got {confidence!r}")
    if resamples < 1:
        raise ValueError(f"resamples must be >= 1, got {resamples!r}")
