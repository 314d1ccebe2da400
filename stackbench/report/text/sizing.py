"""A sizing on the terminal: the answer sentence, then capacity by size and stack (with the
mark of enough), the visits a day each carries, and each stack's memory near its capacity
(report/words/sizing.py words it; analysis/sizing.py decides)."""

from __future__ import annotations

import textwrap
from typing import TextIO

from stackbench.analysis.sizing import SizingAnswer
from stackbench.report.text import grid
from stackbench.report.words import sizing as words


def render(a: SizingAnswer, slo: str | None, out: TextIO) -> None:
    out.write(textwrap.fill(words.sentence(a, slo), 110) + "\n\n")
    stacks = [s.stack for s in a.stacks]
    by = {(c.stack, c.size): c for s in a.stacks for c in s.sizes}
    prices = {c.size: c.price for s in a.stacks for c in s.sizes}
    out.write(f"capacity within the SLO, requests/s [95 % interval] ({words.MARKS_LEGEND}):\n")
    head = ("size", "price/month", *stacks)
    rows = [(size, words.price(prices.get(size)),
             *(words.cell(by[(st, size)]) if (st, size) in by else "-" for st in stacks)) for size in a.sizes]
    for line in grid.lines(head, rows, ("size", *stacks)):
        out.write("  " + line + "\n")
    out.write(f"\nvisits a day each carries (at its capacity, {words.per_visit(a)}), and the stack's "
              "memory with its database near it:\n")
    rows = [(size, *(f"{words.count(a.visits(by[(st, size)].capacity))} · {words.mib(by[(st, size)].memory_bytes)}"
                     if (st, size) in by else "-" for st in stacks)) for size in a.sizes]
    for line in grid.lines(("size", *stacks), rows, ("size", *stacks)):
        out.write("  " + line + "\n")
    tuned = [f"{c.size}: {c.label}" for s in a.stacks for c in s.sizes if c.label != c.stack]
    if tuned:
        out.write("\neach stack tuned for the target on each size: " + "; ".join(tuned) + "\n")
    runs = ", ".join(f"{r.size}: run {r.run_id}" for r in a.sizing.runs)
    out.write(f"\nstored as sizing {a.sizing.id} ({runs}); `stackbench show RUN` has each size's searches\n")
