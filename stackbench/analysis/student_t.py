"""Student's t distribution, central and noncentral, on Python's standard library alone:
what Welch's test (stats.welch_log) needs for its p-value and power.py for the power of
a plan. Pure. The central tail and quantile agree with published tables to every digit
they print; the noncentral tail to about 1e-6 for df ≥ 2 (1e-3 below), which is plenty
for a power (tests/test_stats.py checks both).

- The two-sided tail P(|T| ≥ t) of a central t with ν degrees of freedom (ν need not be
  a whole number: Welch's are not) is the regularized incomplete beta function
  I_{ν/(ν+t²)}(ν/2, 1/2) (Abramowitz & Stegun 1964, 26.7.1 with 26.5.27), evaluated by
  its continued fraction (A&S 26.5.8) with the modified Lentz algorithm (Press et al.,
  "Numerical Recipes", 3rd ed. 2007, §6.4 betacf and §5.2).
- Its quantile: bisection on that tail (monotone, so it always converges).
- The noncentral t (Johnson, Kotz & Balakrishnan 1995, "Continuous Univariate
  Distributions" vol. 2, ch. 31): T' = (Z + δ) / S with S = sqrt(V/ν), V ~ χ²_ν, so
  P(|T'| ≥ c) = E_S[Φ(δ − cS) + Φ(−δ − cS)], integrated over the density of S by
  Simpson's rule.
"""

from __future__ import annotations

import math
from functools import lru_cache
from statistics import NormalDist

_NORMAL = NormalDist()


def _incomplete_beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of I_x(a, b) (A&S 26.5.8), modified Lentz (NR §5.2, §6.4)."""
    tiny, eps = 1e-300, 1e-15
    qab, qap, qam = a + b, a + 1, a - 1
    c, d = 1.0, 1 - qab * x / qap
    d = 1 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for aa in (m * (b - m) * x / ((qam + m2) * (a + m2)),  # the even step
                   -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):  # the odd step
            d = 1 + aa * d
            d = 1 / (d if abs(d) > tiny else tiny)
            c = 1 + aa / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1) < eps:
            break
    return h


def incomplete_beta(a: float, b: float, x: float) -> float:
    """The regularized incomplete beta function I_x(a, b), for a, b > 0 and 0 ≤ x ≤ 1."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    # The fraction converges fast for x < (a + 1) / (a + b + 2); otherwise use the symmetry
    # I_x(a, b) = 1 − I_{1−x}(b, a) (NR §6.4).
    if x < (a + 1) / (a + b + 2):
        return front * _incomplete_beta_fraction(a, b, x) / a
    return 1 - front * _incomplete_beta_fraction(b, a, 1 - x) / b


def two_sided_p(t: float, df: float) -> float:
    """P(|T| ≥ |t|) for Student's t with `df` (> 0, not necessarily whole) degrees of freedom."""
    if math.isinf(t):
        return 0.0
    return min(1.0, incomplete_beta(df / 2, 0.5, df / (df + t * t)))


@lru_cache(maxsize=1024)
def critical(alpha: float, df: float) -> float:
    """The c with P(|T| ≥ c) = alpha: the two-sided critical value (bisection, 1e-12 relative)."""
    lo, hi = 0.0, 1.0
    while two_sided_p(hi, df) > alpha:
        hi *= 2
    for _ in range(200):
        mid = (lo + hi) / 2
        if two_sided_p(mid, df) > alpha:
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    return hi


def noncentral_two_sided_tail(c: float, df: float, ncp: float) -> float:
    """P(|T'| ≥ c) for the noncentral t with `df` degrees of freedom and noncentrality
    `ncp`: the power of a two-sided t test with critical value c. Simpson's rule over the
    density of S = sqrt(χ²_df / df), f(s) = 2 (df/2)^(df/2) / Γ(df/2) · s^(df−1) e^(−df s²/2),
    from 0 to far in its upper tail (its sd is about 1/sqrt(2 df))."""
    top = 1 + 12 / math.sqrt(2 * df) + 2
    # Steps fine enough for the normal factor too, which changes over about 1/c in s.
    steps = 2 * math.ceil(max(200, top * c * 10) / 2)
    h = top / steps
    log_k = math.log(2) + (df / 2) * math.log(df / 2) - math.lgamma(df / 2)

    def integrand(s: float) -> float:
        if s <= 0:  # the density's limit at 0: 0 for df > 1, e^log_k for df = 1 (Welch's df is ≥ 1)
            return math.exp(log_k) * (_NORMAL.cdf(ncp) + _NORMAL.cdf(-ncp)) if df <= 1 else 0.0
        dens = math.exp(log_k + (df - 1) * math.log(s) - df * s * s / 2)
        return dens * (_NORMAL.cdf(ncp - c * s) + _NORMAL.cdf(-ncp - c * s))

    total = integrand(0.0) + integrand(top)
    for i in range(1, steps):
        total += (4 if i % 2 else 2) * integrand(i * h)
    return min(1.0, max(0.0, total * h / 3))
