"""A stack's capacity from noisy probes: the rate at which a probe meets the SLO half the
time (the *edge*), fitted to every probe of its searches, with a 95 % interval; and two
stacks' edges compared.

Why a fitted curve. A probe's met/missed at one rate is a coin whose bias falls with the
rate: near the edge the same stack meets p99 ≤ 10 ms at 7,500 req/s and misses it at
6,250 (a 2 s window's p99 moves with the host's noise). A bracketing search that trusts
each probe reports wherever its first unlucky miss put it. Bioassay has the answer for
"the dose at which the response probability is q" from yes/no trials: fit a sigmoid to
all the trials by maximum likelihood (Finney 1971, "Probit Analysis", 3rd ed., ch. 3–4;
the logistic form: Berkson 1944, JASA 39:357–365), and put the trials near the edge with
the up-and-down method (Dixon & Mood 1948, JASA 43:109–126), which the search's last
phase is (analysis/capacity.py).

The model. P(met at rate r) = 1 / (1 + exp((ln r − ln θ) / w)): θ is the edge (met half
the time), w > 0 the spread (from 90 % to 10 % met the rate grows by exp(2·ln 9·w)). In a
logistic regression's own terms, logit P = a + b·ln r with b = −1/w, a = ln θ / w.
- q = 1/2 rather than 0.9: the edge is what an up-and-down series estimates best (its
  probes gather where P ≈ 1/2, Dixon & Mood §3), and its interval needs little of the
  spread; the rate met 9 times in 10 lies w·ln 9 below it, and w is the worst-known
  parameter of a 20-probe search (simulated with the quick form's search: the 90 %
  point's interval came out 2–3 times as wide). The edge's interval is the confidence
  stated; `Edge.rate_met(0.9)` gives the 90 % point for whoever wants it.
- w is bounded to [W_MIN, W_MAX]. A knee sharper than W_MIN (0.2 %) is below the rates'
  resolution; a spread wider than W_MAX — 90 % met to 10 % met across more than a factor
  of 2 — is not an edge (the search's exponential steps are × 2) and would let a curve
  nearly flat over the whole search explain twenty coin tosses about as well as a knee.
- Firth's penalized likelihood (Firth 1993, Biometrika 80:27–38: the log-likelihood plus
  ½ ln det I(a, b), Jeffreys' prior) instead of plain maximum likelihood: a search on a
  sharp knee often ends with every probe below some rate met and every one above missed
  (complete separation), where the plain MLE has no finite spread (Albert & Anderson
  1984, Biometrika 71:1–10); Firth's estimate always exists and is less biased.
- The interval: profile penalized likelihood (Heinze & Schemper 2002, Stat. Med.
  21:2409–2419, who show it keeps its coverage under separation where Wald intervals do
  not): the edges θ whose profile deviance 2·(ℓ*max − max_w ℓ*(θ, w)) is at most the χ²₁
  95 % point (Wilks 1938). Where that set is not one piece, its hull (conservative).
  No resampling: the same probes give the same interval.
- A probe whose generator saturated says nothing of the stack and is left out; a search
  whose probes all met (or all missed) has no edge (None): the search's bracket then says
  "at least" (or "below").
- Why not plain maximum likelihood with the same bounds: on a sharp knee it puts w at
  W_MIN and the interval inside the bracket, and covered a simulated edge only 81–87 % of
  the time at 95 % nominal; Firth's profile covered it 93–100 % (tests/test_capacity_noise.py
  holds the simulation). Its price: wider intervals when few probes missed, and on a
  search stored before the edge phase existed (bracket and confirmations only) an
  estimate that can sit above the lowest miss — its interval says how little that
  search knew.

Two stacks (`compare`): the likelihood-ratio test of one common edge, each stack keeping
its own spread — the two fits are independent, so the joint profile deviance of the log
ratio δ = ln θ_B − ln θ_A is min over x of D_A(x) + D_B(x + δ); its χ²₁ 95 % set is the
interval of the ratio, and its value at δ = 0 the test's statistic (Wilks 1938). This
treats the probes, not the searches, as the replicates: it covers the noise between
probes, not a host that drifts between one stack's search and the other's; with five
searches a side, capacity_results compares the searches' edges instead.

Pure; None = not computable. tests/test_capacity_noise.py checks the coverage on
simulated stacks whose edge is known.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Iterable

CONFIDENCE = 0.95
CHI2_1 = 3.841458820694124  # the χ²₁ distribution's 95 % point
W_MIN = 0.002
W_MAX = math.log(2) / (2 * math.log(9))  # ≈ 0.158: 90 % met to 10 % met across a factor of 2
TEST = "edge_lr"  # stats.Comparison.test of a comparison of two fitted edges

_LOG_W = [math.log(W_MIN) + i * (math.log(W_MAX) - math.log(W_MIN)) / 16 for i in range(17)]
_GOLD = (math.sqrt(5) - 1) / 2
_COARSE = 0.02  # the scan for the maximum and the interval's ends, in ln rate (2 %)
_FINE = 0.002  # the finest lattice two stacks' deviances are compared on (0.2 %)
_PAD = 0.45  # how far beyond the probes the scan looks, in ln rate (see _bound)


@dataclass(frozen=True)
class Edge:
    """A fitted edge: the rate met half the time, its interval (None: unbounded on that
    side), the spread w, and the probes it was fitted to as (rate, met)."""

    rate: float
    low: float | None
    high: float | None
    spread: float
    data: tuple[tuple[float, bool], ...]
    # The highest rate a met probe served, when it bounded the estimate or its interval
    # (capacity_results.capped); None: the fit stood as it came.
    served_cap: float | None = None
    fitted: float | None = None  # the fit's own estimate when served_cap moved `rate`

    @property
    def estimate(self) -> float:
        """The likelihood's maximum: where the profile deviances are measured from."""
        return self.fitted if self.fitted is not None else self.rate

    @property
    def probes(self) -> int:
        return len(self.data)

    @property
    def met(self) -> int:
        return sum(1 for _, m in self.data if m)

    def p_met(self, rate: float) -> float:
        """The fitted probability that a probe at `rate` meets the SLO."""
        z = (math.log(self.estimate) - math.log(rate)) / self.spread
        return 1 / (1 + math.exp(-z)) if z >= 0 else math.exp(z) / (1 + math.exp(z))

    def rate_met(self, share: float) -> float:
        """The fitted rate met with probability `share` (0.9: nine probes in ten)."""
        return self.estimate * math.exp(-self.spread * math.log(share / (1 - share)))


@dataclass(frozen=True)
class EdgeComparison:
    """Stack B's edge against stack A's: θ_B / θ_A, its interval, the likelihood-ratio p."""

    ratio: float
    ci_low: float | None
    ci_high: float | None
    p_value: float
    statistic: float  # the likelihood-ratio statistic of a common edge


class _Profile:
    """The penalized log-likelihood of one set of probes, and its profile over w."""

    def __init__(self, data: Iterable[tuple[float, bool]]):
        groups: dict[float, list[int]] = {}
        for rate, met in data:
            g = groups.setdefault(math.log(rate), [0, 0])
            g[0 if met else 1] += 1
        center = sum(groups) / len(groups)
        # (ln r, ln r − center, met, missed): centred for the determinant's sake
        self.groups = [(x, x - center, k1, k0) for x, (k1, k0) in sorted(groups.items())]
        self._cache: dict[float, tuple[float, float]] = {}

    def penalized(self, x_edge: float, log_w: float) -> float:
        """ℓ + ½ ln det I(a, b) at edge exp(x_edge) and spread exp(log_w)."""
        w = math.exp(log_w)
        ll = s0 = s1 = s2 = 0.0
        for x, dx, k1, k0 in self.groups:
            z = (x_edge - x) / w  # logit of P(met)
            if z > 0:
                e = math.exp(-z)
                log_met = -math.log1p(e)
                log_miss = log_met - z
                p = 1 / (1 + e)
            else:
                e = math.exp(z)
                log_miss = -math.log1p(e)
                log_met = log_miss + z
                p = e / (1 + e)
            ll += k1 * log_met + k0 * log_miss
            v = (k1 + k0) * p * (1 - p)
            s0 += v
            s1 += v * dx
            s2 += v * dx * dx
        det = s0 * s2 - s1 * s1
        return ll + 0.5 * math.log(det) if det > 1e-300 else -math.inf

    def at(self, x_edge: float) -> tuple[float, float]:
        """max over w of the penalized log-likelihood at this edge, and that log w: a scan
        of 17 spreads, then golden-section search around the best."""
        got = self._cache.get(x_edge)
        if got is not None:
            return got
        vals = [self.penalized(x_edge, t) for t in _LOG_W]
        i = max(range(len(vals)), key=vals.__getitem__)
        lo, hi = _LOG_W[max(i - 1, 0)], _LOG_W[min(i + 1, len(_LOG_W) - 1)]
        best = (vals[i], _LOG_W[i])
        c, d = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
        fc, fd = self.penalized(x_edge, c), self.penalized(x_edge, d)
        for _ in range(8):
            if fc >= fd:
                hi, d, fd = d, c, fc
                c = hi - _GOLD * (hi - lo)
                fc = self.penalized(x_edge, c)
            else:
                lo, c, fc = c, d, fd
                d = lo + _GOLD * (hi - lo)
                fd = self.penalized(x_edge, d)
        for v, t in ((fc, c), (fd, d)):
            if v > best[0]:
                best = (v, t)
        self._cache[x_edge] = best
        return best


def fit(probes: Iterable[tuple[float, bool]]) -> Edge | None:
    """The edge of these (rate, met) probes — a generator-limited probe must not be among
    them. None without at least one met and one missed probe."""
    data = tuple((float(r), bool(m)) for r, m in probes if r > 0)
    met = [math.log(r) for r, m in data if m]
    missed = [math.log(r) for r, m in data if not m]
    if not met or not missed:
        return None
    prof = _Profile(data)
    lo_x, hi_x = min(max(met), min(missed)), max(max(met), min(missed))
    start, stop = lo_x - _PAD, hi_x + _PAD
    grid = [start + i * _COARSE for i in range(int((stop - start) / _COARSE) + 2)]
    vals = [prof.at(x)[0] for x in grid]
    i = max(range(len(grid)), key=vals.__getitem__)
    x_hat = _golden_max(lambda x: prof.at(x)[0], grid[max(i - 1, 0)], grid[min(i + 1, len(grid) - 1)], grid[i])
    top = prof.at(x_hat)[0]

    def deviance(x: float) -> float:
        return 2 * (top - prof.at(x)[0])

    low = _bound(deviance, x_hat, -1)
    high = _bound(deviance, x_hat, +1)
    return Edge(math.exp(x_hat), None if low is None else math.exp(low), None if high is None else math.exp(high),
                math.exp(prof.at(x_hat)[1]), data)


def compare(a: Edge, b: Edge) -> EdgeComparison | None:
    """B's edge against A's (see the module docstring). None when either edge's interval
    is unbounded (a one-sided edge cannot be compared this way)."""
    if a.low is None or a.high is None or b.low is None or b.high is None:
        return None
    # The lattice: 0.2 % apart, coarser when an interval is wide (at most ~300 points a side).
    step = max(_FINE, max(math.log(a.high / a.low), math.log(b.high / b.low)) / 300)
    da, db = _deviance_on_lattice(a, step), _deviance_on_lattice(b, step)
    # Joint profile deviance of δ, the minimum over the pairs of lattice points δ apart.
    joint: dict[int, float] = {}
    for ia, va in da.items():
        for ib, vb in db.items():
            k = ib - ia
            v = va + vb
            if v < joint.get(k, math.inf):
                joint[k] = v
    inside = [k for k, v in joint.items() if v <= CHI2_1]
    ratio = b.rate / a.rate
    lo = math.exp(min(inside) * step) if inside else None
    hi = math.exp(max(inside) * step) if inside else None
    # The lattice is a step apart: never let its rounding put the estimate outside.
    lo = None if lo is None else min(lo, ratio)
    hi = None if hi is None else max(hi, ratio)
    stat = _common_edge_statistic(a, b)
    return EdgeComparison(ratio, lo, hi, math.erfc(math.sqrt(max(stat, 0.0) / 2)), stat)


# -- helpers ---------------------------------------------------------------------------

def _golden_max(f: Callable[[float], float], lo: float, hi: float, x0: float) -> float:
    best_x, best = x0, f(x0)
    c, d = hi - _GOLD * (hi - lo), lo + _GOLD * (hi - lo)
    fc, fd = f(c), f(d)
    for _ in range(20):
        if fc >= fd:
            hi, d, fd = d, c, fc
            c = hi - _GOLD * (hi - lo)
            fc = f(c)
        else:
            lo, c, fc = c, d, fd
            d = lo + _GOLD * (hi - lo)
            fd = f(d)
    for x, v in ((c, fc), (d, fd)):
        if v > best:
            best_x, best = x, v
    return best_x


def _bound(deviance: Callable[[float], float], x_hat: float, side: int) -> float | None:
    """The outermost point on one side of x_hat where the deviance is still within χ²₁:
    a scan outward in 2 % steps until the deviance has stayed above it for _PAD, then
    bisection between the last point inside and the next one. None when it has not risen
    above it for good within 8 × _PAD of the estimate (an unbounded side)."""
    last_in, x, out_run = x_hat, x_hat, 0.0
    steps = 0
    while out_run < _PAD:
        x += side * _COARSE
        steps += 1
        if steps * _COARSE > 8 * _PAD:
            return None
        if deviance(x) <= CHI2_1:
            last_in, out_run = x, 0.0
        else:
            out_run += _COARSE
    inner, outer = last_in, last_in + side * _COARSE
    for _ in range(12):
        mid = (inner + outer) / 2
        if deviance(mid) <= CHI2_1:
            inner = mid
        else:
            outer = mid
    return inner


def _deviance_on_lattice(e: Edge, step: float) -> dict[int, float]:
    """The profile deviance at the lattice points k·step inside the edge's interval (and
    one beyond each end): where a joint deviance within χ²₁ can come from."""
    assert e.low is not None and e.high is not None, "compare() takes bounded edges only"
    prof = _Profile(e.data)
    top = prof.at(math.log(e.estimate))[0]
    k0, k1 = math.floor(math.log(e.low) / step) - 1, math.ceil(math.log(e.high) / step) + 1
    return {k: 2 * (top - prof.at(k * step)[0]) for k in range(k0, k1 + 1)}


def _common_edge_statistic(a: Edge, b: Edge) -> float:
    """min over x of D_A(x) + D_B(x): the likelihood-ratio statistic of one edge for both
    (each stack its own spread). The minimum lies between the two estimates."""
    pa, pb = _Profile(a.data), _Profile(b.data)
    ta, tb = pa.at(math.log(a.estimate))[0], pb.at(math.log(b.estimate))[0]

    def neg(x: float) -> float:
        return -(2 * (ta - pa.at(x)[0]) + 2 * (tb - pb.at(x)[0]))

    lo, hi = sorted((math.log(a.estimate), math.log(b.estimate)))
    if hi - lo < 1e-9:
        return 0.0
    grid = [lo + i * (hi - lo) / 16 for i in range(17)]
    vals = [neg(x) for x in grid]
    i = max(range(len(grid)), key=vals.__getitem__)
    x = _golden_max(neg, grid[max(i - 1, 0)], grid[min(i + 1, 16)], grid[i])
    return max(-neg(x), 0.0)
