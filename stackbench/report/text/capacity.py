"""Capacity searches in words: one line per stack and search ("1,840–1,920 req/s at
p99 ≤ 10 ms"), the cost at the sustained rate, the latency curve each search walked,
and the verdicts between stacks."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis.capacity import SLO
from stackbench.analysis.capacity_results import CapacityResult
from stackbench.analysis.verdicts import Verdict
from stackbench.report.text import grid
from stackbench.report.text.style import Style
from stackbench.report.text.verdicts import headline
from stackbench.units import MiB, format_num, format_rate, format_us

STOPPED = {
    "converged": "converged",
    "ceiling": "reached the search's max rate: capacity is at least that (raise search.max)",
    "floor": "failed even at the search's min rate",
    "generator": "the load engine saturated its core first: capacity is at least the low end (the generator's limit, not the stack's)",
    "probes": "stopped after the most probes a search makes",
    "budget": "stopped early: the time budget (search.budget) ran out",
    "failed": "the stack failed during the search",
    "running": "interrupted (`run --resume` searches again)",
}


def interval(r: CapacityResult) -> str:
    if r.low is None and r.high is None:
        return "nothing probed"
    if r.low is None:
        return f"below {format_rate(r.high)} req/s"
    if r.high is None:
        return f"at least {format_rate(r.low)} req/s"
    return f"{format_rate(r.low)}–{format_rate(r.high)} req/s"


def render(found: list[CapacityResult], slo: SLO, verdicts: list[Verdict], out: TextIO, *,
           curves: bool = True) -> None:
    if not found:
        return
    style = Style(out)
    out.write("\n" + style.bold(f"capacity at {slo.describe()}") + "\n")
    body = []
    for r in found:
        f = r.at_low
        body.append((r.stack_label, r.workload, "on" if r.keepalive else "off", str(r.repetition + 1), interval(r),
                     f"{r.confirmations}" if r.low is not None else "-",
                     format_us(f.p99_us) if f else "-",
                     format_num(f.cpu_us_per_request) if f else "-",
                     format_num(f.memory_peak_bytes, 1 / MiB, 1) if f else "-",
                     str(len(r.probes)), "-" if r.seconds is None else f"{r.seconds:.0f}",
                     r.stopped))
    head = ("stack", "workload", "keep-alive", "rep", "sustains", "times", "p99 ms", "CPU µs/req", "mem MiB",
            "probes", "s", "stopped")
    for line in grid.lines(head, body, ("stack", "workload", "keep-alive", "sustains", "stopped")):
        out.write(line + "\n")
    out.write(style.dim("sustains = highest rate that met the target – lowest that did not; times = probes that met "
                        "it at the low end; p99, CPU and memory: the stack at that rate") + "\n")
    for reason in dict.fromkeys(r.stopped for r in found if r.stopped != "converged"):
        out.write(style.warn(f"note: {', '.join(sorted({r.stack_label for r in found if r.stopped == reason}))}: "
                             f"{STOPPED.get(reason, reason)}") + "\n")
    if curves:
        for r in found:
            _curve(r, out, style)
    if verdicts:
        out.write("\n" + style.bold(f"capacity verdicts (baseline: {verdicts[0].baseline})") + "\n")
        for v in verdicts:
            line = f"{v.question.workload} {'keep-alive' if v.question.keepalive else 'no keep-alive'}: " + headline(v, 0.02)
            out.write((style.good(line) if v.better else line) + "\n")
        out.write(style.dim("each search is one run; 95 % CI: bootstrap interval of the ratio of the median sustained "
                            "rates; five searches a side give a verdict (repetitions = 5)") + "\n")


def _curve(r: CapacityResult, out: TextIO, style: Style) -> None:
    out.write(style.dim(f"{r.stack_label} · {r.workload} · rep {r.repetition + 1}: the search, by rate") + "\n")
    body = []
    for p in r.curve:
        f = p.figures
        body.append((format_rate(p.rate), format_rate(f.throughput), format_us(f.p50_us), format_us(f.p99_us),
                     "met" if p.check.met else "missed", "; ".join(p.check.reasons)))
    for line in grid.lines(("rate/s", "req/s", "p50 ms", "p99 ms", "target", "why"), body, ("target", "why")):
        out.write("  " + line + "\n")
