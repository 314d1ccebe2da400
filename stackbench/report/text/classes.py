"""Visitor classes side by side, for a terminal (report/words/classes.py's rows)."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.classes import ClassesRow
from stackbench.report.text import grid, legend
from stackbench.report.text.style import Style
from stackbench.report.words.classes import BUSY_NOTE, HEAD, rows


def render(found: Sequence[ClassesRow], out: TextIO, explain: bool = True) -> None:
    """`explain`: what busy counts, in full, else a short legend."""
    style = Style(out)
    out.write("\n" + style.bold("visitor classes: the measured visitors alone and with others beside them "
                                "(medians over repetitions)") + "\n")
    for line in grid.lines(HEAD, rows(found), text_columns=("stack", "level", "visitors")):
        out.write(line + "\n")
    if explain:
        out.write(style.dim(BUSY_NOTE) + "\n")
    else:
        legend.short(("busy",), out)
