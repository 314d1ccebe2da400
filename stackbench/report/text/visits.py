"""Visits per stack and logged-in share, for a terminal: report/words/visits.py's rows."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.visits import VisitFigures
from stackbench.report.text import legend
from stackbench.report.words.visits import HEAD, NOTE, rows


def render(figures: Sequence[VisitFigures], out: TextIO, explain: bool = True) -> None:
    """`explain`: what each figure is in full, else a short legend."""
    legend.titled_table("visits (medians of valid runs)", HEAD, rows(figures), ("stack", "workload", "load"), NOTE,
                        ["visits/s", "visit p50 s"], out, explain)
