"""Each tuned stack's tuning curve (docs/methods/tuning.md): every candidate pool's figure
against its size — the geometric mean of its runs with the 95 % interval as whiskers —
the candidates that failed a run hollow, the chosen pool ringed, the pools that close each
connection after one response as squares (just right of a kept-alive pool of the same
size), and why
that pool was chosen in the words of the terminal's `stackbench tunings ID`
(report/words/tuning.py). The reviews are commands/report.py's: the stored tunings the
run's tuned stacks took (or, in a tuning's own candidates run, that tuning)."""

from __future__ import annotations

from stackbench.analysis.tuning import Review, Trial
from stackbench.report.html import svg
from stackbench.report.html.figure import Context, Figure
from stackbench.report.words import tuning as words
from stackbench.units import format_rate

# A one-request point sits this factor right of its size (on the log axis: a quarter of a
# doubling) when a kept-alive candidate has that size, beside it rather than on it.
BESIDE = 2 ** 0.25


def curves(ctx: Context) -> list[Figure]:
    return [_figure(ctx, name, r) for name, r in ctx.tunings.items()]


def _figure(ctx: Context, name: str, r: Review) -> Figure:
    cls = ctx.palette.cls(name)
    kept = [t for t in r.trials if not t.one_request and t.center is not None]
    closing = [t for t in r.trials if t.one_request and t.center is not None]
    taken = {t.size for t in kept}
    series = []
    if kept:
        series.append(svg.Series(cls, tuple(_point(r, t, t.size) for t in kept)))
    if closing:
        series.append(svg.Series(cls, tuple(_point(r, t, t.size * (BESIDE if t.size in taken else 1.0))
                                            for t in closing), joined=len(closing) > 1, squares=True))
    sizes = sorted({t.size for t in r.trials})
    x = svg.Axis("pool size (workers, log scale)", sizes[0] / 1.5, sizes[-1] * 1.5, tuple(sizes),
                 lambda v: f"{v:.0f}", log=True)
    ys: list[float | None] = [t.center for t in r.trials]
    ys += [v for t in r.trials for v in (t.interval() or ())]
    y = svg.linear("responses/s (geometric mean)", ys)
    panel = svg.lines(series, x, y, f"tuning of {name}: responses/s against the pool's size")
    runs = max((len(t.failures) for t in r.trials), default=0)
    how = (f"The question: {words.question(r)}. Each point is a candidate pool: its responses a second, the geometric "
           f"mean of its {runs} runs with the 95 % interval as whiskers; filled when every run served the question, "
           "hollow when one did not. Ringed: the pool the stack was measured with. "
           f"Memory: {words.memory(r.tuning.memory)}. {_sentence(words.why(r))}")
    cost = words.slow_cost(r.tuning)
    if cost:
        how += " " + _sentence(cost)
    marks = [f"hollow — {words.candidate(t)}: failed {t.failed} of {len(t.failures)} runs ({words.failures(t)})"
             for t in r.trials if t.failed]
    if closing:
        marks.append("squares — the server closing each connection after one response (the pool's workers each "
                     "hold a client's connection while it is kept alive)")
    rows = [_row(r, t) for t in r.trials]
    return Figure(ctx.anchor("tuning", name), f"Tuning — {name}", how, [panel],
                  ("candidate", "responses/s", "95 % interval", "runs served", "peak memory", ""), rows,
                  [(name, cls)], marks, f"stackbench tunings {r.tuning.id}")


def _point(r: Review, t: Trial, x: float) -> svg.Point:
    chosen, best = t is r.choice.chosen, t is r.choice.best
    interval = t.interval()
    return svg.Point(x, t.center or 0.0, _title(t), interval[0] if interval else None,
                     interval[1] if interval else None, hollow=not t.serves, ringed=chosen,
                     note="chosen" if chosen else "best" if best else "")


def _title(t: Trial) -> str:
    interval = t.interval()
    text = f"{words.candidate(t)}: {format_rate(t.center)}/s"
    if interval:
        text += f" [{format_rate(interval[0])}, {format_rate(interval[1])}]"
    text += f", served {len(t.failures) - t.failed} of {len(t.failures)} runs"
    return text + (f"; failed: {words.failures(t)}" if t.failed else "")


def _row(r: Review, t: Trial) -> tuple[str, ...]:
    interval = t.interval()
    chosen, best = t is r.choice.chosen, t is r.choice.best
    mark = "chosen, the best" if chosen and best else "chosen" if chosen else "best" if best else ""
    return (words.candidate(t), format_rate(t.center),
            f"[{format_rate(interval[0])}, {format_rate(interval[1])}]" if interval else "-", words.served(t),
            words.mib(t.peak_mem_bytes) if t.peak_mem_bytes else "-", mark)


def _sentence(text: str) -> str:
    return text[:1].upper() + text[1:] + "."
