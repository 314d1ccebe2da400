"""Verdicts and the per-stack summary over repetitions, for a terminal: the sentences
are report/words/verdicts.py's (the HTML report says the same), laid out here as lines
and a table."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis import stats
from stackbench.analysis.power import MAX_RUNS
from stackbench.analysis.compare import CompareResult
from stackbench.analysis.questions import Question
from stackbench.analysis.summary import CellSummary
from stackbench.analysis import verdicts as verdicts_mod
from stackbench.analysis.verdicts import Verdicts
from stackbench.model.stop import RepetitionStop
from stackbench.report.text import legend, table
from stackbench.report.text.style import Style
from stackbench.report.words import bottleneck as bottleneck_text
from stackbench.report.words.verdicts import aside, asides, fallback_note, headline, notes, question_name, signed
from stackbench.units import MiB, format_num as _num, format_rate, format_us


def render(vs: Verdicts, out: TextIO, title: str | None = None, explain: bool = True,
           said: set[str] | None = None) -> None:
    """The throughput verdicts, a line each; `explain`: how to read them, in full, after
    them (without it, the one who renders several blocks says it once: legend.VERDICTS),
    each note once over the blocks that share `said`. The runs left out are said either way."""
    style = Style(out)
    through = vs.for_metric("throughput")
    if not through:
        return
    out.write("\n" + style.bold(title or f"verdicts (baseline: {vs.baseline})") + "\n")
    for v in through:
        line = f"{question_name(v.question, v.within)}: " + headline(v, vs.band, vs.self_comparison) + fallback_note(v)
        extra = asides(vs, v)
        if extra:
            line += " — and " + ", ".join(aside(x) for x in extra)
        color = style.good if v.better else (lambda s: s)  # green: the candidate wins
        out.write(color(line) + "\n")
    said = set() if said is None else said
    for text in notes(vs):
        if text.startswith("left out"):
            out.write(style.warn(text) + "\n")
        elif explain and text not in said:
            out.write(style.dim(text) + "\n")
            said.add(text)


def render_compare(result: CompareResult, out: TextIO) -> None:
    """`stackbench compare`: B's verdicts against A, then what was matched with what."""
    render(result.verdicts, out)
    for note in result.notes:
        out.write(note + "\n")


SUMMARY_HEAD = ("workload", "load", "keep-alive", "stack", "runs", "req/s median", "95 % CI", "CV",
                "p50 ms", "p99 ms", "mem MiB", "CPU µs/req")


MARKS = {stats.Verdict.EQUIVALENT.value: "≈", stats.Verdict.NO_DIFFERENCE.value: "n.s.",
         stats.Verdict.INSUFFICIENT.value: "?", verdicts_mod.CANDIDATE_FAILS: "fails",
         verdicts_mod.BASELINE_FAILS: "base fails", verdicts_mod.NEITHER_SERVES: "neither",
         verdicts_mod.NOT_SEPARABLE: "n.sep.", verdicts_mod.NOT_RESOLVABLE: "n.res."}


def marks(vs: Verdicts | None) -> dict[tuple[Question, str], str]:
    """The throughput verdict of each (question, stack) in a word, for the summary's
    `vs base` column: "+43 %" / "−70 %" when significant, "≥+76 %" / "≤−40 %" when a
    lower bound settles it, "≈" equivalent, "n.s." no significant difference, "fails"
    it fails the load and the baseline does not, "base fails" the other way round,
    "neither" both fail it, "n.sep." not separable at the generator's limit, "n.res." not
    resolvable in steps of one response, "?" not enough runs, "base" the baseline itself."""
    out: dict[tuple[Question, str], str] = {}
    for v in (vs.for_metric("throughput") if vs else []):
        c = v.comparison
        out[(v.question, v.baseline)] = "base"
        change = signed(c.ratio).replace(".0 %", " %")
        out[(v.question, v.candidate)] = MARKS.get(v.kind) or {
            verdicts_mod.AT_LEAST_HIGHER: "≥" + change, verdicts_mod.AT_LEAST_LOWER: "≤" + change}.get(v.kind, change)
    return out


def summary_outcome(r: CellSummary) -> str:
    """How a (question, stack)'s runs ended, shortly: "served", "fails 5/5: unserved,OOM",
    "engine-bound 2/5", "failed 1/5: errors", with the invalid runs' reasons."""
    parts = []
    if r.failed:
        how = ",".join(table.SHORT.get(f.code, f.code) for f in r.failures)
        parts.append(f"{'fails' if r.fails else 'failed'} {r.failed}/{r.valid}: {how}")
    if r.engine_bound:
        parts.append(f"engine-bound {r.engine_bound}/{r.valid}")
    if r.valid < r.runs:
        parts.append(f"{r.runs - r.valid} invalid: " + ",".join(table.SHORT.get(x, x) for x in r.invalid_reasons))
    return "; ".join(parts) or ("served" if r.valid else "-")


def render_summary(rows: list[CellSummary], stop: RepetitionStop | None, out: TextIO, wide: bool = False,
                   vs: Verdicts | None = None, explain: bool = True) -> None:
    """`explain`: every note in full, else a short legend."""
    style = Style(out)
    with_php = any(r.opcache_runs for r in rows)
    with_db = any(r.service_memory and r.service_memory.median is not None for r in rows)
    with_oom = any(r.oom_kills is not None for r in rows)
    with_outcome = any(r.failed or r.engine_bound or r.valid < r.runs for r in rows)
    with_limit = bottleneck_text.shown([r.bottleneck for r in rows])
    verdict_of = marks(vs)
    head = ((SUMMARY_HEAD if wide else tuple(h for h in SUMMARY_HEAD if h not in ("CV", "p50 ms")))
            + (bottleneck_text.BUSY_COLUMNS if with_limit and wide else ())
            + (bottleneck_text.LIMIT_COLUMNS if with_limit else ())
            + (("vs base",) if verdict_of else ()) + (("outcome",) if with_outcome else ())
            + (table.PHP_COLUMNS if with_php else ()) + (table.SERVICE_COLUMNS if with_db else ())
            + (table.MACHINE_COLUMNS if with_oom else ()))
    body = []
    for r in rows:
        m = r.metrics
        t = m[verdicts_mod.THROUGHPUT.key]
        ci = "-" if t.ci_low is None else f"{format_rate(t.ci_low)}–{format_rate(t.ci_high)}"
        # Over TLS the keep-alive column says the protocol and handshake mode ("h2 on", "https full").
        row: tuple[str, ...] = (r.question.workload, r.question.level(), table.mode_words(r.question, r.protocol),
               r.stack_label, f"{r.valid}/{r.runs}" if r.valid != r.runs else str(r.runs),
               _bound(r, "throughput", format_rate(t.median)) + (table.PAGE_MARK if r.page_mode else ""),
               ci, "-" if t.cv is None else f"{t.cv:.1%}",
               _bound(r, "latency_p50", format_us(m[verdicts_mod.LATENCY_P50.key].median)),
               _bound(r, "latency_p99", format_us(m[verdicts_mod.LATENCY_P99.key].median)),
               _num(m[verdicts_mod.MEMORY.key].median, 1 / MiB, 1),
               _num(m[verdicts_mod.CPU_PER_REQUEST.key].median, 1, 0))
        if not wide:
            row = row[:7] + row[9:]
        if with_limit:
            busy = bottleneck_text.busy_values(r.bottleneck)
            row += ((tuple(busy[c] for c in bottleneck_text.BUSY_COLUMNS) if wide else ())
                    + (bottleneck_text.summary_word(r.bottleneck),))
        if verdict_of:
            row += (verdict_of.get((r.question, r.stack_label), "-"),)
        if with_outcome:
            row += (summary_outcome(r),)
        if with_php:
            row += (_opcache(r.opcache_runs),)
        if with_db:
            memory, cpu = r.service_memory, r.service_cpu_per_request
            row += (_num(memory.median if memory else None, 1 / MiB, 1), _num(cpu.median if cpu else None, 1, 0))
        if with_oom:
            row += ("-" if r.oom_kills is None else str(r.oom_kills),)
        body.append(row)
    widths = [max([len(h)] + [len(b[i]) for b in body]) for i, h in enumerate(head)]
    text_cols = ({0, 2, 3} | ({head.index("outcome")} if with_outcome else set())
                 | ({head.index("limit")} if with_limit else set()))

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if i in text_cols else v.rjust(w)
                         for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    out.write(style.bold("over repetitions (medians of valid runs)") + "\n")
    out.write(style.bold(line(head)) + "\n")
    # A blank line between questions, not between the words a row prints: Apache asked
    # HTTP/2 prints "h2 → http/1.1 on" and stays beside nginx's "h2 on" (one question).
    previous = None
    for r, b in zip(rows, body):
        if previous is not None and r.question != previous:
            out.write("\n")
        previous = r.question
        out.write(line(b) + "\n")
    if not explain:
        bound = any("≥" in v for b in body for v in b)
        legend.short(["≥" if bound else "", "pg" if any(r.page_mode for r in rows) else "", *head], out)
    elif verdict_of:
        out.write(style.dim(legend.wrap(
            "vs base = throughput against the baseline: a significant difference in % (the verdict's ratio of "
            "geometric means, which the medians beside it need not give: one slow run moves it more), ≥/≤ one a lower bound "
            "settles, ≈ equivalent, n.s. no significant difference, fails / base fails / neither: who fails the "
            "load, n.sep. not separable at the generator's limit, n.res. not resolvable with the responses a "
            "client completed in the window, ? too few valid runs (the verdicts say "
            "more)")) + "\n")
    if with_outcome and explain:
        out.write(style.dim(legend.wrap(table.OUTCOME_NOTE + "; medians count a failed run with what it served "
                                       "(≥: a lower bound)")) + "\n")
    for note in (table.footnotes(head, any(r.page_mode for r in rows))
                 + ([bottleneck_text.SUMMARY_NOTE] if with_limit else [])) if explain else ():
        out.write(style.dim(legend.wrap(note)) + "\n")
    if stop:
        out.write(style.dim(stop_sentence(stop)) + "\n")


def _bound(r: CellSummary, key: str, text: str) -> str:
    """A median that is a bound (summary.CellSummary.bounds) reads "≥ …"."""
    return "≥" + text if key in r.bounds and text != "-" else text


def _opcache(runs: tuple[int, int] | None) -> str:
    """on / off, or "2/5 on" when the runs disagree (a pool that lost its cache)."""
    if not runs:
        return "-"
    on, read = runs
    return "on" if on == read else "off" if on == 0 else f"{on}/{read} on"


def stop_sentence(stop: RepetitionStop) -> str:
    n = stop.repetitions
    if stop.reason == "target":
        return (f"repetitions: {n}, stopped because every compared pair's CI was within ±{stop.target:.0%} "
                f"(widest ±{stop.worst_half_width:.1%})")
    if stop.reason == "power":
        return (f"repetitions: {n}, stopped because every compared pair had the runs its noise needs to find a "
                f"{stop.detect:.0%} difference among {stop.family} comparisons")
    if stop.reason == "cap":
        w = stop.worst_half_width
        widest = f"widest ±{w:.1%}" if w is not None else "not computable"
        need = stop.runs_needed if stop.judged_power else 0
        noisy = ("" if not need or need <= (n or 0) else f"; to find a {stop.detect:.0%} difference among "
                 f"{stop.family} comparisons the noisiest pair needs {need} runs a side")
        if stop.judged_power and need is None:
            noisy = (f"; the noisiest pair needs more than {MAX_RUNS} runs a side to find a {stop.detect:.0%} "
                     "difference")
        return (f"repetitions: {n}, stopped at the cap (max_repetitions) before every CI was within "
                f"±{stop.target:.0%} ({widest}){noisy}")
    if stop.reason == "decided":
        # The stop rule waits on the stacks against the baseline only (runner/repetitions.py
        # `_throughput`): a protocol's, a ramp direction's or a visitor class's comparison may
        # still be open, and says so where it is printed
        return (f"repetitions: {n}, stopped because every throughput comparison against the baseline stack had a "
                f"verdict (more runs were allowed within the {stop.budget_s:g} s budget)")
    if stop.reason == "budget":
        return (f"repetitions: {n}, stopped because another would have ended past the {stop.budget_s:g} s "
                "budget; the comparisons still without a verdict say so")
    again = stop.remeasured
    return f"repetitions: {n} (fixed by the plan)" + (
        f"; {again} invalid cell measurement(s) measured again" if again else "")
