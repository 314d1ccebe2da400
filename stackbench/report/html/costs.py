"""What serving cost beyond CPU and memory totals: memory per process kind (its own:
anon + shmem PSS, adding up to the cgroup's figure), system
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
from stackbench.report.words import cache as cache_words
from stackbench.report.words.verdicts import question_name
from stackbench.units import MiB

TOP_CALLS = 10  # side by side
TOP_DIFFERENCES = 8  # in each difference chart, then the total
# More system-call charts than this (a chart per workload and one per pair of stacks: 12
# for the default plan) fold under one chart of each stack's total per request.
DETAILS_SHOWN = 4


def pss(ctx: Context) -> list[Figure]:
    """Per question, each stack's processes by kind: what one more of each adds (its own
    memory: anon + shmem PSS), summed against the cgroup's accounting the Memory chart
    draws. The first question's figure is shown, the others folded (page.py)."""
    out: list[Figure] = []
    for pick in ctx.analysis.picks:
        fig = _pss(ctx, pick.question, pick.cells)
        if fig is not None:
            if out:
                fig.fold = "the other workloads' processes"
            out.append(fig)
    return out


def _pss(ctx: Context, q: Question, cells: dict[str, CellAnalysis]) -> Figure | None:
    groups, rows, values, sums = [], [], [], []
    split = True  # every process's PSS split into its parts (else: the total, said so)
    for label, c in cells.items():
        procs = ctx.store.processes(c.cell.id)
        kinds = metrics.per_process_pss(procs)
        ref = f"{c.figures.run_id}:{c.figures.seq}"
        split = split and all(g.own_total_bytes is not None for g in kinds.values())
        bars = []
        for comm, g in sorted(kinds.items()):
            own = g.own_mean_bytes
            mean = (own if own is not None else g.pss_mean_bytes) / MiB
            total = (g.own_total_bytes if g.own_total_bytes is not None else g.pss_total_bytes) / MiB
            text = f"{comm}: {g.count} × {mean:.1f} MiB"
            bars.append(svg.Bar(mean, ctx.palette.cls(label), f"{label}, {text} = {total:.1f} MiB (cell {ref})", text))
            rows.append((label, comm, str(g.count), f"{mean:.1f}", f"{total:.1f}", _mib(g.file_total_bytes, g.count),
                         _mib(g.rss_total_bytes, g.count), ref))
            values.append(mean)
        own, cgroup = metrics.own_memory_bytes(procs), metrics.cgroup_own_bytes(ctx.store.samples(c.cell.id))
        if own is not None and cgroup is not None:
            sums.append(f"{label}: its processes' own memory sums to {own / MiB:.1f} MiB; its cgroup's anon + shmem "
                        f"at the window's end, {cgroup / MiB:.1f} MiB")
        if bars:
            groups.append(svg.Group(label, tuple(bars)))
    if not groups:
        return None
    if split:
        how = ("Each kind of process right after the load, the mean per process of its own memory: its proportional "
               "share (PSS) of anonymous and shared memory (shmem: opcache's segment) — what one more Apache child or "
               "PHP-FPM worker adds. Summed over the stack, it is the cgroup's own accounting the Memory chart "
               "draws (the sums are below). Left out, as the cgroup leaves it out: each process's share of the "
               "code it maps (file-backed PSS, in the table), pages the whole machine shares.")
        axis = "own memory per process: anon + shmem PSS (MiB)"
    else:
        how = ("Each kind of process right after the load, the mean PSS per process — this run's store predates "
               "PSS's parts, so it includes each process's share of the code it maps (shared libraries, the "
               "binaries), which the cgroup's figure in the Memory chart leaves out: these sum to more than it.")
        axis = "PSS per process, code included (MiB)"
    return Figure(
        ctx.anchor("pss", q.workload, q.level(), q.keepalive), f"Memory per process — {question_name(q)}", how,
        [svg.bars(groups, svg.linear(axis, values), f"memory per process, {question_name(q)}")],
        ("stack", "process", "count", "own MiB each" if split else "PSS MiB each",
         "own MiB in all" if split else "PSS MiB in all", "code (file PSS) MiB each", "RSS MiB each", "cell"), rows,
        legend_of(ctx.palette, [g.label for g in groups]), marks=sums)


def _mib(total: int | None, count: int) -> str:
    return "-" if total is None else f"{total / count / MiB:.1f}"


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
    details = [f for f in out if f is not None]
    if len(details) <= DETAILS_SHOWN:
        return details
    for f in details:
        f.fold = "each workload's calls by name, and each pair of stacks' differences (the chart above sums them)"
    totals = _totals(ctx)
    return ([totals] if totals else []) + details


def _totals(ctx: Context) -> Figure | None:
    """Every call per request, each stack on each question: what the folded charts detail."""
    groups, rows, labels = [], [], []
    for pick in ctx.analysis.picks:
        bars = []
        for label, c in pick.cells.items():
            v = metrics.syscalls_per_request(c.cell)
            if v is None:
                continue
            ref = f"{c.figures.run_id}:{c.figures.seq}"
            bars.append(svg.Bar(v, ctx.palette.cls(label), f"{label}: {v:.1f} system calls per request (cell {ref})",
                                f"{v:.1f}"))
            rows.append((question_name(pick.question), label, f"{v:.1f}", ref))
            labels.append(label)
        if bars:
            groups.append(svg.Group(question_name(pick.question), tuple(bars)))
    if not groups:
        return None
    return Figure(
        ctx.anchor("syscalls-total"), "System calls per request — every call, each workload",
        "All the system calls the stack's processes make per request, counted by the kernel in a profile pass after "
        "the measured run (counting slows system calls, so never during it); lower is less work for the kernel.",
        [svg.bars(groups, svg.linear("system calls per request", [b.value for g in groups for b in g.bars]),
                  "system calls per request, every call")],
        ("question", "stack", "calls per request", "cell"), rows, legend_of(ctx.palette, labels))


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
    """Per workload and header counted, each stack's hit ratio by load, with the cache's
    own count beside it in the table (report/words/cache.py's rows)."""
    by: dict[tuple[Any, ...], list[HitRatio]] = {}
    for r in ctx.analysis.cache:
        by.setdefault((r.question.workload, r.question.keepalive, r.header, r.question.protocol,
                       r.question.handshake), []).append(r)
    out = []
    for (workload, ka, header, *_), rs in by.items():
        levels: dict[str, list[svg.Bar]] = {}
        shown = [r for r in rs if r.ratio.median is not None]  # no valid run counted: no row (cache_words.rows)
        for r in shown:
            v = r.ratio
            assert v.median is not None
            text = cache_words.share(v)
            levels.setdefault(r.question.level(), []).append(svg.Bar(
                v.median * 100, ctx.palette.cls(r.stack_label),
                f"{r.stack_label}, {r.question.level()}: {text} of answers were HIT by "
                f"{cache_words.header_of(r)} ({v.n} runs)", text,
                None if v.ci_low is None else v.ci_low * 100, None if v.ci_high is None else v.ci_high * 100))
        if not shown:
            continue
        where = f"{workload}, keep-alive {'on' if ka else 'off'}"
        out.append(Figure(
            ctx.anchor("cache", workload, ka, header), f"Cache hit ratio ({cache_words.header_of(shown[0])}) — {where}",
            "The share of answers the stack's cache served (HIT) rather than passing to PHP: where it is high, "
            "the figures measure the cache, not PHP. " + cache_words.NOTE[0].upper() + cache_words.NOTE[1:] + ".",
            [svg.bars([svg.Group(k, tuple(v)) for k, v in levels.items()], svg.linear("cache hits (%)", [0, 100]),
                      f"cache hit ratio, {where}")],
            tuple(h for h in cache_words.HEAD if h != "workload"), cache_words.rows(shown, workload=False),
            legend_of(ctx.palette, [r.stack_label for r in rs])))
    return out


def _signed(x: float) -> str:
    """+4.00, −1.04; a difference that rounds to nothing is +0.00, never -0.00."""
    return f"{round(x, 2) + 0.0:+.2f}"
