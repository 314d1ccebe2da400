"""Capacity searches in words: one line per stack and search ("capacity 11,720 req/s,
95 % CI 11,450–11,980, at p99 ≤ 10 ms"), the cost near that rate, the latency curve each
search walked, each stack's edge over all its searches when it has several, and the
verdicts between stacks."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import stats
from stackbench.analysis.capacity import SLO
from stackbench.analysis.capacity_results import CapacityResult, StackCapacity, on_probes
from stackbench.analysis.verdicts import Verdict
from stackbench.report.text import grid
from stackbench.report.text.style import Style
from stackbench.report.text.verdicts import headline
from stackbench.units import MiB, format_num, format_rate, format_us

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


def capacity(r: CapacityResult | StackCapacity) -> str:
    """The capacity in one phrase: '11,720 req/s' — or what the bracket says without an edge."""
    if r.edge is not None:
        return f"{format_rate(r.edge.rate)} req/s"
    # No edge: every probe that counts met the target (the misses, if any, were the load
    # engine's) — or every one missed.
    if r.low is not None:
        return f"at least {format_rate(r.low)} req/s"
    if r.high is not None:
        return f"below {format_rate(r.high)} req/s"
    return "nothing probed"


def ci(r: CapacityResult | StackCapacity) -> str:
    """The edge's 95 % interval: '11,450–11,980 req/s' ('-' without an edge)."""
    e = r.edge
    if e is None:
        return "-"
    lo = "…" if e.low is None else format_rate(e.low)
    hi = "…" if e.high is None else format_rate(e.high)
    return f"{lo}–{hi} req/s"


def interval(r: CapacityResult | StackCapacity) -> str:
    """The capacity and its interval in one phrase, for a sentence or a cell."""
    return capacity(r) + (f" (95 % CI {ci(r)})" if r.edge is not None else "")


def met(r: CapacityResult) -> str:
    """Probes that met the target, of those that say something of the stack."""
    counted = [p for p in r.probes if not p.check.generator_limited]
    return f"{sum(p.check.met for p in counted)}/{len(counted)}"


def render(found: list[CapacityResult], slo: SLO, verdicts: list[Verdict], out: TextIO, *,
           curves: bool = True, stacks: list[StackCapacity] | tuple[StackCapacity, ...] = ()) -> None:
    if not found:
        return
    style = Style(out)
    out.write("\n" + style.bold(f"capacity at {slo.describe()}") + "\n")
    body = []
    for r in found:
        f = r.at_capacity
        body.append((r.stack_label, r.workload, "on" if r.keepalive else "off", str(r.repetition + 1), capacity(r),
                     ci(r), met(r), format_us(f.p99_us) if f else "-",
                     format_num(f.cpu_us_per_request) if f else "-",
                     format_num(f.memory_peak_bytes, 1 / MiB, 1) if f else "-",
                     "-" if r.seconds is None else f"{r.seconds:.0f}", r.stopped))
    head = ("stack", "workload", "keep-alive", "rep", "capacity", "95 % CI", "met", "p99 ms", "CPU µs/req",
            "mem MiB", "s", "stopped")
    for line in grid.lines(head, body, ("stack", "workload", "keep-alive", "capacity", "95 % CI", "stopped")):
        out.write(line + "\n")
    out.write(style.dim(METHOD + "; met = probes that met the target, of the probes made (a probe whose load "
                        "engine saturated is left out); p99, CPU and memory: the stack at the highest rate it met at "
                        "or below its capacity") + "\n")
    for reason in dict.fromkeys(r.stopped for r in found if r.stopped != "converged"):
        out.write(style.warn(f"note: {', '.join(sorted({r.stack_label for r in found if r.stopped == reason}))}: "
                             f"{STOPPED.get(reason, reason)}") + "\n")
    several = [s for s in stacks if s.searches > 1]
    if several:
        out.write(style.dim("each stack over all its searches (their probes together):") + "\n")
        rows = [(s.stack_label, s.workload, "on" if s.keepalive else "off", f"{s.searches} searches", capacity(s),
                 ci(s), f"{s.edge.met}/{s.edge.probes}" if s.edge else "-") for s in several]
        for line in grid.lines(("stack", "workload", "keep-alive", "searches", "capacity", "95 % CI", "met"), rows,
                               ("stack", "workload", "keep-alive", "searches", "capacity", "95 % CI")):
            out.write("  " + line + "\n")
    if curves:
        for r in found:
            _curve(r, out, style)
    if verdicts:
        out.write("\n" + style.bold(f"capacity verdicts (baseline: {verdicts[0].baseline})") + "\n")
        for v in verdicts:
            line = f"{v.question.workload} {'keep-alive' if v.question.keepalive else 'no keep-alive'}: " + sentence(v)
            out.write((style.good(line) if v.better else line) + "\n")
        notes = ([PROBES_NOTE] if any(on_probes(v) for v in verdicts) else []) + (
            [SEARCHES_NOTE] if not all(on_probes(v) for v in verdicts) else [])
        for note in notes:
            out.write(style.dim(note) + "\n")


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
    ci_text = f"CI {_signed(c.ci_low)} to {_signed(c.ci_high)}"
    if c.verdict == stats.Verdict.EQUIVALENT:
        return (f"{v.candidate} and {v.baseline} sustain the same load within ±{c.band:.0%} of each other "
                f"({_signed(c.ratio)}, {ci_text}; {basis})")
    if c.verdict == stats.Verdict.NO_DIFFERENCE:
        return (f"{v.candidate} vs {v.baseline}: no significant difference in capacity ({_signed(c.ratio)}, "
                f"{ci_text}; {basis}{_p(c)})")
    # A difference found has its ratio and interval (stats.compare).
    assert c.ratio is not None and c.ci_low is not None and c.ci_high is not None
    more = c.ratio > 1
    lo, hi = sorted((abs(c.ci_low - 1) * 100, abs(c.ci_high - 1) * 100))
    return (f"{v.candidate} sustains {abs(c.ratio - 1) * 100:.0f} % {'more' if more else 'less'} load than "
            f"{v.baseline} within the target (95 % CI {lo:.0f}–{hi:.0f} %; {basis}{_p(c)})")


def _signed(ratio: float | None) -> str:
    return "?" if ratio is None else f"{(ratio - 1) * 100:+.1f} %".replace("-", "−")


def _p(c: stats.Comparison) -> str:
    if c.p_adjusted is None:
        return ""
    return f", p = {c.p_adjusted:.3g}" if c.p_adjusted >= 0.001 else ", p < 0.001"


def _curve(r: CapacityResult, out: TextIO, style: Style) -> None:
    out.write(style.dim(f"{r.stack_label} · {r.workload} · rep {r.repetition + 1}: the search, by rate "
                        f"(# = the order probed)") + "\n")
    order = {id(p): i + 1 for i, p in enumerate(r.probes)}
    body = []
    for p in r.curve:
        f = p.figures
        body.append((format_rate(p.rate), str(order[id(p)]), format_rate(f.throughput), format_us(f.p50_us),
                     format_us(f.p99_us), "met" if p.check.met else "missed",
                     "; ".join(p.check.reasons + (("load engine saturated: left out",)
                                                  if p.check.generator_limited else ()))))
    for line in grid.lines(("rate/s", "#", "req/s", "p50 ms", "p99 ms", "target", "why"), body, ("target", "why")):
        out.write("  " + line + "\n")
