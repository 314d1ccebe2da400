"""Each stack's time to steady, in words — the rows of the terminal's and the HTML
report's table (analysis/warmup.py computes; this only formats)."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis.warmup import StackSteady

HEAD = ("stack", "time to steady", "from its fresh starts")


def number(s: float) -> str:
    return f"{s:.1f}" if s < 10 else f"{s:.0f}"


def seconds(s: float | None) -> str:
    return "–" if s is None else f"{number(s)} s"


def title(rows: Sequence[StackSteady]) -> str:
    """What the table shows and how steady was judged."""
    tolerances = {r.tolerance for r in rows if r.tolerance is not None}
    caps = {r.cap_s for r in rows if r.cap_s is not None}
    rule = "until its throughput held"
    if len(tolerances) == 1:
        rule += f" within ±{tolerances.pop():.0%}"
    if len(caps) == 1:
        rule += f", at most {seconds(caps.pop())}"
    return (f"time to steady: how long each stack, freshly started, took under the load of its first cell {rule} "
            "(medians over its starts; docs/methods.md, \"Steady before measured\")")


def figure(r: StackSteady) -> str:
    """The median start's time; "≥ cap" when no start became steady within the cap."""
    if r.never:
        return f"≥ {seconds(r.cap_s or r.high_s)}"
    return seconds(r.median_s)


def detail(r: StackSteady) -> str:
    parts = []
    if r.starts > 1 and not r.never:
        lo, hi = r.low_s or 0.0, r.high_s or 0.0
        spread = seconds(lo) if number(lo) == number(hi) else f"{number(lo)}–{seconds(hi)}"
        parts.append(f"{spread} over {r.starts} starts")
    if r.not_steady:
        parts.append(f"not steady within the {seconds(r.cap_s)} cap in {r.not_steady} of {r.starts} "
                     f"start{'s' if r.starts > 1 else ''}: measured still warming up")
    return "; ".join(parts) or f"{r.starts} start"


def rows(steady: Sequence[StackSteady]) -> list[tuple[str, str, str]]:
    return [(r.stack_label, figure(r), detail(r)) for r in steady]
