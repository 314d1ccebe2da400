"""A sizing on the terminal: the answer sentence, the core it was measured on (its
yardstick, and the rescaling when asked), then capacity by size and stack (with the mark of
enough), the hits a day each carries, each stack's memory near its capacity and the CPU a
request took (report/words/sizing.py words it; analysis/sizing.py decides)."""

from __future__ import annotations

import textwrap
from typing import TextIO

from stackbench.analysis.sizing import SizingAnswer
from stackbench.report.text import grid
from stackbench.report.words import sizing as words


def render(a: SizingAnswer, slo: str | None, out: TextIO) -> None:
    out.write(textwrap.fill(words.sentence(a, slo), 110) + "\n\n")
    out.write(textwrap.fill(words.core_line(a), 110) + "\n\n")
    stacks = [s.stack for s in a.stacks]
    by = {(c.stack, c.size): c for s in a.stacks for c in s.sizes}
    prices = {c.size: c.price for s in a.stacks for c in s.sizes}
    theirs = f"cores of {a.core:.0f}" if a.on_core(1.0) is not None and a.core else None
    out.write(f"capacity within the SLO, {words.rate_unit(a)} [95 % interval] ({words.MARKS_LEGEND}):\n")
    head = ("size", "price/month", *((theirs,) if theirs else ()), *stacks)
    rows = [(size, words.price(prices.get(size)), *((_theirs(a, size),) if theirs else ()),
             *(words.cell(by[(st, size)], a.visit is not None) if (st, size) in by else "-" for st in stacks)) for size in a.sizes]
    for line in grid.lines(head, rows, ("size", *stacks)):
        out.write("  " + line + "\n")
    visits = a.visit is not None
    out.write(f"\n{'visits and hits' if visits else 'hits'} a day each carries (at its capacity, {words.per_day(a)}), "
              "and the stack's memory with its database near it:\n")
    rows = [(size, *(f"{_day(a, by[(st, size)].capacity)} · {words.mib(by[(st, size)].memory_bytes)}"
                     if (st, size) in by else "-" for st in stacks)) for size in a.sizes]
    for line in grid.lines(("size", *stacks), rows, ("size", *stacks)):
        out.write("  " + line + "\n")
    cpu = words.page_cpu(a)
    if cpu:
        out.write("\n" + textwrap.fill(cpu, 110) + "\n")
    tuned = words.tuned(a) + words.skipped(a)
    if tuned:
        out.write("\n" + "\n".join(textwrap.fill(line, 110, subsequent_indent="  ") for line in tuned) + "\n")
    out.write(f"\nstored as sizing {a.sizing.id} ({words.runs(a.sizing)}); `stackbench show RUN` has each size's searches\n")


def _theirs(a: SizingAnswer, size: str) -> str:
    """A size's CPUs in cores of the user's yardstick."""
    n = a.on_core(a.sizing.cpus(size))
    return f"{n:.2g}" if n is not None else "-"


def _day(a: SizingAnswer, rate: float | None) -> str:
    """"694 k" hits, or "20 k visits · 306 k hits"."""
    if a.visit is None:
        return words.count(a.hits(rate))
    return f"{words.count(a.visits(rate))} visits · {words.count(a.hits(rate))} hits"
