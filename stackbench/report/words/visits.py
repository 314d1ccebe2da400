"""Visits per stack and logged-in share, in words — the rows of the terminal's and the
HTML report's tables (analysis/visits.py computes; this only formats)."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis import stats
from stackbench.analysis.visits import VisitFigures
from stackbench.units import format_num, format_rate

HEAD = ("stack", "workload", "load", "valid runs", "visits/s", "95 % CI", "visit p50 s", "visit p99 s", "pages/visit")

NOTE = ("visits/s = complete visits a second (a visitor's pages with their assets, think times, and a login for "
        "the logged-in share), median of valid runs; visit p50/p99 = a visit's duration from its start to its "
        "last page's last byte, think times included; the verdicts compare the page views these visits made "
        "(pages/s, page load time)")


def rate(s: stats.Summary) -> str:
    return format_rate(s.median)


def interval(s: stats.Summary) -> str:
    return "-" if s.ci_low is None or s.ci_high is None else f"{format_rate(s.ci_low)}–{format_rate(s.ci_high)}"


def rows(figures: Sequence[VisitFigures], workload: bool = True) -> list[tuple[str, ...]]:
    """A row per stack and question; `workload`: with the workload's column."""
    out: list[tuple[str, ...]] = []
    for v in figures:
        if v.per_s.median is None:
            continue
        row = (v.stack_label, v.question.workload, v.question.level(), str(v.per_s.n), rate(v.per_s),
               interval(v.per_s), format_num(v.p50_us.median, 1e-6, 2), format_num(v.p99_us.median, 1e-6, 2),
               format_num(v.pages.median, 1, 2))
        out.append(row if workload else row[:1] + row[2:])
    return out
