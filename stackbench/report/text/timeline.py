"""`stackbench timeline RUN:SEQ`: one cell second by second — what the engine saw
(requests, errors, p50/p99) next to what the stack did (processes, threads, memory, CPU)
on the same wall clock. Prefork spawning children under load shows here."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import questions, timeline
from stackbench.model.cell import StoredCell
from stackbench.model.cost import CgroupSample
from stackbench.report.text import grid
from stackbench.report.text.style import Style
from stackbench.units import MiB


def rows(cell: StoredCell, samples: list[CgroupSample]) -> list[list[str]]:
    return [_row(s) for s in timeline.seconds(cell, samples)]


def _row(s: "timeline.Second") -> list[str]:
    return [str(s.t_s), f"{s.requests:,}", str(s.errors), _ms(s.p50_us), _ms(s.p99_us), _v(s.procs),
            _v(s.threads), "-" if s.memory_bytes is None else f"{s.memory_bytes / MiB:.1f}",
            "-" if s.cpu_share is None else f"{s.cpu_share:.0%}"]


HEAD = ["s", "requests", "errors", "p50 ms", "p99 ms", "procs", "threads", "mem MiB", "stack CPU"]


def render(cell: StoredCell, samples: list[CgroupSample], out: TextIO) -> None:
    style = Style(out)
    q = questions.of(cell)
    mode = q.mode() if q.tls else f"keep-alive {'on' if cell.keepalive else 'off'}"
    out.write(style.bold(f"run {cell.run_id} cell {cell.seq}: {cell.stack_label} · {cell.workload} · "
                         f"{q.level()} · {mode}") + "\n")
    body = rows(cell, samples)
    if not body:
        out.write("no timeline stored for this cell\n")
        return
    widths = [max(len(r[i]) for r in [HEAD] + body) for i in range(len(HEAD))]
    out.write(style.bold("  ".join(h.rjust(w) for h, w in zip(HEAD, widths))) + "\n")
    for r in body:
        out.write("  ".join(v.rjust(w) for v, w in zip(r, widths)) + "\n")
    out.write(style.dim("stack CPU: share of one core (100 % = one core busy); mem: processes' anonymous + shared")
              + "\n")


def render_walk(steps: list[tuple[StoredCell, "timeline.Second"]], out: TextIO) -> None:
    """A whole walk second by second, with the load level each second belonged to."""
    style = Style(out)
    if not steps:
        out.write("no timeline stored for this walk\n")
        return
    first = steps[0][0]
    q = questions.of(first)
    mode = q.mode() if q.tls else f"keep-alive {'on' if first.keepalive else 'off'}"
    out.write(style.bold(f"run {first.run_id}: {first.stack_label} · {first.workload} · {mode} · the whole walk ({len({c.seq for c, _ in steps})} "
                         "steps on one running stack)") + "\n")
    head = ["load", *HEAD]
    body = [[questions.of(c).level()] + _row(s) for c, s in steps]
    for line in grid.lines(head, body, ("load",)):
        out.write(line + "\n")
    out.write(style.dim("s: from the first step's start; stack CPU: share of one core; procs/mem: the whole stack's "
                        "cgroup") + "\n")


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def _v(x: int | None) -> str:
    return "-" if x is None else str(x)
