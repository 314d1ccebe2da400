"""Visitor classes side by side, in words — the rows of the terminal's and the HTML
report's tables (analysis/classes.py computes the medians): per stack and level, the
measured visitors alone and with the other classes beside them — their throughput and
p99, what the other classes got, and what the server held (busy workers from its own
status page, processes from its cgroup). Every run is in `show --all` and `export`."""

from __future__ import annotations

from dataclasses import replace
from typing import Callable, Sequence

from stackbench.analysis.classes import ClassesRow
from stackbench.units import format_rate, format_us

HEAD = ("stack", "level", "visitors", "req/s", "p99 ms", "others: done", "others p99 ms", "busy", "procs")


def _num(v: float | None, fmt: Callable[[float], str] = lambda x: f"{x:,.0f}") -> str:
    return "-" if v is None else fmt(v)


def rows(found: Sequence[ClassesRow]) -> list[tuple[str, ...]]:
    out: list[tuple[str, ...]] = []
    for r in found:
        q = r.question
        alone = q.background == "none"
        out.append((r.stack_label, f"{q.workload} {replace(q, background='none').level()}",
                    "alone" if alone else f"+{q.background}",
                    _num(r.requests_per_s, format_rate), _num(r.p99_us, lambda v: format_us(v)),
                    _num(r.others_completed) if not alone else "",
                    _num(r.others_p99_us, lambda v: format_us(v)) if not alone else "",
                    "no answer" if r.unanswered else _num(r.busy), _num(r.procs)))
    return out


BUSY_NOTE = ("busy = the most workers the servers had busy at once, from their own status pages (Apache busy "
             "workers + PHP-FPM active processes + nginx connections being written); a server whose every worker "
             "is held cannot answer its status page (\"no answer\": not once in the window), so look at procs "
             "(the stack's processes) too")
