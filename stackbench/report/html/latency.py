"""Latency charts: each stack's percentile spectrum at the highest load asked (log x of
1 / (1 − p)), latency against throughput where a plan swept the load (the "hockey
stick", from analysis/curves.py), and the rates a capacity search probed against its
target with each stack's fitted capacity."""

from __future__ import annotations

from stackbench.analysis import spectrum
from stackbench.analysis.capacity_results import CapacityResult, StackCapacity
from stackbench.analysis.curves import Curve
from stackbench.analysis.figures import CellFigures
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure, legend_of
from stackbench.report.words.capacity import STOPPED, ci, interval
from stackbench.report.words.verdicts import question_name
from stackbench.units import format_rate, format_us

MARKS = {2.0: "50 %", 10.0: "90 %", 100.0: "99 %", 1000.0: "99.9 %", 10000.0: "99.99 %"}


def spectra(ctx: Context) -> list[Figure]:
    out = []
    for pick in ctx.analysis.picks:
        q, chosen = pick.question, pick.cells
        points = {label: spectrum.of(c.cell) for label, c in chosen.items()}
        points = {label: ps for label, ps in points.items() if ps}
        if not points:
            continue
        page = any(c.figures.page_mode for c in chosen.values())
        what = "page load time" if page else "latency"
        series = [svg.Series(ctx.palette.cls(label), tuple(
            svg.Point(p.x, p.us / 1000, f"{label}: p{p.percentile} = {format_us(p.us)} ms "
                                        f"(cell {_ref(chosen[label].figures)})") for p in ps))
            for label, ps in points.items()]
        top = max(p.x for ps in points.values() for p in ps)
        x = svg.logarithmic("percentile (log scale of 1 / (1 − p))", [2, top],
                            ticks=[t for t in MARKS if t <= top * 1.01], fmt=lambda v: MARKS.get(v, ""))
        y = svg.linear(f"{what} (ms)", [p.us / 1000 for ps in points.values() for p in ps])
        names = list(dict.fromkeys(p.percentile for ps in points.values() for p in ps))
        rows = [(f"p{n}",) + tuple(next((format_us(p.us) for p in points[label] if p.percentile == n), "-")
                                   for label in points) for n in names]
        rows.append(("cell",) + tuple(_ref(chosen[label].figures) for label in points))
        out.append(Figure(
            ctx.anchor("spectrum", q.workload, q.level(), q.keepalive, q.protocol, q.handshake),
            f"Latency percentiles — {question_name(q)}",
            f"Each stack's {what} at every percentile the engine reports, in one run (the one with the median "
            "throughput); further right is rarer. A flat line is a steady stack; a line that turns up shows how "
            "long the slowest requests wait." + (" Open loop: latency counts from the intended send time."
                                                 if q.rate is not None else ""),
            [svg.lines(series, x, y, f"latency percentiles, {question_name(q)}")],
            ("percentile",) + tuple(f"{label} (ms)" for label in points), rows,
            legend_of(ctx.palette, list(points))))
    return out


def against_throughput(ctx: Context) -> list[Figure]:
    """Where the run swept the load: p99 against the throughput reached, level by level."""
    by: dict[tuple[str, bool, str | None], list[Curve]] = {}
    for c in ctx.analysis.curves:
        by.setdefault((c.workload, c.keepalive, c.mode), []).append(c)  # over TLS, one chart per protocol mode
    out = []
    for (workload, ka, mode), cs in by.items():
        page = any(p.page_mode for c in cs for p in c.points)
        series, rows, xs, ys = [], [], [], []
        for c in cs:
            pts = []
            for p in c.points:
                rows.append((c.stack_label, p.question.level(), str(p.runs), format_rate(p.throughput),
                             format_us(p.p50_us), format_us(p.p99_us)))
                if p.throughput is None or p.p99_us is None:
                    continue
                pts.append(svg.Point(p.throughput, p.p99_us / 1000, f"{c.stack_label}, {p.question.level()}: "
                                     f"{format_rate(p.throughput)} {'pages' if page else 'req'}/s at p99 "
                                     f"{format_us(p.p99_us)} ms"))
                xs.append(p.throughput)
                ys.append(p.p99_us / 1000)
            series.append(svg.Series(ctx.palette.cls(c.stack_label), tuple(pts)))
        if not xs:
            continue
        where = f"{workload}, {mode or ('keep-alive ' + ('on' if ka else 'off'))}"
        out.append(Figure(
            ctx.anchor("hockey", workload, ka, mode or ""), f"Latency against throughput — {where}",
            "Each point is one load level, joined in the order the plan asked them. Where a line turns upward "
            "the stack is saturated: more load buys latency, not throughput.",
            [svg.lines(series, svg.linear(f"throughput ({'page views' if page else 'requests'}/s)", xs),
                       svg.linear("p99 latency (ms)", ys), f"latency against throughput, {where}")],
            ("stack", "load", "runs", "throughput /s", "p50 ms", "p99 ms"), rows,
            legend_of(ctx.palette, [c.stack_label for c in cs])))
    return out


def capacity(ctx: Context) -> list[Figure]:
    """Each search's probes: the rate asked against the SLO's first latency percentile,
    missed probes hollow, the target as a line; below, each stack's fitted chance that a
    probe meets the target against the rate, its probes at 1 (met) and 0 (missed), and
    its capacity — the edge, where the curve crosses one half."""
    found = ctx.analysis.capacity
    if not found:
        return []
    slo = found.slo
    pct, target = next(iter(slo.latency_us.items()))
    by_seq = {(c.run_id, c.seq): c for c in ctx.cells}
    by: dict[tuple[str, bool], list[CapacityResult]] = {}
    for r in found.results:
        by.setdefault((r.workload, r.keepalive), []).append(r)
    out = []
    for (workload, ka), rs in by.items():
        series, rows, xs, ys = [], [], [], [target / 1000]
        for r in rs:
            pts = []
            for p in r.curve:
                us = spectrum.percentile_us(by_seq[(p.figures.run_id, p.figures.seq)], pct)
                verdict = "met" if p.check.met else "missed: " + "; ".join(p.check.reasons)
                if p.check.generator_limited:
                    verdict += " (load engine saturated: not in the fit)"
                rows.append((r.stack_label, str(r.repetition + 1), format_rate(p.rate),
                             format_rate(p.figures.throughput), format_us(us), verdict))
                if us is None:
                    continue
                pts.append(svg.Point(p.rate, us / 1000, f"{r.stack_label} (search {r.repetition + 1}): "
                                     f"{format_rate(p.rate)}/s asked, p{pct} {format_us(us)} ms, {verdict}",
                                     hollow=not p.check.met))
                xs.append(p.rate)
                ys.append(us / 1000)
            series.append(svg.Series(ctx.palette.cls(r.stack_label), tuple(pts), joined=False))
        where = f"{workload}, keep-alive {'on' if ka else 'off'}"
        stacks = [s for s in found.stacks if (s.workload, s.keepalive) == (workload, ka)]
        summary = "; ".join(f"{s.stack_label}: {interval(s)}" + (f" over {s.searches} searches" if s.searches > 1
                                                                 else "")
                            + "".join(f" ({STOPPED.get(x, x)})" for x in dict.fromkeys(s.stopped) if x != "converged")
                            for s in stacks)
        # log latency: the target stays visible beside a probe far past the edge (p99 of seconds)
        panels = [svg.lines(series, svg.linear("rate asked (requests/s)", xs),
                            svg.logarithmic(f"p{pct} latency (ms, log scale)", ys),
                            f"capacity search, {where}",
                            refs=[(target / 1000, f"target p{pct} ≤ {format_us(target)} ms")])]
        edge_panel = _edge_panel(ctx, stacks, where)
        if edge_panel:
            panels.append(edge_panel)
            rows += [(s.stack_label, "all" if s.searches > 1 else "1", format_rate(s.edge.rate), "-", "-",
                      f"capacity (met half the time), 95 % CI {ci(s)}") for s in stacks if s.edge is not None]
        out.append(Figure(
            ctx.anchor("capacity", workload, ka), f"Capacity — {where}",
            f"Above: every rate a search probed, against the target {slo.describe()} (the line); filled: the probe "
            "met the target, hollow: it did not. Below: each stack's chance that a probe meets the target, fitted to "
            "all its probes (logistic in log rate, Firth's penalized maximum likelihood); its capacity is the rate "
            "where the curve crosses one half (the dot), with a 95 % profile-likelihood interval. Near the edge the "
            f"same rate can meet and miss: the fit weighs every probe, the bracket only the lucky ones. {summary}.",
            panels,
            ("stack", "search", "rate asked /s", "throughput /s", f"p{pct} ms", "target"), rows,
            legend_of(ctx.palette, [r.stack_label for r in rs])))
    return out


def _edge_panel(ctx: Context, stacks: list[StackCapacity], where: str) -> str | None:
    """The fitted curves around the edges, and the probes there at 1 (met) or 0 (missed)."""
    fitted = [(s, s.edge) for s in stacks if s.edge is not None]
    if not fitted:
        return None
    lo = min((e.low or e.rate) for _, e in fitted) / 1.15
    hi = max((e.high or e.rate) for _, e in fitted) * 1.15
    series = []
    for s, e in fitted:
        cls = ctx.palette.cls(s.stack_label)
        rates = [lo * (hi / lo) ** (i / 60) for i in range(61)]
        curve = tuple(svg.Point(r, e.p_met(r), f"{s.stack_label}: the fitted chance of meeting the target")
                      for r in rates)
        series.append(svg.Series(cls, curve, dotted=False))
        probes = tuple(svg.Point(r, 1.0 if met else 0.0, f"{s.stack_label}: {format_rate(r)}/s "
                                                         f"{'met' if met else 'missed'}", hollow=not met)
                       for r, met in e.data if lo <= r <= hi)
        series.append(svg.Series(cls, probes + (svg.Point(e.rate, 0.5, f"{s.stack_label}: capacity "
                                                                      f"{format_rate(e.rate)}/s (95 % CI {ci(s)})"),),
                                 joined=False))
    return svg.lines(series, svg.linear("rate asked (requests/s)", [lo, hi], zero=False),
                     svg.linear("chance a probe meets the target", [0.0, 1.0]), f"fitted capacity, {where}",
                     refs=[(0.5, "half the probes meet: the edge")])


def _ref(f: CellFigures) -> str:
    return f"{f.run_id}:{f.seq}"

