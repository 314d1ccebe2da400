"""Verdicts in words, and the per-stack summary over repetitions, for a terminal.

A verdict line reads: `php-hello c=16 keep-alive: apache-prefork-modphp is 58 % faster than
nginx-fpm (95 % CI 51–66 %, 5 vs 5 runs) — and uses 0.61x the CPU per request`. The
throughput verdict is always shown; another metric joins it when it is significant and
at least LARGE apart (the rest are in `stackbench export`).
"""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import stats
from stackbench.analysis.compare import CompareResult
from stackbench.analysis.questions import Question
from stackbench.analysis.summary import CellSummary
from stackbench.analysis.verdicts import Verdict, Verdicts
from stackbench.report.text import table
from stackbench.report.text.style import Style
from stackbench.units import MiB, format_num as _num, format_rate, format_us

LARGE = 0.10  # a secondary metric is mentioned when it differs by 10 % or more


def question_name(q: Question) -> str:
    return f"{q.workload} {q.level()} {'keep-alive' if q.keepalive else 'no keep-alive'}"


def _pct(ratio: float) -> str:
    return f"{abs(ratio - 1) * 100:.0f} %"


def _signed(ratio: float | None) -> str:
    return "?" if ratio is None else f"{(ratio - 1) * 100:+.1f} %".replace("-", "−")


def _ci_pct(c: stats.Comparison) -> str:
    """The CI of the change, in the direction of the headline: '51–66 %'."""
    lo, hi = sorted((abs(c.ci_low - 1) * 100, abs(c.ci_high - 1) * 100))
    return f"{lo:.0f}–{hi:.0f} %"


def headline(v: Verdict, band: float) -> str:
    c = v.comparison
    runs = f"{c.n_b} vs {c.n_a} runs"  # candidate vs baseline, in the sentence's order
    if c.verdict == stats.Verdict.INSUFFICIENT:
        return f"{v.candidate} vs {v.baseline}: no verdict ({runs}; {_why_not(v)})"
    if c.verdict == stats.Verdict.EQUIVALENT:
        return (f"{v.candidate} and {v.baseline} are equivalent in {v.metric.label} ({_signed(c.ratio)}, "
                f"CI {_signed(c.ci_low)} to {_signed(c.ci_high)}, within ±{band:.0%}; {runs})")
    if c.verdict == stats.Verdict.NO_DIFFERENCE:
        excludes_one = c.ci_low is not None and (c.ci_low > 1 or c.ci_high < 1)
        if excludes_one and c.p_adjusted is not None and c.p_value is not None and c.p_value < stats.ALPHA:
            # The interval says "different", the rank test does not survive the
            # adjustment for the run's many comparisons: more runs would settle it.
            return (f"{v.candidate} vs {v.baseline}: {_signed(c.ratio)} in {v.metric.label} (CI {_signed(c.ci_low)} "
                    f"to {_signed(c.ci_high)}, {runs}), not significant after Holm's adjustment "
                    f"(p = {c.p_adjusted:.3g}): more runs would settle it")
        return (f"{v.candidate} vs {v.baseline}: no significant difference in {v.metric.label} "
                f"({_signed(c.ratio)}, CI {_signed(c.ci_low)} to {_signed(c.ci_high)}, {runs})")
    return f"{v.candidate} {_comparative(v)} {v.baseline} (95 % CI {_ci_pct(c)}, {runs}{_p(c)})"


def _why_not(v: Verdict) -> str:
    """What stands between this comparison and a verdict."""
    parts = []
    for label, n, excluded in ((v.candidate, v.comparison.n_b, v.candidate_excluded),
                               (v.baseline, v.comparison.n_a, v.baseline_excluded)):
        if n >= stats.MIN_RUNS:
            continue
        if n == 0 and excluded:
            codes = ", ".join(sorted(set(excluded)))
            parts.append(f"all {len(excluded)} runs of {label} failed a validity gate ({codes}): more runs will "
                         "not help until the cause is fixed")
        else:
            parts.append(f"{stats.MIN_RUNS - n} more valid run(s) of {label} needed")
    return "; ".join(parts) or "the ratio is not computable (a median of 0)"


def _p(c: stats.Comparison) -> str:
    if c.p_adjusted is None:
        return ""
    return f", p = {c.p_adjusted:.3g}" if c.p_adjusted >= 0.001 else ", p < 0.001"


def _comparative(v: Verdict) -> str:
    r = v.comparison.ratio or 1.0
    key = v.metric.key
    if key == "throughput":
        return f"is {_pct(r)} {'faster' if r > 1 else 'slower'} than"
    if key == "capacity":
        return f"sustains {_pct(r)} {'more' if r > 1 else 'less'} load than"
    if key.startswith("latency"):
        return f"has a {_pct(r)} {'higher' if r > 1 else 'lower'} {v.metric.label} than"
    return f"uses {r:.2f}x the {v.metric.label.replace('peak ', '')} of"


def aside(v: Verdict) -> str:
    """A secondary metric, shortly: 'uses 0.61x the CPU per request'."""
    r = v.comparison.ratio or 1.0
    if v.metric.key.startswith("latency"):
        return f"has a {_pct(r)} {'higher' if r > 1 else 'lower'} {v.metric.label}"
    return f"uses {r:.2f}x the {v.metric.label.replace('peak ', '')}"


def render(vs: Verdicts, out: TextIO, title: str | None = None) -> None:
    style = Style(out)
    through = vs.for_metric("throughput")
    if not through:
        return
    others = {(v.question, v.candidate): [] for v in through}
    for v in vs.verdicts:
        if v.metric.key != "throughput" and v.better is not None and v.comparison.ratio is not None \
                and abs(v.comparison.ratio - 1) >= LARGE and (v.question, v.candidate) in others:
            others[(v.question, v.candidate)].append(v)
    out.write("\n" + style.bold(title or f"verdicts (baseline: {vs.baseline})") + "\n")
    for v in through:
        line = f"{question_name(v.question)}: " + headline(v, vs.band)
        extra = others[(v.question, v.candidate)]
        if extra:
            line += " — and " + ", ".join(aside(x) for x in extra)
        color = style.good if v.better else (lambda s: s)  # green: the candidate wins
        out.write(color(line) + "\n")
    n = vs.family_sizes.get("throughput", 0)
    notes = ["95 % CI: bootstrap percentile interval of the ratio of medians; the run is the unit"]
    if n > 1:
        notes.append(f"p-values: Mann–Whitney U, Holm–Bonferroni-adjusted over the {n} throughput comparisons")
    for text in notes:
        out.write(style.dim(text) + "\n")
    if vs.excluded:
        listed = ", ".join(f"{k} ×{n}" for k, n in vs.excluded_by_reason().items())
        cells = "; ".join(f"{e.stack_label} {question_name(e.question)} #{e.seq}" for e in vs.excluded[:3])
        more = f" (+{len(vs.excluded) - 3} more)" if len(vs.excluded) > 3 else ""
        out.write(style.warn(f"left out of verdicts: {len(vs.excluded)} run(s) that failed a validity gate "
                             f"({listed}): {cells}{more}") + "\n")


def render_compare(result: CompareResult, out: TextIO) -> None:
    """`stackbench compare`: B's verdicts against A, then what was matched with what."""
    render(result.verdicts, out)
    for note in result.notes:
        out.write(note + "\n")


SUMMARY_HEAD = ("workload", "load", "keep-alive", "stack", "runs", "req/s median", "95 % CI", "CV",
                "p50 ms", "p99 ms", "mem MiB", "CPU µs/req")


def marks(vs: Verdicts | None) -> dict[tuple, str]:
    """The throughput verdict of each (question, stack) in a word, for the summary's
    `vs base` column: "+43 %" / "−70 %" when significant, "≈" equivalent, "n.s." no
    significant difference, "?" not enough runs, "base" the baseline itself."""
    out: dict[tuple, str] = {}
    for v in (vs.for_metric("throughput") if vs else []):
        c = v.comparison
        out[(v.question, v.baseline)] = "base"
        out[(v.question, v.candidate)] = {
            stats.Verdict.EQUIVALENT: "≈", stats.Verdict.NO_DIFFERENCE: "n.s.", stats.Verdict.INSUFFICIENT: "?",
        }.get(c.verdict) or _signed(c.ratio).replace(".0 %", " %")
    return out


def render_summary(rows: list[CellSummary], stop: dict | None, out: TextIO, wide: bool = False,
                   vs: Verdicts | None = None) -> None:
    style = Style(out)
    with_php = any(r.opcache_runs for r in rows)
    with_db = any(r.extras and r.extras["service_memory"].median is not None for r in rows)
    with_oom = any(r.oom_kills is not None for r in rows)
    verdict_of = marks(vs)
    head = ((SUMMARY_HEAD if wide else tuple(h for h in SUMMARY_HEAD if h not in ("CV", "p50 ms")))
            + (("vs base",) if verdict_of else ())
            + (table.PHP_COLUMNS if with_php else ()) + (table.SERVICE_COLUMNS if with_db else ())
            + (table.MACHINE_COLUMNS if with_oom else ()))
    body = []
    for r in rows:
        t = r.metrics["throughput"]
        ci = "-" if t.ci_low is None else f"{format_rate(t.ci_low)}–{format_rate(t.ci_high)}"
        row = (r.question.workload, r.question.level(), "on" if r.question.keepalive else "off",
               r.stack_label, f"{r.valid}/{r.runs}" if r.valid != r.runs else str(r.runs),
               format_rate(t.median) + (table.PAGE_MARK if r.page_mode else ""),
               ci, "-" if t.cv is None else f"{t.cv:.1%}",
               format_us(r.metrics["latency_p50"].median), format_us(r.metrics["latency_p99"].median),
               _num(r.metrics["memory"].median, 1 / MiB, 1), _num(r.metrics["cpu_per_request"].median, 1, 0))
        if not wide:
            row = row[:7] + row[9:]
        if verdict_of:
            row += (verdict_of.get((r.question, r.stack_label), "-"),)
        if with_php:
            row += (_opcache(r.opcache_runs),)
        if with_db:
            x = r.extras or {}
            row += (_num(x["service_memory"].median, 1 / MiB, 1), _num(x["service_cpu_per_request"].median, 1, 0))
        if with_oom:
            row += ("-" if r.oom_kills is None else str(r.oom_kills),)
        body.append(row)
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(head)]
    text_cols = {0, 2, 3}

    def line(values) -> str:
        return "  ".join(v.ljust(w) if i in text_cols else v.rjust(w)
                         for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    out.write(style.bold("over repetitions (medians of valid runs)") + "\n")
    out.write(style.bold(line(head)) + "\n")
    previous = None
    for b in body:
        if previous is not None and b[:3] != previous:
            out.write("\n")
        previous = b[:3]
        out.write(line(b) + "\n")
    if verdict_of:
        out.write(style.dim("vs base = throughput against the baseline: a significant difference in %, ≈ equivalent, "
                            "n.s. no significant difference, ? too few valid runs (the verdicts below say more)")
                  + "\n")
    for note in table.footnotes(head, any(r.page_mode for r in rows)):
        out.write(style.dim(note) + "\n")
    if stop:
        out.write(style.dim(stop_sentence(stop)) + "\n")


def _opcache(runs: tuple[int, int] | None) -> str:
    """on / off, or "2/5 on" when the runs disagree (a pool that lost its cache)."""
    if not runs:
        return "-"
    on, read = runs
    return "on" if on == read else "off" if on == 0 else f"{on}/{read} on"


def stop_sentence(stop: dict) -> str:
    n = stop.get("repetitions")
    if stop.get("reason") == "target":
        return (f"repetitions: {n}, stopped because every compared pair's CI was within ±{stop['target']:.0%} "
                f"(widest ±{stop['worst_half_width']:.1%})")
    if stop.get("reason") == "cap":
        w = stop.get("worst_half_width")
        widest = f"widest ±{w:.1%}" if w is not None else "not computable"
        return (f"repetitions: {n}, stopped at the cap (max_repetitions) before every CI was within "
                f"±{stop['target']:.0%} ({widest})")
    return f"repetitions: {n} (fixed by the plan)"
