"""Each stack's time to steady, for a terminal (report/words/warmup.py's rows)."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.warmup import StackSteady
from stackbench.report.text import grid, legend
from stackbench.report.text.style import Style
from stackbench.report.words.warmup import HEAD, rows, title


def render(steady: Sequence[StackSteady], out: TextIO) -> None:
    if not steady:
        return
    style = Style(out)
    out.write("\n" + style.bold(legend.wrap(title(steady))) + "\n")
    head, *body = grid.lines(HEAD, rows(steady), text_columns=(HEAD[0], HEAD[2]))
    out.write(style.bold(head) + "\n")
    for line in body:
        out.write(line + "\n")
