"""A sizing in words, for the terminal (text/sizing.py) and the HTML report: the answer
sentence first, then each stack's capacity on each size as a table cell, and the visits a
day a capacity carries (analysis/sizing.py decides; this only says it)."""

from __future__ import annotations

from stackbench.analysis.sizing import BORDER, Enough, SizeCapacity, SizingAnswer
from stackbench.units import MiB, format_rate

MARKS = {Enough.YES: "✓", Enough.NO: "✗", Enough.NOT_SHOWN: "?", Enough.UNKNOWN: "–"}
MARKS_LEGEND = "✓ enough for the target, ✗ not, ? the interval straddles it"


def count(n: float | None) -> str:
    """"1.7 M", "576 k", "950": a day's visits or requests, as a reader says them."""
    if n is None:
        return "-"
    if n >= 1e6:
        return f"{n / 1e6:.3g} M"
    if n >= 1e4:
        return f"{n / 1e3:.0f} k"
    return f"{n:,.0f}"


def target(a: SizingAnswer, slo: str | None) -> str:
    """"20 requests/s at peak (1.73 M requests a day at that rate) within p99 ≤ 1 s"."""
    if a.visits_per_day is not None:
        head = (f"{count(float(a.visits_per_day))} visits a day ({per_visit(a)}: "
                f"{format_rate(a.target_rate)} requests/s at peak)")
    else:
        head = (f"{format_rate(a.target_rate)} requests/s at peak ({count(a.visits(a.target_rate))} visits a day at a "
                f"peak {a.peak_factor:g}× the day's mean)")
    return head + (f" within {slo}" if slo else "")


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


def per_visit(a: SizingAnswer) -> str:
    """"peak 3× the day's mean, 1 request a visit": how a rate becomes visits a day."""
    return (f"peak {a.peak_factor:g}× the day's mean, {a.requests_per_visit:g} "
            f"request{'s' if a.requests_per_visit != 1 else ''} a visit")


def mib(n: int | None) -> str:
    return f"{n / MiB:.0f} MiB" if n else "-"


def needs(a: SizingAnswer) -> list[str]:
    """Per stack: "nginx + FPM needs 0.5 CPU, 512 MiB (capacity 24.1/s [21.9, 26.3])"; or
    what the largest size carried when none was enough."""
    out = []
    for s in a.stacks:
        if s.smallest is not None:
            c = s.smallest
            cost = f", {price(c.price)} a month" if c.price is not None else ""
            line = (f"{s.stack} needs {c.size}{cost} (capacity {interval(c)}/s, "
                    f"{count(a.visits(c.capacity or c.low))} visits a day)")
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
