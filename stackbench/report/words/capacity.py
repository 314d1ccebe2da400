"""Capacity searches in words — one wording for the terminal and the HTML report: the
capacity in a phrase ("11,720 req/s", "at least 9,000 req/s"), its interval, the probes
that met the target, how a search stopped, the method, and the verdicts between stacks."""

from __future__ import annotations

from stackbench.analysis import stats
from stackbench.analysis.capacity_results import CapacityResult, StackCapacity, on_probes
from stackbench.analysis.verdicts import Verdict
from stackbench.report.words.verdicts import ci_change, comparative, far, headline, p_text, signed
from stackbench.units import format_rate


STOPPED = {
    "converged": "converged",
    "ceiling": "reached the search's max rate: capacity is at least that (raise search.max)",
    "floor": "failed even at the search's min rate",
    "generator": "the load engine saturated its core first: capacity is at least the bracket's low end (the "
                 "generator's limit, not the stack's)",
    "probes": "stopped after the most probes a search makes",
    "budget": "stopped early: the time budget (search.budget) ran out",
    "failed": "the stack failed during the search",
    "running": "interrupted (`run --resume` searches again)",
}

METHOD = ("capacity = the edge: the rate at which a probe meets the target half the time, from a logistic curve of "
          "met/missed against log rate fitted to every probe (Firth's penalized maximum likelihood; the last probes "
          "are an up-and-down series around the edge); 95 % CI by profile likelihood")
PROBES_NOTE = ("fewer than five searches a side: each pair of edges is compared on its probes (likelihood-ratio test "
               "of a common edge, Holm-adjusted; 95 % CI of the ratio by profile likelihood) — this covers the noise "
               "between probes, not a host that drifts between one stack's search and the other's; five searches a "
               "side (repetitions = 5) compare the searches' edges instead")
SEARCHES_NOTE = ("each search is one run (its fitted edge); 95 % CI: bootstrap interval of the ratio of the median "
                 "edges")


def unit(r: CapacityResult | StackCapacity) -> str:
    """"req/s", or "visits/s" for a capacity in visits (its probes were of visits)."""
    return "visits/s" if r.visits else "req/s"


def capacity(r: CapacityResult | StackCapacity) -> str:
    """The capacity in one phrase: '11,720 req/s' — or what the bracket says without an edge."""
    if r.edge is not None:
        return f"{format_rate(r.edge.rate)} {unit(r)}"
    # No edge: every probe that counts met the target (the misses, if any, were the load
    # engine's) — or every one missed.
    if r.low is not None:
        return f"at least {format_rate(r.low)} {unit(r)}"
    if r.high is not None:
        return f"below {format_rate(r.high)} {unit(r)}"
    return "nothing probed"


def ci(r: CapacityResult | StackCapacity) -> str:
    """The edge's 95 % interval: '11,450–11,980 req/s' ('-' without an edge)."""
    e = r.edge
    if e is None:
        return "-"
    lo = "…" if e.low is None else format_rate(e.low)
    hi = "…" if e.high is None else format_rate(e.high)
    # Held at the most a met probe served (capacity_results.capped): say so — with the fit
    # when the capacity itself was moved; when only the interval's top was, the fit is the
    # capacity shown, and "(fitted 11,684)" beside a capacity of 11,684 read as a second figure.
    held = ""
    if e.served_cap is not None:
        held = (f", held at what a probe served (fitted {format_rate(e.estimate)})" if e.estimate > e.rate
                else ", its top held at what a probe served")
    return f"{lo}–{hi} {unit(r)}{held}"


def interval(r: CapacityResult | StackCapacity) -> str:
    """The capacity and its interval in one phrase, for a sentence or a cell."""
    return capacity(r) + (f" (95 % CI {ci(r)})" if r.edge is not None else "")


def met(r: CapacityResult) -> str:
    """Probes that met the target, of those that say something of the stack."""
    counted = [p for p in r.probes if not p.check.generator_limited]
    return f"{sum(p.check.met for p in counted)}/{len(counted)}"


def sentence(v: Verdict, band: float = stats.DEFAULT_EQUIVALENCE) -> str:
    """A capacity verdict in words. Searches as runs: the verdicts' own headline. Edges
    compared on their probes: the same words, counting probes and saying so."""
    if not on_probes(v):
        return headline(v, band)
    c = v.comparison
    basis = f"edges of {c.n_b} vs {c.n_a} probes"
    if c.verdict == stats.Verdict.INSUFFICIENT:
        missing = [label for label, n in ((v.candidate, c.n_b), (v.baseline, c.n_a)) if n == 0]
        if missing:
            return (f"{v.candidate} vs {v.baseline}: no verdict ({' and '.join(missing)}: no edge — every probe that "
                    "counts met the target, or every one missed: the capacity is a bound, not an estimate)")
        return f"{v.candidate} vs {v.baseline}: no verdict (a capacity's interval is open on one side; {basis})"
    ci_text = f"CI {signed(c.ci_low)} to {signed(c.ci_high)}"
    if c.verdict == stats.Verdict.EQUIVALENT:
        return (f"{v.candidate} and {v.baseline} sustain the same load within ±{c.band:.0%} of each other "
                f"({signed(c.ratio)}, {ci_text}; {basis})")
    if c.verdict == stats.Verdict.NO_DIFFERENCE:
        return (f"{v.candidate} vs {v.baseline}: no significant difference in capacity ({signed(c.ratio)}, "
                f"{ci_text}; {basis}{p_text(c)})")
    # A difference found has its ratio and interval (stats.compare).
    assert c.ratio is not None and c.ci_low is not None and c.ci_high is not None
    phrase = comparative(c.ratio, "capacity", "capacity", multiple=far(c.ratio, c.ci_low, c.ci_high))
    return (f"{v.candidate} {phrase} {v.baseline} within the target "
            f"(95 % CI {ci_change(c.ratio, c.ci_low, c.ci_high)}; {basis}{p_text(c)})")
