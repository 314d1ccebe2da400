"""The top of a run's report: the answer — a sentence per thing the run asked, and the
workloads it names (report/words/answer.py, the terminal's words) — then the verdicts
it rests on — verdict sentences worded exactly as the
terminal words them (report/words/: question_name, headline), capacity intervals and
their verdicts, the way down against the way up — or, when the run has no verdicts, how
to get them; then the warnings that change how to read the numbers (decided in
analysis/run_warnings.py, worded in report/words/warnings.py for both reports)."""

from __future__ import annotations

from html import escape

from stackbench.analysis import stats
from stackbench.analysis.figures import CellFigures
from stackbench.analysis.capacity_results import on_probes
from stackbench.analysis.run import Capacity
from stackbench.analysis.run_warnings import NoVerdicts, Warnings
from stackbench.analysis.verdicts import Verdict, Verdicts
from stackbench.report.html import bottleneck, tables
from stackbench.report.html.figure import Context
from stackbench.report.words import capacity as capacity_text, classes as classes_text, protocols as protocols_text
from stackbench.report.words import answer as answer_words, warmup as warmup_words, warnings as warning_words
from stackbench.report.words.commands import PROGRAM, typed
from stackbench.report.words.capacity import STOPPED
# aside: the terminal's own words for a secondary metric ("uses 0.61x the CPU per request")
from stackbench.report.words.verdicts import aside, asides, fallback_note, headline, notes, question_name
from stackbench.units import MiB, format_num, format_us


def the_answer(ctx: Context) -> str:
    """The paragraph that opens a run — what was asked in bold, the answer after it — then
    each workload it names, and what its loads mean, a line each."""
    said = answer_words.parts(ctx.analysis)
    if not said:
        return ""
    text = " ".join((f"<strong>{escape(topic)}:</strong> " if topic else "") + escape(rest) for topic, rest in said)
    lines = [f"<li><code>{escape(w)}</code>: {escape(what)}</li>" for w, what in answer_words.workloads(ctx.analysis)]
    load = answer_words.load_line(ctx.analysis)
    if load:
        lines.append(f"<li>{escape(load)}</li>")
    return f'<div class="answer"><p>{text}</p></div>' + (f'<ul class="workloads">{"".join(lines)}</ul>' if lines else "")


def render(ctx: Context) -> str:
    a = ctx.analysis
    vs = a.verdicts
    parts = [_verdicts(vs, f"Verdicts (baseline: {vs.baseline})") if vs else "",
             _capacity(a.capacity), _how_to_get_verdicts(ctx, a.no_verdicts)]
    parts.append(_protocols(ctx))
    if a.ramps:
        parts.append(_verdicts(a.ramps, "The way down against the way up (each stack against itself)"))
    if a.backgrounds:
        parts.append(_verdicts(a.backgrounds, "The measured visitors alone against with other visitors beside them "
                                              "(each stack against itself)"))
        parts.append(tables.table(classes_text.HEAD, classes_text.rows(a.classes),
                                  caption="Visitor classes (medians over repetitions): " + classes_text.BUSY_NOTE))
    body = "".join(parts) or "<p>No cell of this run was measured.</p>"
    if a.steady:  # the run's steady warm-ups: each stack's time to steady, a cost of its own
        body += tables.table(warmup_words.HEAD, warmup_words.rows(a.steady), caption=warmup_words.title(a.steady))
    return (f'<section class="answers" id="{ctx.anchor("answers")}"><h3>The verdicts</h3>{body}'
            f"{_warnings(ctx)}{bottleneck.render(ctx)}</section>")


def _protocols(ctx: Context) -> str:
    """What TLS costs each stack and what HTTP/2 changes (HTTPS against clear HTTP/1.1,
    HTTP/2 against HTTPS where both were asked), throughput and CPU by protocol and handshake mode with the handshake time,
    and the server's CPU per new connection — in the terminal's words and columns."""
    a = ctx.analysis
    parts = [_verdicts(a.protocols, "What TLS costs each stack, and what HTTP/2 changes: "
                                    "HTTPS against clear HTTP/1.1, HTTP/2 against HTTPS where both were asked (else against clear HTTP/1.1), on the same stack, workload, level and connections") if a.protocols else ""]
    rows = protocols_text.by_protocol_rows(a.summaries)
    if rows:
        parts.append(tables.table(protocols_text.BY_PROTOCOL_HEAD, rows,
                                  caption="Throughput and CPU by protocol and handshake mode (medians of valid runs); "
                                          "handshake = the client's TLS handshake time per connection; "
                                          "\"h2 → http/1.1\" = asked for HTTP/2, the stack answered in HTTP/1.1 "
                                          "(a result, not a failure)"))
    if a.handshake_costs:
        parts.append(tables.table(protocols_text.HEAD, protocols_text.cost_rows(a.handshake_costs),
                                  caption="The server's cost per new TLS connection: " + protocols_text.COST_NOTE))
    return "".join(parts)


def _verdicts(vs: Verdicts, title: str) -> str:
    through = vs.for_metric("throughput")
    if not through:
        return ""
    items = []
    for v in through:
        also = ", ".join(aside(x) for x in asides(vs, v))
        items.append(f'<li class="{_tone(v)}"><strong>{escape(question_name(v.question, v.within))}:</strong> '
                     f"{escape(headline(v, vs.band, vs.self_comparison) + fallback_note(v))}"
                     + (f'<span class="also"> — and {escape(also)}</span>' if also else "") + "</li>")
    # the terminal's notes, as sentences; the runs left out are listed in the warnings below
    said = [t[0].upper() + t[1:] + "." for t in notes(vs) if not t.startswith("left out")]
    if vs.excluded:
        said.append(f"Left out of verdicts: {len(vs.excluded)} invalid measurement(s) ("
                    + ", ".join(f"{k} ×{c}" for k, c in vs.excluded_by_reason().items())
                    + ") — see the warnings below.")
    return (f'<h4>{escape(title)}</h4><ul class="verdicts">{"".join(items)}</ul>'
            + "".join(f'<p class="note">{escape(t)}</p>' for t in said))


def _tone(v: Verdict) -> str:
    return "even" if v.better is None else "better" if v.better else "worse"


def _how_to_get_verdicts(ctx: Context, nv: NoVerdicts | None) -> str:
    """A run without verdicts between stacks says why, and what would give them."""
    if nv is None:
        return ""  # verdicts, or sentences that say how many runs each one lacks
    now = warning_words.show_now(nv, ctx.run.id)
    now = typed(now) if now else now
    now_html = (f"<p>This run has {nv.repetitions} repetitions already: <code>{escape(now)}</code> prints verdicts "
                "from it now.</p>") if now else ""
    return (f'<div class="no-verdicts"><p><strong>No verdicts between stacks for this run:</strong> '
            f"{escape(warning_words.no_verdicts_why(nv))}. The charts below show what was measured, but say nothing "
            f"of whether a difference is real.</p>{now_html}<p>To get verdicts, add to the plan (any stack label as "
            f"the baseline):</p><pre>{escape(chr(10).join(warning_words.plan_lines(nv)))}</pre><p>and run it again "
            f"with <code>{PROGRAM} run PLAN</code> — or run a named scenario, which has both: <code>{PROGRAM} "
            f"scenario list</code>, then <code>{PROGRAM} scenario run NAME</code>.</p></div>")


def _capacity(found: Capacity | None) -> str:
    """The capacity table, each stack over its searches, and the verdicts: in the
    terminal's words (report/words/capacity.py)."""
    if not found:
        return ""
    slo = found.slo
    rows = []
    for r in found.results:
        f = r.at_capacity
        rows.append((r.stack_label, r.workload, "on" if r.keepalive else "off", str(r.repetition + 1),
                     capacity_text.capacity(r), capacity_text.ci(r), capacity_text.met(r),
                     format_us(f.p99_us) if f else "-", format_num(f.cpu_us_per_request) if f else "-",
                     format_num(f.memory_peak_bytes, 1 / MiB, 1) if f else "-", STOPPED.get(r.stopped, r.stopped)))
    out = (f"<h4>Capacity at {escape(slo.describe())}</h4>"
           + tables.table(("stack", "workload", "keep-alive", "search", "capacity", "95 % CI", "met", "p99 ms",
                           "CPU µs/req", "mem MiB", "stopped"), rows)
           + f'<p class="note">{escape(capacity_text.METHOD[0].upper() + capacity_text.METHOD[1:])}; met = probes '
             "that met the target, of the probes made; p99, CPU and memory: the stack at the highest rate it met at "
             "or below its capacity.</p>")
    several = [s for s in found.stacks if s.searches > 1]
    if several:
        out += tables.table(("stack", "workload", "keep-alive", "searches", "capacity", "95 % CI"),
                            [(s.stack_label, s.workload, "on" if s.keepalive else "off", str(s.searches),
                              capacity_text.capacity(s), capacity_text.ci(s)) for s in several],
                            caption="Each stack over all its searches (their probes together)")
    decided = found.verdicts
    if decided:
        # decide() compares with the default equivalence band; the sentences say the same.
        items = "".join(f'<li class="{_tone(v)}"><strong>{escape(v.question.workload)} '
                        f"{'keep-alive' if v.question.keepalive else 'no keep-alive'}:</strong> "
                        f"{escape(capacity_text.sentence(v, stats.DEFAULT_EQUIVALENCE))}</li>" for v in decided)
        notes = ([capacity_text.PROBES_NOTE] if any(on_probes(v) for v in decided) else []) + (
            [capacity_text.SEARCHES_NOTE] if not all(on_probes(v) for v in decided) else [])
        out += (f"<h4>Capacity verdicts (baseline: {escape(decided[0].baseline)})</h4>"
                f"<ul class=\"verdicts\">{items}</ul>"
                + "".join(f'<p class="note">{escape(n[0].upper() + n[1:])}.</p>' for n in notes))
    return out


def _warnings(ctx: Context) -> str:
    items = []
    if ctx.run.error:
        items.append((f"the run ended with an error: {ctx.run.error}", "", True))
    items += _items(ctx.analysis.warnings)
    if not items:
        return ""
    lis = "".join(f'<li class="{"gate" if gate else ""}">{escape(text)}'
                  + (f'<span class="where">{escape(where)}</span>' if where else "") + "</li>"
                  for text, where, gate in items)
    gates = ('<p class="note">Marked ✕: the runs concerned were invalid measurements and are left out of verdicts '
             "(they stay in the charts and tables).</p>") if any(gate for _, _, gate in items) else ""
    return (f'<h4 id="{ctx.anchor("warnings")}">Read the numbers with these in mind</h4><ul class="warnings">{lis}</ul>'
            + gates)


def _items(warned: Warnings) -> list[tuple[str, str, bool]]:
    """The noisy machine; each kind of caveat once (its first cell's figures), with where
    it happened; a server's error once per message."""
    out = [(warning_words.noisy(warned.machine), "", False)] if warned.machine else []
    out += [(warning_words.error(e), _where([_place(c.figures) for c in e.cells]), e.gate) for e in warned.errors]
    out += [(warning_words.caveat(group), _where([_place(c.figures) for c, _ in group.cells]), group.gate)
            for group in warned.caveats]
    return out


def _place(f: CellFigures) -> str:
    return f"{f.stack_label} {question_name(f.question)} (cell {f.run_id}:{f.seq})"


def _where(places: list[str]) -> str:
    shown = "; ".join(places[:3])
    return f"{len(places)} run(s): {shown}" + (f" and {len(places) - 3} more" if len(places) > 3 else "")
