"""Capacity searches for a terminal: one line per stack and search ("capacity 11,720
req/s, 95 % CI 11,450–11,980, at p99 ≤ 10 ms"), the cost near that rate, the latency
curve each search walked, each stack's edge over all its searches when it has several,
and the verdicts between stacks — in report/words/capacity.py's words."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.capacity import SLO
from stackbench.analysis.capacity_results import CapacityResult, StackCapacity, on_probes
from stackbench.analysis.verdicts import Verdict
from stackbench.report.text import grid, legend
from stackbench.report.text.style import Style
from stackbench.report.words.capacity import (METHOD, PROBES_NOTE, SEARCHES_NOTE, STOPPED, capacity, ci, met,
                                              sentence)
from stackbench.units import MiB, format_num, format_rate, format_us


def render(found: Sequence[CapacityResult], slo: SLO, verdicts: Sequence[Verdict], out: TextIO, *,
           curves: bool = True, stacks: Sequence[StackCapacity] = (),
           explain: bool = True) -> None:
    """The searches, then their verdicts (`verdicts`: () when they were shown with the
    answers: render_verdicts); `explain`: the method in full, else a short legend."""
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
    if explain:
        out.write(style.dim(METHOD + "; met = probes that met the target, of the probes made (a probe whose load "
                            "engine saturated is left out); p99, CPU and memory: the stack at the highest rate it "
                            "met at or below its capacity") + "\n")
    else:
        legend.short(["capacity", "met"], out)
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
    render_verdicts(verdicts, out)


def render_verdicts(verdicts: Sequence[Verdict], out: TextIO, explain: bool = True) -> None:
    """The capacities against the baseline's, a line each; `explain`: how they were
    compared (on the probes, or the searches' edges)."""
    if not verdicts:
        return
    style = Style(out)
    out.write("\n" + style.bold(f"capacity verdicts (baseline: {verdicts[0].baseline})") + "\n")
    for v in verdicts:
        line = f"{v.question.workload} {'keep-alive' if v.question.keepalive else 'no keep-alive'}: " + sentence(v)
        out.write((style.good(line) if v.better else line) + "\n")
    notes = ([PROBES_NOTE] if any(on_probes(v) for v in verdicts) else []) + (
        [SEARCHES_NOTE] if not all(on_probes(v) for v in verdicts) else [])
    for note in notes if explain else ():
        out.write(style.dim(note) + "\n")


def _curve(r: CapacityResult, out: TextIO, style: Style) -> None:
    out.write(style.dim(f"{r.stack_label} · {r.workload} · rep {r.repetition + 1}: the search, by rate "
                        f"(# = the order probed)") + "\n")
    order = {id(p): i + 1 for i, p in enumerate(r.probes)}
    body = []
    for p in r.curve:
        f = p.figures
        # Of visits: the visits a second its pages served (the probe's unit), else requests.
        body.append((format_rate(p.rate), str(order[id(p)]), format_rate(p.served_per_s if r.visits else f.throughput),
                     format_us(f.p50_us), format_us(f.p99_us), "met" if p.check.met else "missed",
                     "; ".join(p.check.reasons + (("load engine saturated: left out",)
                                                  if p.check.generator_limited else ()))))
    served = "visits/s" if r.visits else "req/s"
    for line in grid.lines(("rate/s", "#", served, "p50 ms", "p99 ms", "target", "why"), body, ("target", "why")):
        out.write("  " + line + "\n")
