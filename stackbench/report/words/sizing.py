"""A sizing in words, for the terminal (text/sizing.py) and the HTML report: the answer
sentence first — each stack's smallest size, in cores like the one it was measured on
(its yardstick) and, asked, in the user's —, then each stack's capacity on each size as a
table cell, the hits a day a capacity carries and the CPU a page took (analysis/sizing.py
decides; this only says it). `stackbench yardstick` says its figure the same way."""

from __future__ import annotations

from stackbench.analysis.sizing import BORDER, Enough, SizeCapacity, SizingAnswer
from stackbench.model.environment import Yardstick
from stackbench.model.sizing import StoredSizing, VisitModel
from stackbench.report.words import tuning as tuning_words
from stackbench.planning.visits import share_words
from stackbench.units import MiB, format_rate

MARKS = {Enough.YES: "✓", Enough.NO: "✗", Enough.NOT_SHOWN: "?", Enough.UNKNOWN: "–"}
MARKS_LEGEND = "✓ enough for the target, ✗ not, ? the interval straddles it"


def count(n: float | None) -> str:
    """"1.7 M", "576 k", "950": a day's hits or visits, as a reader says them."""
    if n is None:
        return "-"
    if n >= 1e6:
        return f"{n / 1e6:.3g} M"
    if n >= 1e4:
        return f"{n / 1e3:.0f} k"
    return f"{n:,.0f}"


def visit_model(v: VisitModel) -> str:
    """"3 pages and 12 assets a visit, 5 s think time, 10% logged in: 15.3 hits a visit":
    what one visit is, as the plan's [visit] said it."""
    pages = f"{v.pages:.3g} page{'' if v.pages == 1 else 's'}"
    assets = f" and {v.assets} asset{'' if v.assets == 1 else 's'} a visit" if v.assets else " a visit (no assets)"
    return (f"{pages}{assets}, {v.think}, {share_words(v.logged_in)}: {v.hits:.3g} hit"
            f"{'' if v.hits == 1 else 's'} a visit")


def per_s(a: SizingAnswer) -> str:
    """The unit of the sizing's rates after a figure: " visits/s" in visits, "/s" (requests) else."""
    return " visits/s" if a.visit is not None else "/s"


def rate_unit(a: SizingAnswer) -> str:
    """"visits/s" or "requests/s": what the capacity table counts."""
    return "visits/s" if a.visit is not None else "requests/s"


def a_day(a: SizingAnswer, rate: float | None) -> str:
    """What a sustained peak `rate` carries a day: "694 k hits a day", or in visits "20 k
    visits a day (306 k hits)"."""
    if a.visit is not None:
        return f"{count(a.visits(rate))} visits a day ({count(a.hits(rate))} hits)"
    return f"{count(a.hits(rate))} hits a day"


def target(a: SizingAnswer, slo: str | None) -> str:
    """"180 k hits (page views) a day (peak 3× the day's mean: 6.25 requests/s at peak)
    within p99 ≤ 1 s", "20 requests/s at peak (576 k hits a day at a peak 3× …)", or "20 k
    visits a day (3 pages and 12 assets a visit, …: 306 k hits a day; peak 3× the day's
    mean: 0.694 visits/s at peak, 2.08 PHP requests/s)"."""
    if a.visit is not None and a.visits_per_day is not None:
        head = (f"{count(a.visits_per_day)} visits a day ({visit_model(a.visit)}; {count(a.hits(a.target_rate))} "
                f"hits a day; {per_day(a)}: {rate(a, a.target_rate)} visits/s at peak, "
                f"{rate(a, a.target_rate * a.visit.php)} PHP requests/s)")
    elif a.hits_per_day is not None:
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


def target_said(a: SizingAnswer) -> str:
    """The target's rate with its unit: "6.25/s", "0.694 visits/s"."""
    return (rate(a, a.target_rate) if a.visit is not None else target_rate(a.target_rate)) + per_s(a)


def interval(c: SizeCapacity, fine: bool = False) -> str:
    """"24.1 [21.9, 26.3]", "≥ 40.0" (every probe met), "< 5.0" (none did); `fine`: three
    significant figures (visits a second: "0.694", where one decimal would say "0.7")."""
    f = _fine if fine else format_rate
    if c.capacity is not None:
        lo = f(c.low) if c.low is not None else "…"
        hi = f(c.high) if c.high is not None else "…"
        return f"{f(c.capacity)} [{lo}, {hi}]"
    if c.low is not None and c.high is None:
        return f"≥ {f(c.low)}"
    if c.high is not None and c.low is None:
        return f"< {f(c.high)}"
    if c.low is not None and c.high is not None:
        return f"{f(c.low)}–{f(c.high)}"
    return "not measured"


def _fine(r: float | None) -> str:
    return "-" if r is None else f"{r:.3g}" if r < 100 else format_rate(r)


def rate(a: SizingAnswer, r: float | None) -> str:
    """A rate of the sizing's unit: visits a second to three figures, requests as tables say them."""
    return _fine(r) if a.visit is not None else format_rate(r)


def cell(c: SizeCapacity, fine: bool = False) -> str:
    return f"{interval(c, fine)} {MARKS[c.enough]}"


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
            fine = a.visit is not None
            line = (f"{s.stack} needs {c.size}{cost} — {f'{unit}, ' if unit else ''}capacity "
                    f"{interval(c, fine)}{per_s(a)}, {a_day(a, c.capacity or c.low)}")
            b = s.borderline
            if b is not None and b is not c:
                line += (f" — borderline: {b.size} carries {interval(b, fine)}{per_s(a)}, within "
                         f"{BORDER * 100:.0f} % of the target "
                         "(another run may find it enough)")
            elif b is not None:
                line += (f" — borderline: its interval clears the target by less than {BORDER * 100:.0f} % "
                         f"(another run may find it not enough)")
            out.append(line)
            continue
        shown = [c for c in s.sizes if c.enough is Enough.NOT_SHOWN]
        top = s.sizes[-1] if s.sizes else None
        if shown:
            out.append(f"{s.stack}: no size shown enough — on {shown[0].size} the interval "
                       f"{interval(shown[0], a.visit is not None)}{per_s(a)} straddles the target (more searches "
                       "would settle it)")
        elif top is not None:
            out.append(f"{s.stack}: none of these sizes is enough — the largest, {top.size}, carries "
                       f"{interval(top, a.visit is not None)}{per_s(a)}")
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
            f"more: not enough, its capacity below the most those runs served ({interval(c, a.visit is not None)} {rate_unit(a)}"
            + (f", at {a.visit.php:.3g} PHP requests a visit" if a.visit is not None else "") + ")"
            for s in a.stacks for c in s.sizes if c.saturated and c.tuning is not None]


def runs(s: StoredSizing) -> str:
    """"0.5 CPU, 512 MiB: run 4, 0.25 CPU, 256 MiB: tunings only": each size's run, in the
    order measured."""
    return ", ".join(f"{r.size}: {f'run {r.run_id}' if r.run_id is not None else 'tunings only'}" for r in s.runs)
