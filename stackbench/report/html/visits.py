"""Visits in the HTML report: each stack's complete visits a second at each logged-in share,
with a visit's duration and pages a visit in the table under it (report/words/visits.py's
rows; analysis/visits.py computes)."""

from __future__ import annotations

from typing import Any

from stackbench.analysis.visits import VisitFigures
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure, legend_of
from stackbench.report.words import visits as visit_words


def visits(ctx: Context) -> list[Figure]:
    """A figure per workload and connection mode: bars per load level and share."""
    by: dict[tuple[Any, ...], list[VisitFigures]] = {}
    for v in ctx.analysis.visits:
        by.setdefault((v.question.workload, v.question.keepalive, v.question.protocol, v.question.handshake),
                      []).append(v)
    out = []
    for (workload, ka, *_), vs in by.items():
        shown = [v for v in vs if v.per_s.median is not None]
        if not shown:
            continue
        levels: dict[str, list[svg.Bar]] = {}
        for v in shown:
            s = v.per_s
            assert s.median is not None
            text = visit_words.rate(s)
            levels.setdefault(v.question.level(), []).append(svg.Bar(
                s.median, ctx.palette.cls(v.stack_label),
                f"{v.stack_label}, {v.question.level()}: {text} visits/s ({s.n} runs)", text, s.ci_low, s.ci_high))
        where = f"{workload}, keep-alive {'on' if ka else 'off'}"
        values = [b.hi if b.hi is not None else b.value for bs in levels.values() for b in bs]
        out.append(Figure(
            ctx.anchor("visits", workload, ka), f"Visits a second — {where}",
            "Complete visits a second at each logged-in share; higher is better. Whiskers: the 95 % CI of the "
            "median over the valid runs. " + visit_words.NOTE[0].upper() + visit_words.NOTE[1:] + ".",
            [svg.bars([svg.Group(k, tuple(b)) for k, b in levels.items()], svg.linear("visits/s", values),
                      f"visits a second, {where}")],
            tuple(h for h in visit_words.HEAD if h != "workload"), visit_words.rows(shown, workload=False),
            legend_of(ctx.palette, [v.stack_label for v in vs])))
    return out
