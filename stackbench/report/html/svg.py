"""Chart primitives as inline SVG text: axes with titles and units, linear and log
scales with round ticks, lines, points, whiskers, rings and notes, reference lines and
horizontal bars. Every point and bar carries a <title> (the browser shows it on hover,
offline, without a script). Every string is escaped here: callers pass raw text.

Sizes are in viewBox units; the page scales the SVG to its column (width: 100 %)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape
from typing import Callable, Iterable, Sequence

WIDTH = 720
CHAR = 6.6  # mean width of a 12-unit sans-serif character, to size label margins
VALUE_CHAR = CHAR * 0.92  # a bar's value is 11-unit text (the page's CSS: .bar-value)
ROW = 19  # one bar of a bar chart
GAP = 10  # between groups of bars


def tick_text(v: float) -> str:
    """A tick label: 0.25, 16, 2,500, 120,000."""
    if v == 0:
        return "0"
    if abs(v) >= 1000 or float(v).is_integer():
        return f"{v:,.0f}"
    return f"{v:.3g}"


@dataclass(frozen=True)
class Axis:
    title: str  # with its unit: "requests/s", "p99 latency (ms)"
    lo: float
    hi: float
    ticks: tuple[float, ...]
    fmt: Callable[[float], str] = tick_text
    log: bool = False

    def at(self, v: float, a: float, b: float) -> float:
        """`v` mapped onto the pixel span a…b."""
        if self.log:
            lo, hi, v = math.log10(self.lo), math.log10(self.hi), math.log10(max(v, self.lo))
        else:
            lo, hi = self.lo, self.hi
        return a + (b - a) * ((v - lo) / (hi - lo) if hi != lo else 0.5)


def _step(span: float, n: int) -> float:
    raw = span / n
    mag = 10.0 ** math.floor(math.log10(raw))
    return next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)


def linear(title: str, values: Iterable[float | None], *, zero: bool = True, n: int = 5, whole: bool = False,
           fmt: Callable[[float], str] = tick_text) -> Axis:
    """Round ticks (1, 2, 2.5, 5 × 10^k) enclosing the values (and 0 unless zero=False);
    `whole`: ticks on whole numbers only (seconds, processes)."""
    vs = [v for v in values if v is not None] or [0.0, 1.0]
    lo, hi = min(vs), max(vs)
    if zero:
        lo, hi = min(lo, 0.0), max(hi, 0.0)
    if hi == lo:
        hi = lo + (abs(lo) or 1.0)
    step = _step(hi - lo, n)
    if whole:
        step = max(1, math.ceil(step))
    lo, hi = math.floor(lo / step) * step, math.ceil(hi / step) * step
    ticks = tuple(round(lo + i * step, 10) for i in range(int(round((hi - lo) / step)) + 1))
    return Axis(title, lo, hi, ticks, fmt)


def logarithmic(title: str, values: Iterable[float], *, ticks: Sequence[float] | None = None,
                fmt: Callable[[float], str] = tick_text) -> Axis:
    """Whole decades enclosing the (positive) values; ticks at 1, 2, 5 × 10^k when the
    span is short, else at the decades — or the ticks given."""
    vs = [v for v in values if v is not None and v > 0] or [1.0, 10.0]
    # rounded first: 1 / (1 − 0.999) is 1000.0000000001, still the decade of 1,000
    lo = 10 ** math.floor(round(math.log10(min(vs)), 9))
    hi = 10 ** math.ceil(round(math.log10(max(vs)), 9))
    if hi == lo:
        hi = lo * 10
    if ticks is None:
        decades = [10 ** k for k in range(round(math.log10(lo)), round(math.log10(hi)) + 1)]
        ticks = [d * m for d in decades for m in (1, 2, 5) if d * m <= hi] if len(decades) <= 3 else decades
    return Axis(title, lo, hi, tuple(ticks), fmt, log=True)


def categories(title: str, labels: Sequence[str]) -> Axis:
    """An axis of named places in the order given (a sizing's machine sizes), at 0, 1, 2, …
    with half a step of room at each end; a label's "\n" starts a second line under it."""
    names = list(labels) or [""]
    return Axis(title, -0.5, len(names) - 0.5, tuple(float(i) for i in range(len(names))),
                lambda v: names[min(max(int(round(v)), 0), len(names) - 1)])


def levels(title: str, values: Iterable[float | None], fmt: Callable[[float], str] = tick_text) -> Axis:
    """A load-level axis: ticks at the levels asked; log when they span 10× or more."""
    vs = sorted({v for v in values if v is not None}) or [1.0]
    if vs[0] > 0 and vs[-1] / vs[0] >= 10:
        lo, hi = vs[0] / 1.4, vs[-1] * 1.4
        return Axis(title, lo, hi, tuple(vs), fmt, log=True)
    return Axis(title, 0.0, vs[-1] * 1.08, tuple(vs), fmt)


@dataclass
class Frame:
    """A plot area with its axes; x and y map data to viewBox units."""

    x: Axis
    y: Axis
    height: int = 270
    width: int = WIDTH
    left: int = 72
    right: int = 18
    top: int = 14
    bottom: int = 52
    parts: list[str] = field(default_factory=list)

    def X(self, v: float) -> float:
        return round(self.x.at(v, self.left, self.width - self.right), 1)

    def Y(self, v: float) -> float:
        return round(self.y.at(v, self.height - self.bottom, self.top), 1)

    def axes(self) -> list[str]:
        x0, x1, y0, y1 = self.left, self.width - self.right, self.height - self.bottom, self.top
        out = []
        for t in self.y.ticks:
            y = self.Y(t)
            out.append(f'<line class="grid" x1="{x0}" x2="{x1}" y1="{y}" y2="{y}"/>'
                       f'<text class="tick" x="{x0 - 6}" y="{y + 4}" text-anchor="end">{escape(self.y.fmt(t))}</text>')
        for t in self.x.ticks:
            x = self.X(t)
            out.append(f'<line class="grid" x1="{x}" x2="{x}" y1="{y0}" y2="{y1}"/>'
                       f'<text class="tick" x="{x}" y="{y0 + 16}" text-anchor="middle">'
                       f'{_lines(x, self.x.fmt(t))}</text>')
        out.append(f'<path class="axis" d="M{x0},{y1}V{y0}H{x1}"/>')
        out.append(f'<text class="axis-title x-title" x="{(x0 + x1) / 2}" y="{self.height - 10}" '
                   f'text-anchor="middle">{escape(self.x.title)}</text>')
        room = y0 - y1  # a title longer than the axis is squeezed to fit, never cut
        fit = f' textLength="{room}" lengthAdjust="spacingAndGlyphs"' if len(self.y.title) * CHAR * 1.1 > room else ""
        out.append(f'<text class="axis-title y-title" transform="translate(14,{(y0 + y1) / 2}) rotate(-90)" '
                   f'text-anchor="middle"{fit}>{escape(self.y.title)}</text>')
        return out

    def svg(self, label: str) -> str:
        return document(label, self.width, self.height, self.axes() + self.parts)


def _lines(x: float, text: str) -> str:
    """A tick label's lines, the second and later each a line lower (12-unit text)."""
    first, *rest = text.split("\n")
    return escape(first) + "".join(f'<tspan x="{x}" dy="13">{escape(line)}</tspan>' for line in rest)


def document(label: str, width: float, height: float, parts: list[str]) -> str:
    return (f'<svg viewBox="0 0 {width} {height:.0f}" role="img" aria-label="{escape(label)}">'
            f'<title>{escape(label)}</title>{"".join(parts)}</svg>')


# -- marks -------------------------------------------------------------------------

def polyline(points: list[tuple[float, float]], cls: str, dashed: bool = False) -> str:
    if len(points) < 2:
        return ""
    coords = " ".join(f"{x},{y}" for x, y in points)
    return f'<polyline class="line {cls}{" dash" if dashed else ""}" points="{coords}"/>'


def dot(x: float, y: float, cls: str, title: str, hollow: bool = False) -> str:
    return (f'<circle class="dot {cls}{" hollow" if hollow else ""}" cx="{x}" cy="{y}" r="4">'
            f'<title>{escape(title)}</title></circle>')


def square(x: float, y: float, cls: str, title: str, hollow: bool = False) -> str:
    """A point of a second kind beside the dots (a tuning's one-request-a-connection stage)."""
    return (f'<rect class="dot {cls}{" hollow" if hollow else ""}" x="{x - 4}" y="{y - 4}" width="8" height="8">'
            f'<title>{escape(title)}</title></rect>')


def diamond(x: float, y: float, cls: str, title: str, hollow: bool = False) -> str:
    """A point of a third kind: a figure neither side of a line (a sizing's interval that
    straddles its target)."""
    return (f'<path class="dot {cls}{" hollow" if hollow else ""}" d="M{x},{y - 5.5}l5.5,5.5l-5.5,5.5l-5.5,-5.5z">'
            f'<title>{escape(title)}</title></path>')


def ring(x: float, y: float) -> str:
    """A point singled out (a tuning's chosen pool): a ring around it."""
    return f'<circle class="ring" cx="{x}" cy="{y}" r="8.5"/>'


def note(x: float, y: float, text: str) -> str:
    """A word just above (x, y), centred on it."""
    return f'<text class="note" x="{x}" y="{y - 11}" text-anchor="middle">{escape(text)}</text>'


def whisker(x0: float, y0: float, x1: float, y1: float, cls: str) -> str:
    """A CI from (x0, y0) to (x1, y1) with short caps across it."""
    if x0 == x1:
        caps = f"M{x0 - 4},{y0}h8M{x1 - 4},{y1}h8"
    else:
        caps = f"M{x0},{y0 - 4}v8M{x1},{y1 - 4}v8"
    return f'<path class="wh {cls}" d="M{x0},{y0}L{x1},{y1}{caps}"/>'


def rule(frame: Frame, y: float, label: str) -> str:
    """A horizontal reference line (a target), labelled at its right end."""
    py, x1 = frame.Y(y), frame.width - frame.right
    return (f'<line class="ref" x1="{frame.left}" x2="{x1}" y1="{py}" y2="{py}"/>'
            f'<text class="ref-label" x="{x1 - 4}" y="{py - 5}" text-anchor="end">{escape(label)}</text>')


# -- horizontal bars -----------------------------------------------------------------

@dataclass(frozen=True)
class Bar:
    value: float
    cls: str
    title: str  # hover text; also printed at the bar's end
    text: str  # the value as printed
    lo: float | None = None  # CI whisker
    hi: float | None = None
    faint: bool = False  # shown but not trusted (no valid run)


@dataclass(frozen=True)
class Group:
    label: str
    bars: tuple[Bar, ...]


def bars(groups: Sequence[Group], x: Axis, label: str) -> str:
    """Horizontal bars from 0 (negative ones to the left), grouped, each group labelled
    at the left; values printed at the bars' ends."""
    longest = max((len(g.label) for g in groups), default=4)
    left = int(min(300, 16 + CHAR * longest))
    right = int(min(240, 16 + VALUE_CHAR * max((len(b.text) for g in groups for b in g.bars), default=4)))
    top, bottom = 8, 48
    height = top + sum(len(g.bars) * ROW + GAP for g in groups) + bottom
    f = Frame(x, Axis(x.title, 0, 1, ()), height=height, left=left, right=right, top=top, bottom=bottom)
    parts, y = [], top + GAP / 2
    for g in groups:
        span = len(g.bars) * ROW
        text = g.label if len(g.label) * CHAR <= left - 12 else g.label[: int((left - 12) / CHAR) - 1] + "…"
        parts.append(f'<text class="row-label" x="{left - 8}" y="{y + span / 2 + 4}" text-anchor="end">'
                     f'<title>{escape(g.label)}</title>{escape(text)}</text>')
        for b in g.bars:
            x0, x1 = sorted((f.X(0), f.X(b.value)))
            parts.append(f'<rect class="bar {b.cls}{" faint" if b.faint else ""}" x="{x0}" y="{y + 3}" width="{max(x1 - x0, 1):.1f}" '
                         f'height="{ROW - 6}"><title>{escape(b.title)}</title></rect>')
            if b.lo is not None and b.hi is not None:
                parts.append(whisker(f.X(b.lo), y + ROW / 2, f.X(b.hi), y + ROW / 2, "ci"))
            if b.value >= 0:
                end, anchor = max(x1, f.X(b.hi) if b.hi is not None else x1) + 4, "start"
            elif x0 - 4 - _value_width(b.text) >= left:
                end, anchor = x0 - 4, "end"
            else:  # no room left of the bar before the row's label: right of the zero line, in its own row
                end, anchor = f.X(0) + 4, "start"
            parts.append(f'<text class="bar-value" x="{end}" y="{y + ROW / 2 + 4}" text-anchor="{anchor}">'
                         f'{escape(b.text)}</text>')
            y += ROW
        y += GAP
    return document(label, f.width, height, _x_axis_only(f) + parts)


def _value_width(text: str) -> float:
    """A bar's printed value's width, generously: digits and signs are wider than the mean."""
    return VALUE_CHAR * len(text) + 4


def _x_axis_only(f: Frame) -> list[str]:
    """A bar chart's frame: vertical grid at the x ticks, the x axis and its title."""
    x0, x1, y0 = f.left, f.width - f.right, f.height - f.bottom
    out = [f'<line class="grid" x1="{f.X(t)}" x2="{f.X(t)}" y1="{f.top}" y2="{y0}"/>'
           f'<text class="tick" x="{f.X(t)}" y="{y0 + 16}" text-anchor="middle">{escape(f.x.fmt(t))}</text>'
           for t in f.x.ticks]
    out.append(f'<path class="axis" d="M{x0},{y0}H{x1}M{f.X(0)},{f.top}V{y0}"/>')
    out.append(f'<text class="axis-title x-title" x="{(x0 + x1) / 2}" y="{f.height - 10}" '
               f'text-anchor="middle">{escape(f.x.title)}</text>')
    return out


# -- lines and points ----------------------------------------------------------------

@dataclass(frozen=True)
class Point:
    x: float
    y: float
    title: str  # hover text: the same figures as the chart's table
    lo: float | None = None  # CI of y
    hi: float | None = None
    hollow: bool = False  # a point that is shown but not trusted (no valid run; a missed target)
    ringed: bool = False  # singled out: a ring around it (the chosen one)
    note: str = ""  # a word above it ("chosen", "best")
    diamond: bool = False  # drawn as a diamond: neither filled nor hollow's meaning (a sizing's "not shown")


@dataclass(frozen=True)
class Series:
    cls: str
    points: tuple[Point, ...]
    dashed: bool = False
    joined: bool = True  # False: points only (a search's probes are not a path)
    dotted: bool = True  # False: the line only (a fitted curve has no measured points)
    squares: bool = False  # its points drawn as squares: a second kind beside another series' dots


def lines(series: Sequence[Series], x: Axis, y: Axis, label: str, *, height: int = 270,
          refs: Sequence[tuple[float, str]] = ()) -> str:
    """A line chart: each series a polyline through its points (in the order given),
    CI whiskers, and hollow points for figures shown but not trusted."""
    f = Frame(x, y, height=height)
    for value, text in refs:
        f.parts.append(rule(f, value, text))
    for s in series:
        if s.joined:
            f.parts.append(polyline([(f.X(p.x), f.Y(p.y)) for p in s.points], s.cls, s.dashed))
        for p in s.points:
            if p.lo is not None and p.hi is not None:
                f.parts.append(whisker(f.X(p.x), f.Y(p.lo), f.X(p.x), f.Y(p.hi), s.cls))
            if s.dotted:
                shape = diamond if p.diamond else square if s.squares else dot
                f.parts.append(shape(f.X(p.x), f.Y(p.y), s.cls, p.title, p.hollow))
            if p.ringed:
                f.parts.append(ring(f.X(p.x), f.Y(p.y)))
            if p.note:  # above the point and its whisker
                f.parts.append(note(f.X(p.x), min(f.Y(p.y), f.Y(p.hi) if p.hi is not None else f.Y(p.y)), p.note))
    return f.svg(label)
