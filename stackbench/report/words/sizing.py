"""A sizing in words, for the terminal (text/sizing.py) and the HTML report: the answer
sentence first — each stack's smallest size, in cores like the one it was measured on
(its yardstick) and, asked, in the user's —, then each stack's capacity on each size as a
table cell, the hits a day a capacity carries and the CPU a page took (analysis/sizing.py
decides; this only says it). `stackbench yardstick` says its figure the same way."""

from __future__ import annotations

from stackbench.analysis.sizing import BORDER, Enough, SizeCapacity, SizingAnswer
from stackbench.model.environment import Yardstick
from stackbench.model.sizing import StoredSizing
from stackbench.report.words import tuning as tuning_words
from stackbench.units import MiB, format_rate

MARKS = {Enough.YES: "✓", Enough.NO: "✗", Enough.NOT_SHOWN: "?", Enough.UNKNOWN: "–"}
MARKS_LEGEND = "✓ enough for the target, ✗ not, ? the interval straddles it"


def count(n: float | None) -> str:
    """"1.7 M", "576 k", "950": a day's hits, as a reader says them."""
    if n is None:
        return "-"
    if n >= 1e6:
        return f"{n / 1e6:.3g} M"
    if n >= 1e4:
        return f"{n / 1e3:.0f} k"
    return f"{n:,.0f}"


def target(a: SizingAnswer, slo: str | None) -> str:
    """"180 k hits (page views) a day (peak 3× the day's mean: 6.25 requests/s at peak)
    within p99 ≤ 1 s", or "20 requests/s at peak (576 k hits a day at a peak 3× …)"."""
    if a.hits_per_day is not None:
        head = (f"{count(float(a.hits_per_day))} hits (page views) a day ({per_day(a)}: "
                f"{target_rate(a.target_rate)} requests/s at peak)")
    else:
        head = (f"{target_rate(a.target_rate)} requests/s at peak ({count(a.hits(a.target_rate))} hits a day at a "
                f"peak {a.peak_factor:g}× the day's mean)")
    return head + (f" within {slo}" if slo else "")


def target_rate(r: float) -> str:
    """The target's rate, exact to the hundredth ("6.25", not format_rate's "6.2"): a
    capacity of 6.2 against it must read as short of it, not as equal."""
    return f"{r:,.2f}" if r < 100 and abs(round(r, 1) - r) > 1e-9 else format_rate(r)


def interval(c: SizeCapacity) -> str:
    """"24.1 [21.9, 26.3]", "≥ 40.0" (every probe met), "< 5.0" (none did)."""
    if c.capacity is not None:
        lo = format_rate(c.low) if c.low is not None else "…"
        hi = format_rate(c.high) if c.high is not None else "…"
        return f"{format_rate(c.capacity)} [{lo}, {hi}]"
    if c.low is not None and c.high is None:
        return f"≥ {format_rate(c.low)}"
    if c.high is not None and c.low is None:
        return f"< {format_rate(c.high)}"
    if c.low is not None and c.high is not None:
        return f"{format_rate(c.low)}–{format_rate(c.high)}"
    return "not measured"


def cell(c: SizeCapacity) -> str:
    return f"{interval(c)} {MARKS[c.enough]}"


def price(p: float | None) -> str:
    """A size's price a month as the plan gave it, in US dollars ("$6", "$12.5": the plan's
    `price`, docs/reference/plan-keys.md), "-" when it gave none."""
    return f"${p:g}" if p is not None else "-"


def per_day(a: SizingAnswer) -> str:
    """"peak 3× the day's mean": how a rate becomes hits a day."""
    return f"peak {a.peak_factor:g}× the day's mean"


def cores(n: float) -> str:
    """"0.5 of a core", "1 core", "2 cores"."""
    return f"{n:.2g} of a core" if n < 1 else f"{n:.3g} core{'s' if n != 1 else ''}"


def core_unit(a: SizingAnswer, c: SizeCapacity) -> str:
    """A size's CPUs in a unit that travels: "0.5 of a core like this one (yardstick: 680)",
    and rescaled when asked: "…; 0.38 of a core of yardstick 900" ("" without a yardstick)."""
    if c.cpus is None or a.yardstick is None:
        return ""
    here = f"{cores(c.cpus)} like this one (yardstick: {a.yardstick.score:.0f})"
    there = a.on_core(c.cpus)
    return here + (f"; {cores(there)} of yardstick {a.core:.0f}" if there is not None and a.core else "")


def yardstick_means(y: Yardstick) -> str:
    """What a yardstick figure is, with its spread."""
    php = f" on PHP {y.php}" if y.php else ""
    return (f"thousands of units of a fixed PHP workload a second{php}, bigger = faster core: the median of "
            f"{y.repetitions} repetitions (slowest {y.low:.0f}, fastest {y.high:.0f})")


def core_line(a: SizingAnswer) -> str:
    """The core the sizes were measured on, and the rescaling when asked."""
    if a.yardstick is None:
        return ("sizes in CPUs of this machine's core: its yardstick was not measured (no PHP there, or a sizing "
                "from before it was)")
    line = f"sizes in cores like the one measured on: yardstick {a.yardstick.describe()}"
    if a.core:
        line += (f"; rescaled to a core of yardstick {a.core:.0f}: CPUs × {a.yardstick.score:.0f} / {a.core:.0f} "
                 "(linear in a core's speed, which holds for CPU-bound PHP: docs/methods/sizing.md)")
    return line


def page_cpu(a: SizingAnswer) -> str | None:
    """"CPU a page …: nginx + FPM 45 ms (1 CPU); …", each stack on its least throttled size."""
    said = []
    for s in a.stacks:
        c = s.page_cpu
        if c is not None and c.cpu_us_per_request is not None:
            said.append(f"{s.stack} {ms(c.cpu_us_per_request)} ({c.size})")
    if not said:
        return None
    return ("the workload's own CPU time a request near the capacity, the stack and its database together, on the "
            "least throttled size: " + "; ".join(said))


def ms(us: float | None) -> str:
    """A request's CPU time: "45 ms", "-" when not read."""
    return f"{us / 1000:.3g} ms" if us is not None else "-"


def mib(n: int | None) -> str:
    return f"{n / MiB:.0f} MiB" if n else "-"


def needs(a: SizingAnswer) -> list[str]:
    """Per stack: "nginx + FPM needs 0.5 CPU, 512 MiB — 0.5 of a core like this one
    (yardstick: 680), capacity 24.1 [21.9, 26.3]/s, 694 k hits a day"; or
    what the largest size carried when none was enough."""
    out = []
    for s in a.stacks:
        if s.smallest is not None:
            c = s.smallest
            cost = f", {price(c.price)} a month" if c.price is not None else ""
            unit = core_unit(a, c)
            line = (f"{s.stack} needs {c.size}{cost} — {f'{unit}, ' if unit else ''}capacity {interval(c)}/s, "
                    f"{count(a.hits(c.capacity or c.low))} hits a day")
            b = s.borderline
            if b is not None and b is not c:
                line += (f" — borderline: {b.size} carries {interval(b)}/s, within {BORDER * 100:.0f} % of the target "
                         "(another run may find it enough)")
            elif b is not None:
                line += (f" — borderline: its interval clears the target by less than {BORDER * 100:.0f} % "
                         f"(another run may find it not enough)")
            out.append(line)
            continue
        shown = [c for c in s.sizes if c.enough is Enough.NOT_SHOWN]
        top = s.sizes[-1] if s.sizes else None
        if shown:
            out.append(f"{s.stack}: no size shown enough — on {shown[0].size} the interval {interval(shown[0])}/s "
                       "straddles the target (more searches would settle it)")
        elif top is not None:
            out.append(f"{s.stack}: none of these sizes is enough — the largest, {top.size}, carries "
                       f"{interval(top)}/s")
        else:
            out.append(f"{s.stack}: not measured")
    return out


def sentence(a: SizingAnswer, slo: str | None) -> str:
    """The answer first: "For 20 requests/s … : nginx + FPM needs …; Apache mod_php …"."""
    return f"For {target(a, slo)}: " + "; ".join(needs(a)) + "."


def tuned(a: SizingAnswer) -> list[str]:
    """Each stack's pool on each size, as its tuning for the target chose it: the tunings on
    an ordinary workload in one line, each one on a mix with slow requests in its own, with
    what one slow request costs (report/words/tuning.py says it as under a run's answer)."""
    plain = [f"{c.size}: {c.label}" for s in a.stacks for c in s.sizes
             if c.label != c.stack and (c.tuning is None or c.tuning.slow_cost is None)]
    costs = [c.tuning for s in a.stacks for c in s.sizes if c.tuning is not None and c.tuning.slow_cost is not None]
    # One worker ruled out alike on every size (the target's rate, the mix's holds and the SLO
    # are the sizing's): said once, each size then says its chosen pool
    once = {tuning_words.one_worker(t) for t in costs}
    said = len(costs) > 1 and None not in once and len(once) == 1 and all(tuning_words.with_chosen(t) for t in costs)
    first = [f"on every size, {next(iter(once))}"] if said else []
    slow = [line for s in a.stacks for c in s.sizes if c.tuning is not None
            if (line := tuning_words.tuned_line(f"{c.size}: {c.label}", c.tuning, said)) is not None]
    return (["each stack tuned for the target on each size: " + "; ".join(plain)] if plain else []) + first + slow


def skipped(a: SizingAnswer) -> list[str]:
    """Each stack a size's search was skipped for (`until_enough`: its tuning at the target
    found no pool meeting the SLO with the CPU busy), and what bounds its capacity."""
    return [f"{c.size}: {c.label} not searched — its tuning at the target (tuning {c.tuning.id}, on "
            f"{c.tuning.workload}) found no pool meeting the SLO with the CPU busy, where no larger pool serves "
            f"more: not enough, its capacity below the most those runs served ({interval(c)} requests/s)"
            for s in a.stacks for c in s.sizes if c.saturated and c.tuning is not None]


def runs(s: StoredSizing) -> str:
    """"0.5 CPU, 512 MiB: run 4, 0.25 CPU, 256 MiB: tunings only": each size's run, in the
    order measured."""
    return ", ".join(f"{r.size}: {f'run {r.run_id}' if r.run_id is not None else 'tunings only'}" for r in s.runs)
