"""stackbench.analysis.stats (pure unit tests): n = 0, 1, 2, all-equal inputs, known
table values, hand-worked Holm, and property tests — hypothesis derandomized, Monte
Carlo checks on fixed seeds, so nothing here flaps."""

from __future__ import annotations

import itertools
import math
import random
import time
from collections import Counter
from fractions import Fraction

import pytest
from hypothesis import given, settings, strategies as st

from stackbench.analysis import stats
from stackbench.analysis.stats import Verdict

PROPS = settings(derandomize=True, max_examples=100, deadline=None)
values = st.floats(min_value=1.0, max_value=1e6, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- summarize


def test_summary_of_nothing_is_all_none():
    assert stats.summarize([]) == stats.Summary(0, None, None, None, None, None, None, None)


def test_summary_of_one_run_has_no_spread_and_no_interval():
    s = stats.summarize([1234.5])
    assert (s.n, s.median, s.mean, s.min, s.max) == (1, 1234.5, 1234.5, 1234.5, 1234.5)
    assert s.cv is None and s.ci_low is None and s.ci_high is None
    assert stats.ci_half_width(s) is None


def test_summary_of_two_runs():
    # the resample median of (1, 3) is 1, 2 or 3 with probabilities 1/4, 1/2, 1/4
    s = stats.summarize([3, 1])
    assert (s.n, s.median, s.mean, s.min, s.max) == (2, 2.0, 2.0, 1.0, 3.0)
    assert s.cv == pytest.approx(math.sqrt(2) / 2)
    assert (s.ci_low, s.ci_high) == (1.0, 3.0)
    assert stats.ci_half_width(s) == pytest.approx(0.5)


def test_all_equal_runs_collapse_the_interval_and_have_no_spread():
    s = stats.summarize([0.1] * 7)
    assert s.median == s.mean == s.min == s.max == s.ci_low == s.ci_high == 0.1
    assert s.cv == 0.0 and stats.ci_half_width(s) == 0.0


def test_cv_is_none_when_the_mean_is_zero():
    assert stats.summarize([-1.0, 1.0]).cv is None


def test_summary_is_reproducible_and_rejects_non_finite_values():
    v = [1000, 1010, 990, 1005, 995, 1020]
    assert stats.summarize(v) == stats.summarize(v)
    with pytest.raises(ValueError):
        stats.summarize([1.0, float("nan")])


def test_large_samples_are_resampled_literally():
    rng = random.Random(7)
    v = [rng.gauss(100, 5) for _ in range(stats.LAW_MAX_N + 50)]
    s = stats.summarize(v, resamples=500)
    assert s.min < s.ci_low <= s.median <= s.ci_high < s.max
    assert stats.ci_half_width(s) < 0.03


@pytest.mark.parametrize("n", range(1, 7))
def test_exact_law_of_the_resample_median_matches_enumeration(n):
    """Every one of the n^n resamples (positions drawn with replacement), counted."""
    pairs, cum = stats._median_position_law(n)
    law = dict(zip(pairs, (c - p for c, p in zip(cum, (0.0, *cum)))))
    counts = Counter()
    for draw in itertools.product(range(n), repeat=n):
        s = sorted(draw)
        counts[(s[(n - 1) // 2], s[n // 2])] += 1
    assert set(law) == set(counts)
    for pair, c in counts.items():
        assert law[pair] == pytest.approx(c / n ** n, abs=1e-12)


def test_drawing_from_the_law_matches_literal_resampling():
    s = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0]
    rng = random.Random(3)
    literal = Counter(stats._median_sorted(sorted(rng.choices(s, k=6))) for _ in range(40000))
    law = Counter(stats.resample_medians(s, 40000, random.Random(4)))
    for v in set(literal) | set(law):
        assert abs(literal[v] - law[v]) / 40000 < 0.01


# ---------------------------------------------------------------- Mann–Whitney


def _with_u(m: int, n: int, u: int) -> tuple[list[float], list[float]]:
    """Samples of sizes m, n whose count of pairs (a, b) with b < a is exactly u: start with
    every a below every b, then move b's down one adjacent swap at a time."""
    order = ["a"] * m + ["b"] * n
    for _ in range(u):
        i = next(i for i in range(len(order) - 1) if order[i] == "a" and order[i + 1] == "b")
        order[i], order[i + 1] = "b", "a"
    a = [float(i) for i, s in enumerate(order) if s == "a"]
    b = [float(i) for i, s in enumerate(order) if s == "b"]
    return a, b


def test_mann_whitney_exact_known_values():
    assert stats.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) == pytest.approx(2 / 252)
    assert stats.mann_whitney_u([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)  # the best 3 vs 3 can do
    assert stats.mann_whitney_u([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)
    # 5 vs 5 with U = 2: P(U <= 2) = (1 + 1 + 2) / 252 one-sided
    assert stats.mann_whitney_u(*_with_u(5, 5, 2)) == pytest.approx(8 / 252)
    assert stats.mann_whitney_u([1.0], [2.0]) == 1.0


@pytest.mark.parametrize("n, critical", [(5, 2), (6, 5), (7, 8), (8, 13), (9, 17), (10, 23)])
def test_mann_whitney_matches_the_critical_value_table(n, critical):
    """The published two-sided α = 0.05 critical values of U for n1 = n2 = n (the standard
    Mann–Whitney table, e.g. in Siegel & Castellan 1988): U ≤ critical rejects, one more does not."""
    assert stats.mann_whitney_u(*_with_u(n, n, critical)) <= 0.05
    assert stats.mann_whitney_u(*_with_u(n, n, critical + 1)) > 0.05


def _permutation_p(a, b):
    """Brute force: every split of the pooled values, mid-ranks, |W − E W| ≥ observed."""
    pooled = [*a, *b]
    srt = sorted(pooled)
    rank = {v: Fraction(srt.index(v) + 1 + len(srt) - srt[::-1].index(v), 2) for v in pooled}
    centre = Fraction(len(a) * (len(pooled) + 1), 2)
    obs = abs(sum(rank[v] for v in a) - centre)
    splits = list(itertools.combinations(range(len(pooled)), len(a)))
    hit = sum(1 for c in splits if abs(sum(rank[pooled[i]] for i in c) - centre) >= obs)
    return hit / len(splits)


@pytest.mark.parametrize("a, b", [
    ([1, 2, 2, 3, 5], [2, 3, 3, 4, 6]),
    ([10, 10, 10, 11], [10, 11, 12, 12, 12]),
    ([1, 1, 2], [1, 2, 2, 2, 3, 3]),
    ([5, 1, 4, 2, 3, 9], [8, 7, 6]),
])
def test_mann_whitney_with_ties_is_the_exact_permutation_p(a, b):
    assert stats.mann_whitney_u(a, b) == pytest.approx(_permutation_p(a, b))


def test_mann_whitney_edge_cases():
    assert stats.mann_whitney_u([], [1.0, 2.0]) is None
    assert stats.mann_whitney_u([1.0], []) is None
    assert stats.mann_whitney_u([7.0] * 5, [7.0] * 5) == 1.0


def test_normal_approximation_agrees_with_the_exact_p(monkeypatch):
    rng = random.Random(11)
    a = [rng.gauss(100, 10) for _ in range(24)]
    b = [rng.gauss(106, 10) for _ in range(25)]
    exact = stats.mann_whitney_u(a, b)
    monkeypatch.setattr(stats, "EXACT_MAX_N", 0)
    approx = stats.mann_whitney_u(a, b)
    assert 0.001 < exact < 0.5 and abs(exact - approx) < 0.005
    assert stats.mann_whitney_u([3.0] * 30, [3.0] * 30) == 1.0  # zero variance: no evidence


@PROPS
@given(st.lists(values, min_size=1, max_size=12), st.lists(values, min_size=1, max_size=12))
def test_mann_whitney_is_symmetric_in_range_and_rank_based(a, b):
    p = stats.mann_whitney_u(a, b)
    assert 0 < p <= 1
    assert p == stats.mann_whitney_u(b, a)
    assert p == stats.mann_whitney_u([2 * x for x in a], [2 * x for x in b])  # only ranks matter


# ---------------------------------------------------------------- Student's t, Welch on logs

from stackbench.analysis import student_t  # noqa: E402


@pytest.mark.parametrize("alpha, df, table", [
    # two-sided critical values from the standard t table (e.g. Abramowitz & Stegun 1964, table 26.10)
    (0.05, 1, 12.706), (0.05, 4, 2.776), (0.05, 8, 2.306), (0.01, 10, 3.169), (0.10, 20, 1.725),
    (0.05, 1000, 1.962), (0.001, 5, 6.869),
])
def test_t_critical_values_match_the_table(alpha, df, table):
    c = student_t.critical(alpha, df)
    assert c == pytest.approx(table, abs=5e-4)
    assert student_t.two_sided_p(c, df) == pytest.approx(alpha, rel=1e-9)


def test_noncentral_t_is_the_central_one_at_zero_and_matches_simulation():
    for df in (1, 2, 8, 30):
        c = student_t.critical(0.05, df)
        assert student_t.noncentral_two_sided_tail(c, df, 0.0) == pytest.approx(0.05, abs=1e-5)
    # Monte Carlo of (Z + 3) / sqrt(χ²_10 / 10), 200,000 draws (seed 1): 0.7711 ± 0.001
    assert student_t.noncentral_two_sided_tail(student_t.critical(0.05, 10), 10, 3.0) == pytest.approx(0.7714, abs=2e-4)


# Wikipedia, "Welch's t-test", examples 1–3 (printed there to 2–3 digits: t, ν, p).
# welch_log takes the logs, so it is fed exp(x).
WELCH_EXAMPLES = [
    ([27.5, 21.0, 19.0, 23.6, 17.0, 17.9, 16.9, 20.1, 21.9, 22.6, 23.1, 19.6, 19.0, 21.7, 21.4],
     [27.1, 22.0, 20.8, 23.4, 23.4, 23.5, 25.8, 22.0, 24.8, 20.2, 21.9, 22.1, 22.9, 20.5, 24.4], 0.021),
    ([17.2, 20.9, 22.6, 18.1, 21.7, 21.4, 23.5, 24.2, 14.7, 21.8],
     [21.5, 22.8, 21.0, 23.0, 21.6, 23.6, 22.5, 20.7, 23.4, 21.8, 20.7, 21.7, 21.5, 22.5, 23.6, 21.5, 22.5, 23.5,
      21.5, 21.8], 0.149),
    ([19.8, 20.4, 19.6, 17.8, 18.5, 18.9, 18.3, 18.9, 19.5, 22.0],
     [28.2, 26.6, 20.1, 23.3, 25.2, 22.1, 17.7, 27.6, 20.6, 13.7, 23.2, 17.5, 20.6, 18.0, 23.9, 21.6, 24.3, 20.4,
      23.9, 13.3], 0.036),
]


@pytest.mark.parametrize("a, b, p", WELCH_EXAMPLES)
def test_welch_matches_the_published_examples(a, b, p):
    got = stats.welch_log([math.exp(x) for x in a], [math.exp(x) for x in b])
    assert got == pytest.approx(p, abs=6e-4)  # the page rounds t and ν before its p: 0.0355 prints as 0.036


def test_welch_on_logs_is_about_ratios():
    a, b = [1000, 1040, 980, 1010, 1030], [1300, 1250, 1320, 1290, 1270]
    p = stats.welch_log(a, b)
    assert 0 < p < 1e-5
    assert stats.welch_log([7 * x for x in a], [7 * x for x in b]) == pytest.approx(p)  # units do not matter
    assert stats.welch_log(b, a) == pytest.approx(p)  # nor which side is first


def test_welch_edge_cases():
    assert stats.welch_log([5.0], [6.0, 7.0]) is None  # one run: no variance, no test
    assert stats.welch_log([], [6.0, 7.0]) is None
    assert stats.welch_log([0.0, 5.0, 6.0], [6.0, 7.0, 8.0]) is None  # log of 0: undefined
    assert stats.welch_log([3.0] * 5, [3.0] * 5) == 1.0  # all equal: no evidence of any difference
    assert stats.welch_log([3.0] * 5, [4.0] * 5) == 0.0  # exactly repeatable and different: the limit
    # one side constant: the other side's variance alone, n - 1 degrees of freedom
    b = [4.0, 4.4, 3.8, 4.1, 4.2]
    logs = [math.log(x) for x in b]
    t = (sum(logs) / 5 - math.log(3)) / (stdev_of(logs) / math.sqrt(5))
    assert stats.welch_log([3.0] * 5, b) == pytest.approx(student_t.two_sided_p(t, 4))


def stdev_of(v):
    m = sum(v) / len(v)
    return math.sqrt(sum((x - m) ** 2 for x in v) / (len(v) - 1))


def test_a_failed_run_of_nothing_falls_back_to_the_rank_test():
    base = [1000.0, 1010, 990, 1005, 995]
    c = stats.compare(base, [0.0, 0.0, 0.0, 0.0, 0.0])
    assert c.test == stats.MANN_WHITNEY and c.p_value == pytest.approx(2 / 252)
    assert c.ratio == 0.0 and c.verdict == Verdict.LOWER
    ok = stats.compare(base, [500.0, 510, 490, 505, 495])
    assert ok.test == stats.WELCH_LOG
    assert stats.compare(base, base[:3]).test is None  # too few runs: no test


# ---------------------------------------------------------------- Holm


def test_holm_hand_worked():
    # sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04 -> kept monotone at 0.06
    got = stats.holm([0.01, None, 0.04, 0.03, 0.005])
    assert got[1] is None
    assert [got[i] for i in (0, 2, 3, 4)] == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert stats.holm([0.5, 0.6]) == [1.0, 1.0]
    assert stats.holm([]) == [] and stats.holm([None]) == [None]
    assert stats.holm([0.02]) == [0.02]


@PROPS
@given(st.lists(st.one_of(st.none(), st.floats(min_value=0, max_value=1)), max_size=15))
def test_holm_is_monotone_capped_and_never_below_p(ps):
    adj = stats.holm(ps)
    k = sum(p is not None for p in ps)
    for p, q in zip(ps, adj):
        assert (p is None) == (q is None)
        if p is not None:
            assert p <= q <= 1 and q <= min(1.0, k * p) + 1e-12
    pairs = [(p, q) for p, q in zip(ps, adj) if p is not None]
    for (p1, q1), (p2, q2) in itertools.product(pairs, repeat=2):
        if p1 <= p2:
            assert q1 <= q2


# ---------------------------------------------------------------- compare


def test_identical_constants_are_equivalent_with_ratio_one():
    c = stats.compare([3.0] * 5, [3.0] * 5)
    assert (c.ratio, c.ci_low, c.ci_high, c.p_value) == (1.0, 1.0, 1.0, 1.0)
    assert c.verdict == Verdict.EQUIVALENT and c.runs_needed is None


def test_a_constant_ratio_is_found_in_both_directions():
    a = [1000, 1012, 993, 1005, 998, 1021]
    c = stats.compare(a, [1.5 * x for x in a])
    assert c.ratio == pytest.approx(1.5) and c.ci_low > 1 and c.verdict == Verdict.HIGHER
    # Welch on logs: the same spread on both sides, shifted by log 1.5 — far below the
    # rank test's floor of 2 / C(12, 6) = 0.0022
    assert c.test == stats.WELCH_LOG and c.p_value < 1e-12 and c.direction == 1
    back = stats.compare([1.5 * x for x in a], a)
    assert back.ratio == pytest.approx(1 / 1.5) and back.ci_high < 1 and back.verdict == Verdict.LOWER
    assert back.p_value == pytest.approx(c.p_value) and back.direction == -1


@pytest.mark.parametrize("n_a, n_b, needed", [(3, 3, 2), (4, 9, 1), (0, 7, 5), (1, 1, 4), (2, 2, 3)])
def test_too_few_runs_give_no_verdict_and_say_how_many_more(n_a, n_b, needed):
    c = stats.compare([100.0 + i for i in range(n_a)], [200.0 + i for i in range(n_b)])
    assert c.verdict == Verdict.INSUFFICIENT and c.runs_needed == needed
    assert c.p_value is None and c.p_adjusted is None  # no test made: it joins no Holm family
    assert (c.n_a, c.n_b) == (n_a, n_b)
    assert (c.ratio is None) == (n_a == 0)
    assert (c.ci_low is None) == (min(n_a, n_b) < 2)


def test_a_baseline_median_of_zero_makes_the_ratio_not_computable():
    c = stats.compare([0.0] * 5, [1.0] * 5)
    assert c.ratio is None and c.verdict == Verdict.INSUFFICIENT and c.runs_needed is None
    # a zero baseline run can make a resampled median 0: no interval, hence no verdict
    c = stats.compare([0.0, 5, 5, 5, 5], [5.0] * 5)
    assert c.ratio == 1.0 and c.ci_low is None and c.verdict == Verdict.INSUFFICIENT


def test_compare_is_reproducible_and_validates_arguments():
    a, b = [10, 11, 12, 13, 14, 15], [11, 12, 13, 14, 15, 16]
    assert stats.compare(a, b) == stats.compare(a, b)
    assert stats.compare(a, b, seed=2).ratio == stats.compare(a, b).ratio
    with pytest.raises(ValueError):
        stats.compare(a, b, confidence=1.0)
    with pytest.raises(ValueError):
        stats.compare(a, b, band=-0.1)


def test_compare_15_vs_15_is_fast():
    rng = random.Random(5)
    a = [rng.gauss(1000, 30) for _ in range(15)]
    b = [rng.gauss(1010, 30) for _ in range(15)]
    best = math.inf
    for i in range(5):
        t = time.perf_counter()
        stats.compare([x + i for x in a], b, resamples=2000)  # new values: the rank cache can't help
        best = min(best, time.perf_counter() - t)
    assert best < 0.05  # measured ≈ 2 ms


@PROPS
@given(st.lists(values, max_size=12), st.lists(values, max_size=12), st.sampled_from([0.0, 0.02, 0.1]))
def test_a_verdict_never_contradicts_its_interval(a, b, band):
    c = stats.compare(a, b, band=band, resamples=300)
    if c.ci_low is not None:
        assert c.ci_low <= c.ci_high
    if c.verdict == Verdict.INSUFFICIENT:
        assert min(len(a), len(b)) < stats.MIN_RUNS or c.ci_low is None
        assert c.p_value is None
    else:
        # p = 0 only when each side's runs are all equal and the sides differ (Welch's limit)
        assert c.runs_needed is None and 0 <= c.p_value <= 1
        assert c.p_value > 0 or (len(set(a)) == 1 and len(set(b)) == 1 and a[0] != b[0])
    if c.verdict == Verdict.EQUIVALENT:
        assert 1 - band <= c.ci_low and c.ci_high <= 1 + band
    if c.verdict == Verdict.HIGHER:
        assert c.ci_low > 1 and c.p_adjusted < stats.ALPHA and c.ratio > 1
    if c.verdict == Verdict.LOWER:
        assert c.ci_high < 1 and c.p_adjusted < stats.ALPHA and c.ratio < 1
    if c.ratio is not None and len(a) and len(b):
        assert stats.compare(b, a, resamples=300).ratio == pytest.approx(1 / c.ratio)


@PROPS
@given(st.lists(values, min_size=2, max_size=15))
def test_summary_interval_brackets_the_median_within_the_range(v):
    s = stats.summarize(v, resamples=300)
    assert s.min <= s.ci_low <= s.median <= s.ci_high <= s.max
    assert s.min <= s.mean <= s.max and s.cv >= 0


# ---------------------------------------------------------------- adjust


def test_adjust_applies_holm_and_redecides():
    sep = stats.compare([1, 2, 3, 4, 5], [6, 7, 8, 9, 10])  # HIGHER alone; Welch on logs p = 0.0149
    assert sep.verdict == Verdict.HIGHER and sep.p_value == pytest.approx(0.014939, abs=1e-6)
    same = stats.compare([5.0] * 5, [5.0] * 5)  # EQUIVALENT, p = 1
    few = stats.compare([1, 2, 3], [6, 7, 8])  # INSUFFICIENT, p None: not in the family
    family = [sep] * 6 + [same, few]
    out = stats.adjust(family)
    # k = 7 tested comparisons: 7 · 0.0149 = 0.105 > 0.05 -> no longer significant
    assert [c.p_adjusted for c in out[:6]] == pytest.approx([7 * sep.p_value] * 6)
    assert all(c.verdict == Verdict.NO_DIFFERENCE and c.p_value == sep.p_value for c in out[:6])
    assert out[6].verdict == Verdict.EQUIVALENT and out[6].p_adjusted == 1.0
    assert out[7] == few
    assert stats.adjust(out) == out  # idempotent: adjusts the raw p
    # a smaller family keeps them: 3 · 0.0149 = 0.045
    assert all(c.verdict == Verdict.HIGHER for c in stats.adjust([sep] * 3))
    assert stats.adjust([]) == []


def test_a_clear_difference_survives_a_family_of_twelve_with_five_runs():
    """The issue's case: fpm-tcp vs mod_php −56 %, 5 runs a side, 12 comparisons. The rank
    test's best p, 2/252, times 12 is 0.095; Welch on logs has no such floor."""
    rng = random.Random(23)
    base = _lognormal(rng, 10000, 5, sigma=0.08)
    clear = stats.compare(base, _lognormal(rng, 4410, 5, sigma=0.08))
    nulls = [stats.compare(_lognormal(rng, 10000, 5, sigma=0.08), _lognormal(rng, 10000, 5, sigma=0.08))
             for _ in range(11)]
    out = stats.adjust([clear] + nulls)
    assert out[0].p_adjusted < 0.01 and out[0].verdict == Verdict.LOWER
    assert 12 * stats.mann_whitney_u([1, 2, 3, 4, 5], [6, 7, 8, 9, 10]) > stats.ALPHA  # what it replaces


# ---------------------------------------------------------------- calibration (fixed seeds)

SIGMA_3PCT = math.sqrt(math.log(1 + 0.03 ** 2))  # lognormal with CV 3 %


def _lognormal(rng, median, n, sigma=SIGMA_3PCT):
    return [median * math.exp(rng.gauss(0, sigma)) for _ in range(n)]


def test_the_ratio_interval_covers_the_true_ratio_at_about_the_nominal_rate():
    # Measured over 2,000 trials each (r = 1.0 and 1.1): 0.965 for n = 5, 0.963 for
    # n = 10, 0.972 for n = 15 — the percentile interval of a median is slightly
    # conservative. The bound leaves ~4.5 sd of the binomial noise of 200 trials (sd ≈ 0.013).
    rng = random.Random(2024)
    trials, covered = 200, 0
    for i in range(trials):
        r = (1.0, 1.05, 1.3, 0.8)[i % 4]
        c = stats.compare(_lognormal(rng, 1000, 10), _lognormal(rng, 1000 * r, 10))
        covered += c.ci_low <= r <= c.ci_high
    assert covered / trials >= 0.90  # this seed: 0.960


def test_a_against_a_is_no_difference_or_equivalent():
    # Measured over 2,000 trials, n = 10 a side: 96.9 % NO_DIFFERENCE or EQUIVALENT
    # (a significant verdict needs p < 0.05 and the CI to agree, so ≤ 5 % by design).
    rng = random.Random(77)
    trials = 200
    quiet = sum(stats.compare(_lognormal(rng, 1000, 10), _lognormal(rng, 1000, 10)).verdict
                in (Verdict.NO_DIFFERENCE, Verdict.EQUIVALENT) for _ in range(trials))
    assert quiet / trials >= 0.90  # this seed: 0.965


def test_a_ten_percent_difference_is_found_with_ten_runs():
    rng = random.Random(3)
    found = sum(stats.compare(_lognormal(rng, 1000, 10), _lognormal(rng, 1100, 10)).verdict == Verdict.HIGHER
                for _ in range(50))
    assert found == 50


def test_every_interval_that_excludes_one_has_a_verdict_and_no_other_does():
    """Issue 23: "a verdict on every comparison whose CI excludes zero". Families of 1 to
    12 with real differences of 0–30 % among equal stacks, 5–8 runs a side: after Holm,
    each Welch interval (drawn at the level of Holm's decision) excludes 1 exactly when
    the verdict is faster / slower — or equivalent, inside the band."""
    rng = random.Random(5)
    seen = {True: 0, False: 0}
    for _ in range(400):
        k, n = rng.randint(1, 12), rng.randint(5, 8)
        sd = rng.choice([0.02, 0.05, 0.1, 0.2])
        comps = []
        for _ in range(k):
            shift = rng.choice([1.0, 1.0, 1.05, 0.9, 1.2, 0.7])
            a = [1000 * math.exp(rng.gauss(0, sd)) for _ in range(n)]
            b = [1000 * shift * math.exp(rng.gauss(0, sd)) for _ in range(n)]
            comps.append(stats.compare(a, b, resamples=50))
        for c in stats.adjust(comps):
            excludes = c.ci_low > 1 or c.ci_high < 1
            seen[excludes] += 1
            if c.verdict in (stats.Verdict.HIGHER, stats.Verdict.LOWER):
                assert excludes, c
            elif c.verdict == stats.Verdict.NO_DIFFERENCE:
                assert not excludes, c
            assert c.ci_low <= c.ratio <= c.ci_high
    assert min(seen.values()) > 100  # both kinds met often


def test_the_interval_is_drawn_at_holms_level():
    """Nothing decided in a family of 3: Bonferroni's 1 − α/3; alone: 95 %; one decided
    of 2: 1 − α/2 for it (k − r + 1 = 2) and 1 − α/1 for the other."""
    same = stats.compare([100, 101, 99, 100, 102], [101, 100, 99, 102, 100], band=0.0)
    assert same.confidence == 0.95 and stats.adjust([same])[0].confidence == 0.95
    fam = stats.adjust([same] * 3)
    assert all(abs(c.confidence - (1 - 0.05 / 3)) < 1e-12 for c in fam)
    clear = stats.compare([100, 101, 99, 100, 102], [150, 151, 149, 150, 152])
    got = stats.adjust([clear, same])
    assert got[0].verdict == stats.Verdict.HIGHER and abs(got[0].confidence - (1 - 0.05 / 2)) < 1e-12
    assert got[1].verdict == stats.Verdict.NO_DIFFERENCE and got[1].confidence == 0.95
    assert stats.adjust(got) == got  # adjusting twice changes nothing
    # the ratio is of geometric means
    assert clear.ratio == pytest.approx(math.exp(sum(map(math.log, [150, 151, 149, 150, 152])) / 5
                                                 - sum(map(math.log, [100, 101, 99, 100, 102])) / 5))
