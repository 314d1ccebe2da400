"""How often each stack's cache answered, for a terminal: report/words/cache.py's rows —
the answers the engine saw marked HIT, and the cache's own count beside them."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.cache import HitRatio
from stackbench.report.text import grid, legend
from stackbench.report.text.style import Style
from stackbench.report.words.cache import HEAD, NOTE, rows


def render(ratios: Sequence[HitRatio], out: TextIO, explain: bool = True) -> None:
    """`explain`: where each figure comes from in full, else a short legend."""
    body = rows(ratios)
    if not body:
        return
    style = Style(out)
    out.write("\n" + style.bold("how often each cache answered (medians of valid runs)") + "\n")
    head, *lines = grid.lines(HEAD, body, ("stack", "workload", "load"))
    out.write(style.bold(head) + "\n")
    for line in lines:
        out.write(line + "\n")
    if explain:
        out.write(style.dim(legend.wrap(NOTE)) + "\n")
    else:
        legend.short(["hit ratio", "cache's own count"], out)
