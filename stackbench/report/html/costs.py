"""What serving cost beyond CPU and memory totals: memory per process kind (PSS), system
calls per request side by side and their differences between stacks, and how often a
cache answered. One run per stack at the highest load asked (analysis/picks.py)."""

from __future__ import annotations

from typing import Any

from stackbench.analysis import metrics, syscall_profiles
from stackbench.analysis.cache import HitRatio
from stackbench.analysis.cells import CellAnalysis
from stackbench.analysis.questions import Question
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure, legend_of
from stackbench.report.words.verdicts import question_name
from stackbench.units import MiB

TOP_CALLS = 10  # side by side
TOP_DIFFERENCES = 8  # in each difference chart, then the total


def pss(ctx: Context) -> list[Figure]:
    out = []
    for pick in ctx.analysis.picks:
        q = pick.question
        groups, rows, values = [], [], []
        for label, c in pick.cells.items():
            kinds = metrics.per_process_pss(ctx.store.processes(c.cell.id))
            ref = f"{c.figures.run_id}:{c.figures.seq}"
            bars = []
            for comm, g in sorted(kinds.items()):
                mean, total = g.pss_mean_bytes / MiB, g.pss_total_bytes / MiB
                text = f"{comm}: {g.count} × {mean:.1f} MiB"
                bars.append(svg.Bar(mean, ctx.palette.cls(label), f"{label}, {text} = {total:.1f} MiB (cell {ref})",
                                    text))
                rows.append((label, comm, str(g.count), f"{mean:.1f}", f"{total:.1f}", ref))
                values.append(mean)
            if bars:
                groups.append(svg.Group(label, tuple(bars)))
        if not groups:
            continue
        out.append(Figure(
            ctx.anchor("pss", q.workload, q.level(), q.keepalive), f"Memory per process — {question_name(q)}",
            "Proportional set size (PSS) of each kind of process right after the load, the mean per process: "
            "what one more Apache child or PHP-FPM worker costs. PSS shares each shared page among the processes "
            "that map it, so the sums add up (summed RSS counts shared pages once per process).",
            [svg.bars(groups, svg.linear("PSS per process (MiB)", values), f"memory per process, {question_name(q)}")],
            ("stack", "process", "count", "mean PSS MiB", "total PSS MiB", "cell"), rows,
            legend_of(ctx.palette, [g.label for g in groups])))
    return out


def syscalls(ctx: Context) -> list[Figure]:
    out: list[Figure | None] = []  # a difference with nothing to show is None
    for pick in ctx.analysis.picks:
        q, chosen = pick.question, pick.cells
        calls = {label: ctx.store.syscalls(c.cell.id) for label, c in chosen.items()}
        profiles = {label: syscall_profiles.per_request(chosen[label].cell, calls[label]) for label in chosen}
        profiles = {label: p for label, p in profiles.items() if p}
        if not profiles:
            continue
        names = syscall_profiles.top_names(profiles, TOP_CALLS)
        groups = [svg.Group(n, tuple(svg.Bar(p.get(n, 0.0), ctx.palette.cls(label),
                                             f"{label}: {p.get(n, 0.0):.2f} {n} per request", f"{p.get(n, 0.0):.2f}")
                                     for label, p in profiles.items())) for n in names]
        rows = [(n,) + tuple(f"{p.get(n, 0.0):.2f}" for p in profiles.values()) for n in names]
        out.append(Figure(
            ctx.anchor("syscalls", q.workload, q.level(), q.keepalive),
            f"System calls per request — {question_name(q)}",
            f"The {len(names)} calls the stacks make most, per request, counted by the kernel in a profile pass "
            "after the measured run (counting slows system calls, so never during it).",
            [svg.bars(groups, svg.linear("system calls per request", [b.value for g in groups for b in g.bars]),
                      f"system calls per request, {question_name(q)}")],
            ("call",) + tuple(profiles), rows, legend_of(ctx.palette, list(profiles))))
        stacks = [(label, chosen[label].cell.stack_id) for label in profiles]
        for a, b in syscall_profiles.pairs(stacks, ctx.baseline):
            out.append(_difference(ctx, q, chosen[a], calls[a], chosen[b], calls[b]))
    return [f for f in out if f is not None]


def _difference(ctx: Context, q: Question, a: CellAnalysis, calls_a: dict[str, int], b: CellAnalysis,
                calls_b: dict[str, int]) -> Figure | None:
    diff = metrics.syscall_differences(a.cell, calls_a, b.cell, calls_b, TOP_DIFFERENCES)
    if not diff:
        return None
    la, lb = a.figures.stack_label, b.figures.stack_label
    groups = [svg.Group(n, (svg.Bar(vb - va, ctx.palette.cls(lb), f"{lb} − {la}: {_signed(vb - va)} {n} per request "
                                    f"({la} {va:.2f}, {lb} {vb:.2f})", _signed(vb - va)),)) for n, va, vb in diff]
    rows = [(n, f"{va:.2f}", f"{vb:.2f}", _signed(vb - va)) for n, va, vb in diff]
    return Figure(
        ctx.anchor("syscalls-diff", q.workload, q.level(), q.keepalive, la, lb),
        f"System calls: {lb} against {la} — {question_name(q)}",
        f"Per request, the calls whose counts differ most between the two stacks, then the total: to the right, "
        f"{lb} makes more.",
        # at least ±1 call on the axis: a rounding-sized difference must look like one
        [svg.bars(groups, svg.linear(f"more (+) or fewer (−) calls per request than {la}",
                                     [g.bars[0].value for g in groups] + [-1, 1]),
                  f"system calls per request, {lb} minus {la}, {question_name(q)}")],
        ("call", la, lb, f"{lb} − {la}"), rows, legend_of(ctx.palette, [lb]),
        command=f"stackbench explain {a.figures.run_id}:{a.figures.seq} {b.figures.run_id}:{b.figures.seq}")


def cache(ctx: Context) -> list[Figure]:
    by: dict[tuple[Any, ...], list[HitRatio]] = {}
    for r in ctx.analysis.cache:
        by.setdefault((r.question.workload, r.question.keepalive, r.header, r.question.protocol,
                       r.question.handshake), []).append(r)
    out = []
    for (workload, ka, header, *_), rs in by.items():
        levels: dict[str, list[svg.Bar]] = {}
        rows = []
        for r in rs:
            v = r.ratio
            if v.median is None:  # no valid run counted its answers (cache.by_question keeps such rows out)
                continue
            text = f"{v.median:.0%}"
            ci = "-" if v.ci_low is None else f"{v.ci_low:.0%}–{v.ci_high:.0%}"
            rows.append((r.stack_label, r.question.level(), str(v.n), text, ci))
            levels.setdefault(r.question.level(), []).append(svg.Bar(
                v.median * 100, ctx.palette.cls(r.stack_label),
                f"{r.stack_label}, {r.question.level()}: {text} of answers were {header}: HIT ({v.n} runs)", text,
                None if v.ci_low is None else v.ci_low * 100, None if v.ci_high is None else v.ci_high * 100))
        where = f"{workload}, keep-alive {'on' if ka else 'off'}"
        out.append(Figure(
            ctx.anchor("cache", workload, ka, header), f"Cache hit ratio ({header}) — {where}",
            "The share of answers the stack's cache served (HIT) rather than passing to PHP: where it is high, "
            "the figures measure the cache, not PHP.",
            [svg.bars([svg.Group(k, tuple(v)) for k, v in levels.items()], svg.linear("cache hits (%)", [0, 100]),
                      f"cache hit ratio, {where}")],
            ("stack", "load", "valid runs", "hit ratio", "95 % CI"), rows,
            legend_of(ctx.palette, [r.stack_label for r in rs])))
    return out


def _signed(x: float) -> str:
    """+4.00, −1.04; a difference that rounds to nothing is +0.00, never -0.00."""
    return f"{round(x, 2) + 0.0:+.2f}"
