"""Charts of a figure against the load level — throughput, memory, CPU per request, page
load time — one per workload and keep-alive mode (and closed / open loop), a colour per
stack: medians over the valid runs with their 95 % CI as whiskers (the run's analysis:
RunAnalysis.by_level, analysis/levels.py). A plan that asked one level gets bars, one per
stack, instead of a line — its workloads as panels of one figure, each on its own axis."""

from __future__ import annotations

from dataclasses import dataclass
from html import escape
from typing import Any, Callable, Sequence

from stackbench.analysis import verdicts
from stackbench.analysis.levels import LevelPoint
from stackbench.planning import described
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure, legend_of
from stackbench.units import MiB, format_num, format_rate


@dataclass(frozen=True)
class Metric:
    key: str  # analysis.verdicts.METRICS key
    name: str  # in a point's title and the table's head: "req/s", "p99 ms"
    scale: float = 1.0
    digits: int | None = None  # None: a rate (units.format_rate)

    def text(self, v: float | None) -> str:
        return format_rate(v) if self.digits is None else format_num(v, self.scale, self.digits)


THROUGHPUT = Metric("throughput", "req/s")
PAGES = Metric("throughput", "pages/s")
MEMORY = Metric("memory", "MiB", 1 / MiB, 1)
CPU = Metric("cpu_per_request", "µs/req", 1, 0)
PAGE_P50 = Metric("latency_p50", "p50 ms", 1 / 1000, 2)
PAGE_P99 = Metric("latency_p99", "p99 ms", 1 / 1000, 2)


def throughput(ctx: Context) -> list[Figure]:
    def metric(group: list[LevelPoint]) -> Metric:
        return PAGES if any(p.page_mode for p in group) else THROUGHPUT
    return _per_group(ctx, "throughput", _groups(ctx.analysis.by_level[verdicts.THROUGHPUT.key]), metric,
                      "Throughput", lambda m: "page views/s" if m is PAGES else "requests/s",
                      "Higher is better. Whiskers: the 95 % CI of the median over the valid runs.")


# What the memory figures are, said where they are drawn (docs/methods.md, "Memory").
MEMORY_HOW = ("The stack's cgroup's own accounting: the highest sampled anonymous + shared memory (shmem: opcache's "
              "segment) charged to the stack over the measured window — every process together, page cache and the "
              "code of shared binaries left out (their pages are the machine's, counted once for all). Lower is "
              "better.")


def memory(ctx: Context) -> list[Figure]:
    return _per_group(ctx, "memory", _groups(ctx.analysis.by_level[verdicts.MEMORY.key]), lambda g: MEMORY, "Memory",
                      lambda m: "peak memory, the cgroup's (MiB)", MEMORY_HOW)


def cpu(ctx: Context) -> list[Figure]:
    return _per_group(ctx, "cpu", _groups(ctx.analysis.by_level[verdicts.CPU_PER_REQUEST.key]), lambda g: CPU,
                      "CPU per request", lambda m: "CPU per request (µs)",
                      "CPU time of every process of the stack (user + system) over the measured window, divided by "
                      "the requests completed; lower is better.")


def _per_group(ctx: Context, kind: str, groups: list[list[LevelPoint]], metric: Callable[[list[LevelPoint]], Metric],
               title: str, axis_title: Callable[[Metric], str], how: str) -> list[Figure]:
    """A figure per workload and mode asked at several levels; the groups asked at one
    level each together, one panel each, in one figure (a chart of three bars apiece)."""
    swept = [g for g in groups if _levels(g) > 1]
    single = [g for g in groups if _levels(g) == 1]
    out = [_figure(ctx, kind, g, [(metric(g), g)], title, axis_title(metric(g)), how) for g in swept]
    if len(single) == 1:
        out.append(_figure(ctx, kind, single[0], [(metric(single[0]), single[0])], title,
                           axis_title(metric(single[0])), how))
    elif single:
        out.append(_panels(ctx, kind, single, metric, title, axis_title, how))
    return out


def _levels(group: list[LevelPoint]) -> int:
    return len({(p.question.rate, p.question.concurrency) for p in group})


def _panels(ctx: Context, kind: str, groups: list[list[LevelPoint]], metric: Callable[[list[LevelPoint]], Metric],
            title: str, axis_title: Callable[[Metric], str], how: str) -> Figure:
    """Several one-level groups: a panel each (its own axis: a static file's throughput
    would flatten a PHP page's), named with its workload and what that is."""
    panels, rows, labels = [], [], []
    for g in groups:
        q, m = g[0].question, metric(g)
        where = _where(q)
        what = described.workload(q.workload, ctx.run.plan)
        panels.append(f'<h5 class="panel">{escape(where)}' + (f'<span class="what"> — {escape(what)}</span>' if what
                                                               else "") + "</h5>"
                      + _bars(ctx, [(m, g)], axis_title(m), f"{title}: {where}"))
        rows += [_row(p, m, workload=True) for p in g]
        labels += [p.stack_label for p in g]
    levels = list(dict.fromkeys(g[0].question.level() for g in groups))
    head = ("stack", "load", "valid runs", "figure", "median", "95 % CI", "note")
    marks = (["pale bar: no run at that load was valid (the table's note says why); the figure is the median of "
              "every run, shown but never in a verdict"] if any(p.all_runs for g in groups for p in g) else [])
    return Figure(ctx.anchor(kind, "each-workload"),
                  f"{title} at {levels[0] if len(levels) == 1 else 'the level asked'} — each workload",
                  how, panels, head, rows, legend_of(ctx.palette, labels), marks)


def page_load(ctx: Context) -> list[Figure]:
    """Page mode only: the time from a page's request to the last byte of its last asset."""
    p99 = [g for g in _groups(ctx.analysis.by_level[verdicts.LATENCY_P99.key]) if any(p.page_mode for p in g)]
    p50 = {_key(g[0]): g for g in _groups(ctx.analysis.by_level[verdicts.LATENCY_P50.key])}
    return [_figure(ctx, "page-load", g, [(PAGE_P99, g), (PAGE_P50, p50.get(_key(g[0]), []))], "Page load time",
                    "page load time (ms)", "From the page's request to the last byte of its last asset, fetched "
                    "like a browser; lower is better. Solid: p99, dashed: p50.")
            for g in p99]


def _key(p: LevelPoint) -> tuple[Any, ...]:
    return (p.question.workload, p.question.keepalive, p.question.protocol, p.question.handshake,
            p.question.rate is not None, p.question.logged_in)


def _where(q: Any) -> str:
    """"wordpress-home, keep-alive", and a visit's share: ", 50% logged in"."""
    return f"{q.workload}, {q.mode()}" + (f", {q.logged_in * 100:g}% logged in" if q.logged_in is not None else "")


def _groups(points: list[LevelPoint]) -> list[list[LevelPoint]]:
    """By workload, keep-alive mode and loop (closed / open); groups with no value left out."""
    by: dict[tuple[Any, ...], list[LevelPoint]] = {}
    for p in points:
        by.setdefault(_key(p), []).append(p)
    return [g for g in by.values() if any(p.value.median is not None for p in g)]


def _figure(ctx: Context, kind: str, group: list[LevelPoint], metrics: list[tuple[Metric, list[LevelPoint]]],
            title: str, axis_title: str, how: str) -> Figure:
    q = group[0].question
    open_loop = q.rate is not None
    where = _where(q)
    labels = [p.stack_label for p in group]
    rows, marks = [], []
    multi = len({(p.question.rate, p.question.concurrency) for p in group}) > 1
    for m, ps in metrics:
        for p in ps:
            rows.append(_row(p, m))
    if any(p.all_runs for _, ps in metrics for p in ps):
        marks.append("hollow point or pale bar: no run at that load was valid (the table's note says why); the "
                     "figure is the median of every run, shown but never in a verdict")
    if multi:
        panel = _lines(ctx, metrics, axis_title, open_loop, f"{title}: {where}")
        if any(p.question.leg == "down" for p in group):
            marks.append("dashed: the way down of an up-then-down ramp")
        title_level = "against the rate asked" if open_loop else "against concurrency"
    else:
        panel = _bars(ctx, metrics, axis_title, f"{title}: {where}")
        title_level = f"at {q.level()}"
    head = ("stack", "load", "valid runs", "figure", "median", "95 % CI", "note")
    return Figure(ctx.anchor(kind, q.workload, q.keepalive, q.protocol, q.handshake, "rate" if open_loop else "c"),
                  f"{title} {title_level} — {where}", how, [panel], head, rows, legend_of(ctx.palette, labels), marks)


def _row(p: LevelPoint, m: Metric, workload: bool = False) -> tuple[str, ...]:
    """`workload`: the load names it too (a figure of several workloads' panels)."""
    v = p.value
    ci = "-" if v.ci_low is None else f"{m.text(v.ci_low)}–{m.text(v.ci_high)}"
    note = ""
    if p.all_runs:
        note = f"no valid run ({', '.join(p.reasons)}): median of all {p.runs} runs"
    elif p.reasons:
        note = f"left out: {', '.join(p.reasons)}"
    load = f"{p.question.workload} {p.question.level()}" if workload else p.question.level()
    return (p.stack_label, load, f"{p.valid}/{p.runs}", m.name, m.text(v.median), ci, note)


def _title(p: LevelPoint, m: Metric) -> str:
    """A point's hover text: the row of the table, in words."""
    _, level, valid, name, median, ci, note = _row(p, m)
    return (f"{p.stack_label}, {level}: {median} {name}" + (f" (95 % CI {ci})" if ci != "-" else "")
            + f", {valid} runs valid" + (f"; {note}" if note else ""))


def _lines(ctx: Context, metrics: Sequence[tuple[Metric, list[LevelPoint]]], axis_title: str, open_loop: bool,
           label: str) -> str:
    series, xs, ys = [], [], []
    for i, (m, ps) in enumerate(metrics):
        by: dict[tuple[str, str | None], list[svg.Point]] = {}
        for p in sorted(ps, key=lambda p: p.question.rate or p.question.concurrency):
            if p.value.median is None:
                continue
            rate = p.question.rate
            x = rate if open_loop and rate is not None else p.question.concurrency
            v = p.value
            lo, hi = (None, None) if v.ci_low is None or v.ci_high is None else (v.ci_low * m.scale, v.ci_high * m.scale)
            by.setdefault((p.stack_label, p.question.leg), []).append(
                svg.Point(x, p.value.median * m.scale, _title(p, m), lo, hi, hollow=p.all_runs))
            xs.append(x)
            ys += [p.value.median * m.scale, hi]
        series += [svg.Series(ctx.palette.cls(label_), tuple(pts), dashed=(leg == "down" or i > 0))
                   for (label_, leg), pts in by.items()]
    axis = svg.levels("rate asked (requests/s)" if open_loop else "concurrency (clients)", xs)
    return svg.lines(series, axis, svg.linear(axis_title, ys), label)


def _bars(ctx: Context, metrics: Sequence[tuple[Metric, list[LevelPoint]]], axis_title: str, label: str) -> str:
    groups: dict[str, list[svg.Bar]] = {}
    values = []
    for m, ps in metrics:
        for p in ps:
            v = p.value
            if v.median is None:
                continue
            lo, hi = (None, None) if v.ci_low is None or v.ci_high is None else (v.ci_low * m.scale, v.ci_high * m.scale)
            text = m.text(v.median) + (f" {m.name}" if len(metrics) > 1 else "")
            groups.setdefault(p.stack_label, []).append(
                svg.Bar(v.median * m.scale, ctx.palette.cls(p.stack_label), _title(p, m), text, lo, hi,
                        faint=p.all_runs))
            values += [v.median * m.scale, hi]
    return svg.bars([svg.Group(k, tuple(bs)) for k, bs in groups.items()], svg.linear(axis_title, values), label)
