"""Charts of what the protocol costs: per workload and load level, each
stack's throughput and CPU per request side by side in every protocol and connection
mode the plan asked (clear HTTP/1.1 with and without keep-alive, HTTPS kept alive,
resumed, full, HTTP/2), a colour per stack, medians of the valid runs with their 95 % CI
(RunAnalysis.by_level, the same points as the charts against the load)."""

from __future__ import annotations

from typing import Any

from stackbench.analysis.levels import LevelPoint
from stackbench.report.html import svg
from stackbench.report.html.by_level import CPU, PAGES, THROUGHPUT, Metric, _row, _title
from stackbench.report.html.figure import Context, Figure, legend_of


def throughput(ctx: Context) -> list[Figure]:
    return _charts(ctx, "throughput", "Throughput by protocol", "Higher is better. Whiskers: the 95 % CI of the median "
                   "over the valid runs. \"h2 → http/1.1\" in the table: asked for HTTP/2, answered in HTTP/1.1.")


def cpu(ctx: Context) -> list[Figure]:
    return _charts(ctx, "cpu_per_request", "CPU per request by protocol",
                   "The stack's CPU per request in each protocol and connection mode; lower is better. A new "
                   "connection per request (resumed, full) adds the TCP connection and its TLS handshake.")


def _charts(ctx: Context, key: str, title: str, how: str) -> list[Figure]:
    points = ctx.analysis.by_level[key]
    if not any(p.question.tls for p in points):
        return []
    by: dict[tuple[Any, ...], list[LevelPoint]] = {}
    for p in points:
        q = p.question
        by.setdefault((q.workload, q.level()), []).append(p)
    out = []
    for (workload, level), ps in by.items():
        if len({p.question.mode() for p in ps}) < 2 or all(p.value.median is None for p in ps):
            continue
        page = any(p.page_mode for p in ps)
        m: Metric = (PAGES if page else THROUGHPUT) if key == "throughput" else CPU
        groups: dict[str, list[svg.Bar]] = {}
        values: list[float | None] = []
        for p in sorted(ps, key=lambda p: p.question.sort_key()):
            v = p.value
            if v.median is None:
                continue
            lo, hi = (None, None) if v.ci_low is None or v.ci_high is None else (v.ci_low * m.scale, v.ci_high * m.scale)
            groups.setdefault(_mode(p), []).append(
                svg.Bar(v.median * m.scale, ctx.palette.cls(p.stack_label), _title(p, m), m.text(v.median), lo, hi,
                        faint=p.all_runs))
            values += [v.median * m.scale, hi]
        axis = ("page views/s" if page else "requests/s") if key == "throughput" else "CPU per request (µs)"
        panel = svg.bars([svg.Group(k, tuple(bs)) for k, bs in groups.items()], svg.linear(axis, values),
                         f"{title}: {workload} at {level}")
        rows = [(_mode(p),) + _row(p, m) for p in sorted(ps, key=lambda p: p.question.sort_key())]
        labels = list(dict.fromkeys(p.stack_label for p in ps))
        out.append(Figure(ctx.anchor("protocol", key, workload, level), f"{title} — {workload} at {level}", how,
                          [panel], ("protocol", "stack", "load", "valid runs", "figure", "median", "95 % CI", "note"),
                          rows, legend_of(ctx.palette, labels)))
    return out


def _mode(p: LevelPoint) -> str:
    """"http/1.1 keep-alive", "http/1.1 no keep-alive", "https full handshakes", "h2 keep-alive"."""
    q = p.question
    return q.mode() if q.tls else f"http/1.1 {q.mode()}"
