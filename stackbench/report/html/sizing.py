"""The machine to buy (docs/guide/sizing.md) in the HTML report: the answer sentence of
`stackbench sizings ID` (report/words/sizing.py) and the core it was measured on (its
yardstick), then each stack's capacity within the SLO
against the machine's size — the sizes in the plan's order, the 95 % interval as whiskers,
the target as a line — marked by whether the size is enough (analysis/sizing.py decides:
filled enough, hollow not, a diamond where the interval straddles the target), each
stack's smallest enough size ringed; under it the same figures as a table, then each
stack's pool on each size as its tuning chose it, with what one slow request costs where it
was tuned on a mix with slow requests (report/words/sizing.py tuned). A sizing spans
its sizes' runs, so it is drawn once, above them (page.py); commands/report.py reads it."""

from __future__ import annotations

from html import escape

from stackbench.analysis.sizing import Enough, SizeCapacity, SizingAnswer
from stackbench.report.html import svg
from stackbench.report.html.colors import Palette
from stackbench.report.html.figure import Figure, legend_of, render
from stackbench.report.words import sizing as words
from stackbench.units import format_rate

# Each stack's points sit this far apart within a size (in sizes), so the whiskers of two
# stacks with the same capacity stand side by side rather than on each other.
DODGE = 0.08


def anchor(a: SizingAnswer) -> str:
    return f"sizing-{a.sizing.id}"


def section(a: SizingAnswer, slo: str | None, palette: Palette) -> str:
    s = a.sizing
    runs = words.runs(s)
    cpu = words.page_cpu(a)
    return (f'<section class="sizing" id="{anchor(a)}"><h2>The machine to buy: sizing {s.id}</h2>'
            f'<p class="meta">plan {escape(s.name)} · {escape(runs or "no size measured yet")}</p>'
            f'<p class="answer">{escape(words.sentence(a, slo))}</p>'
            f'<p class="meta">{escape(words.core_line(a))}{escape("; " + cpu) if cpu else ""}</p>'
            f'{render(chart(a, slo, palette))}'
            + "".join(f'<p class="meta">{escape(line)}</p>' for line in words.tuned(a) + words.skipped(a))
            + '</section>')


def chart(a: SizingAnswer, slo: str | None, palette: Palette) -> Figure:
    stacks = [s.stack for s in a.stacks]
    place = {size: i for i, size in enumerate(a.sizes)}
    series: list[svg.Series] = []
    ys: list[float | None] = [a.target_rate]
    for k, s in enumerate(a.stacks):
        shift = (k - (len(a.stacks) - 1) / 2) * DODGE
        smallest = s.smallest
        points = tuple(_point(a, c, place[c.size] + shift, c is smallest) for c in s.sizes if _y(c) is not None)
        ys += [v for c in s.sizes for v in (_y(c), c.low, c.high)]
        series.append(svg.Series(palette.cls(s.stack), points))
    x = svg.categories("machine size (the plan's order) and price a month",
                       [size + (f"\n{words.price(a.sizing.price(size))} a month"
                                if a.sizing.price(size) is not None else "") for size in a.sizes])
    y = svg.linear(f"capacity within the SLO ({words.rate_unit(a)})", ys)
    panel = svg.lines(series, x, y, "capacity against the machine's size, each stack, with the target",
                      refs=[(a.target_rate, f"target {words.target_said(a)}")])
    how = (f"Each stack's capacity on each size: the rate a probe meets {slo or 'the SLO'} half the time, fitted to "
           "every probe of that size's searches, with its 95 % interval as whiskers (docs/methods.md, capacity); the "
           f"dashed line is the target, {words.target(a, None)}. Filled: enough — the whole interval at or above the "
           "target; hollow: not enough; a diamond: not shown — the interval straddles the target, and more searches "
           "would settle it. Ringed: each stack's smallest enough size.")
    day = "visits and hits" if a.visit is not None else "hits"
    marks = [f"in the table: {words.MARKS_LEGEND}; {day} a day at the capacity ({words.per_day(a)}); memory: the "
             "stack's and its database's near the capacity; CPU a request: theirs together, near the capacity"]
    bounds = [f"{c.label} on {c.size}: {words.interval(c, a.visit is not None)}{words.per_s(a)} — no edge was "
              "fitted; drawn at the search's bracket "
              "(≥: every probe met up to it, <: none met down to it, a–b: met at a, missed at b)"
              for s in a.stacks for c in s.sizes if c.capacity is None and _y(c) is not None]
    rows = [_row(a, c, c is s.smallest) for size in a.sizes for s in a.stacks for c in s.sizes if c.size == size]
    return Figure(f"{anchor(a)}-capacity", "Capacity against the machine's size", how, [panel],
                  ("size", "price/month", "stack (as measured)", f"capacity {words.rate_unit(a)} [95 % interval]",
                   f"{day} a day",
                   "memory", "CPU a request", ""), rows, legend_of(palette, stacks), marks + bounds, f"stackbench sizings {a.sizing.id}")


def _y(c: SizeCapacity) -> float | None:
    """Where a stack's point on a size is drawn: its capacity; without an edge, the
    search's bracket — the rate every probe met up to, or else the one none met below."""
    return c.capacity if c.capacity is not None else c.low if c.low is not None else c.high


def _point(a: SizingAnswer, c: SizeCapacity, x: float, smallest: bool) -> svg.Point:
    y = _y(c) or 0.0
    lo, hi, note = c.low, c.high, ""
    if c.capacity is not None and (lo is not None or hi is not None):
        lo, hi = (y if lo is None else lo), (y if hi is None else hi)  # an interval open at one end: to the point
    elif c.capacity is None and (lo is None or hi is None):
        lo, hi, note = None, None, "≥" if lo is not None else "<"  # one side of a bracket: no whisker, a sign
    return svg.Point(x, y, _title(a, c, smallest), lo, hi, hollow=c.enough is not Enough.YES, ringed=smallest,
                     note=note, diamond=c.enough is Enough.NOT_SHOWN)


def _title(a: SizingAnswer, c: SizeCapacity, smallest: bool) -> str:
    price = f" ({words.price(c.price)} a month)" if c.price is not None else ""
    return (f"{c.label} on {c.size}{price}: {words.interval(c, a.visit is not None)}{words.per_s(a)}, "
            f"{c.enough.value}"
            + (", the smallest enough" if smallest else "")
            + f"; {words.a_day(a, c.capacity)}; memory {words.mib(c.memory_bytes)}")


def _row(a: SizingAnswer, c: SizeCapacity, smallest: bool) -> tuple[str, ...]:
    day = (f"{words.count(a.visits(c.capacity))} · {words.count(a.hits(c.capacity))}" if a.visit is not None
           else words.count(a.hits(c.capacity)))
    return (c.size, words.price(c.price), c.label, words.cell(c, a.visit is not None), day,
            words.mib(c.memory_bytes), words.ms(c.cpu_us_per_request), "the smallest enough" if smallest else "")
