"""One run per stack second by second (analysis/timeline.py): requests, p99, processes and
memory on one clock — where a prefork server spawns children under load, or a pool
shrinks on the way down of a ramp. A step of a walk (ramp, stages) is shown with its
whole walk."""

from __future__ import annotations

from typing import Callable

from stackbench.analysis import questions, timeline
from stackbench.analysis.questions import Question
from stackbench.analysis.timeline import Second
from stackbench.model.cell import StoredCell
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure, legend_of
from stackbench.report.words.verdicts import question_name
from stackbench.units import MiB, format_us

PANEL_HEIGHT = 190
# A run of fewer seconds draws lines of so few points that they show no trend: its chart
# is folded (page.py), its numbers still a click away.
FEW_SECONDS = 5

# (axis title, value of a second, its text)
PANELS: list[tuple[str, Callable[[Second], float | None], Callable[[float], str], bool]] = [
    ("requests in the second", lambda s: s.requests, lambda v: f"{v:,.0f}", True),
    ("p99 latency (ms)", lambda s: None if s.p99_us is None else s.p99_us / 1000, lambda v: f"{v:.2f}", False),
    ("processes", lambda s: s.procs, lambda v: f"{v:.0f}", True),
    ("memory (MiB)", lambda s: None if s.memory_bytes is None else s.memory_bytes / MiB, lambda v: f"{v:.1f}", False),
]


def seconds(ctx: Context) -> list[Figure]:
    out = []
    for pick in ctx.analysis.picks:
        q = pick.question
        runs: dict[str, list[tuple[StoredCell, Second]]] = {}
        walked = False
        for label, picked in pick.cells.items():
            c = picked.cell
            if c.step is not None:
                walk = timeline.walk_of(ctx.cells, c)
                runs[label] = timeline.walk_seconds(walk, {w.id: ctx.store.samples(w.id) for w in walk})
                walked = walked or len(walk) > 1
            else:
                runs[label] = [(c, s) for s in timeline.seconds(c, ctx.store.samples(c.id))]
        runs = {label: secs for label, secs in runs.items() if secs}
        if max((len(secs) for secs in runs.values()), default=0) < 2:
            continue  # a single second is no timeline
        fig = _figure(ctx, q, runs, walked)
        n = max(len(secs) for secs in runs.values())
        if n < FEW_SECONDS:
            fig.fold = f"each line has {n} points (one a second of a {n}-second run), too few to show a trend"
        out.append(fig)
    return out


def _figure(ctx: Context, q: Question, runs: dict[str, list[tuple[StoredCell, Second]]], walked: bool) -> Figure:
    panels = []
    xs = [s.t_s for secs in runs.values() for _, s in secs]
    for title, value, text, whole in PANELS:
        series, ys = [], []
        for label, secs in runs.items():
            pts = []
            for c, s in secs:
                v = value(s)
                if v is None:
                    continue
                pts.append(svg.Point(s.t_s, v, f"{label}, second {s.t_s} ({_level(c)}): "
                                               f"{text(v)} {title}"))
                ys.append(v)
            series.append(svg.Series(ctx.palette.cls(label), tuple(pts)))
        if ys:
            x = svg.linear("time since the measured run started (s)", xs, whole=True)
            panels.append(svg.lines(series, x, svg.linear(title, ys, whole=whole),
                                    f"{title}, second by second, {question_name(q)}", height=PANEL_HEIGHT))
    rows = [(label, _level(c), str(s.t_s), f"{s.requests:,}", str(s.errors), format_us(s.p50_us), format_us(s.p99_us),
             _v(s.procs), _v(s.threads), "-" if s.memory_bytes is None else f"{s.memory_bytes / MiB:.1f}",
             "-" if s.cpu_share is None else f"{s.cpu_share:.0%}")
            for label, secs in runs.items() for c, s in secs]
    what = ("the whole walk each stack made on one running server (a ramp or stages), level after level"
            if walked else "one run per stack at this load (the one with the median throughput)")
    return Figure(
        ctx.anchor("timeline", q.workload, q.level(), q.keepalive),
        f"Second by second — {question_name(q) if not walked else q.workload + ', the whole walk'}",
        f"The engine's view (requests, p99) beside the stack's (processes, memory), on one clock: {what}. A process "
        "count that climbs while latency is high is a server growing its pool under load.",
        panels, ("stack", "load", "s", "requests", "errors", "p50 ms", "p99 ms", "procs", "threads", "mem MiB",
                 "stack CPU"), rows, legend_of(ctx.palette, list(runs)),
        command="; ".join(f"stackbench timeline {c.run_id}:{c.seq}" + (" --walk" if walked else "")
                          for c in (secs[0][0] for secs in runs.values())))


def _level(c: StoredCell) -> str:
    return questions.of(c).level()


def _v(x: int | None) -> str:
    return "-" if x is None else str(x)
