"""Per stack, the curve a walk or sweep measured: each load level in the order it was
asked → throughput, p50, p99, errors, unserved, CPU per request, memory, processes.
Read top to bottom, a ramp shows where latency turns up, and an up-then-down ramp shows
what the way down looks like after the way up."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis.curves import Curve
from stackbench.report.text import grid, legend
from stackbench.report.text.style import Style
from stackbench.units import MiB, format_num, format_rate, format_us

HEAD = ("load", "runs", "req/s", "p50 ms", "p99 ms", "errors", "unserved", "not sent", "CPU µs/req", "mem MiB", "procs")


def render(curves: list[Curve], out: TextIO, explain: bool = True) -> None:
    """`explain`: what the load and the figures are, in full, else a short legend."""
    if not curves:
        return
    style = Style(out)
    open_loop = any(p.question.rate is not None for c in curves for p in c.points)
    head = HEAD if open_loop else tuple(h for h in HEAD if h != "not sent")
    for c in curves:
        out.write("\n" + style.bold(f"{c.stack_label} · {c.workload} · {c.mode or ('keep-alive ' + ('on' if c.keepalive else 'off'))}")
                  + "\n")
        body = []
        for p in c.points:
            row: tuple[str, ...] = (p.question.level(), str(p.runs), format_rate(p.throughput) + (" pg" if p.page_mode else ""),
                   format_us(p.p50_us), format_us(p.p99_us), _int(p.errors), _int(p.unserved))
            if open_loop:
                row += (_int(p.not_sent),)
            row += (format_num(p.cpu_us_per_request), format_num(p.memory_peak_bytes, 1 / MiB, 1), _int(p.procs_max))
            body.append(row)
        for line in grid.lines(head, body, ("load",)):
            out.write(line + "\n")
    if not explain:
        legend.short(["levels", "not sent" if open_loop else ""], out)
        return
    notes = ["load: c=N closed loop with N clients; N/s an open loop at N requests/s (latency from the intended "
             "send time); up/down: the way of an up-then-down ramp"]
    if len({p.runs for c in curves for p in c.points}) > 1 or any(p.runs > 1 for c in curves for p in c.points):
        notes.append("with repetitions: medians over the runs at that level; errors and not sent summed, "
                     "unserved the most in one run")
    if open_loop:
        notes.append("not sent = requests due that the engine could not send: every connection was waiting for "
                     "the stack")
    for n in notes:
        out.write(style.dim(n) + "\n")


def _int(v: int | None) -> str:
    return "-" if v is None else f"{v:,}"
