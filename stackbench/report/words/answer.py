"""The answer in words: the paragraph that opens `stackbench show` and each run of the
HTML report — one sentence per thing the run asked (analysis/answer.py): which side
serves more, by how much, and at what cost in CPU and memory — then the workloads it
names, one line each. The verdict lines below it are the evidence, with their intervals.

"php-hello c=16 keep-alive: Apache mod_php serves 72 % more requests a second than nginx
+ FPM, using 0.61× the CPU per request, with no clear difference in memory (18.0–18.2
MiB); Apache mod_php, AllowOverride All: no significant difference." A ratio of 2 or more
reads as a multiple ("2.4× as many requests a second as"). Only what a verdict decided is
called more or fewer: a difference no test settled is said to be open, and how."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from stackbench.analysis import capacity_results, stats
from stackbench.analysis import verdicts as verdicts_mod
from stackbench.analysis.answer import AHEAD, BEHIND, Answer, Standing, medians
from stackbench.analysis.questions import Question
from stackbench.analysis.run import RunAnalysis
from stackbench.analysis.summary import CellSummary
from stackbench.analysis.verdicts import Verdict
from stackbench.planning import described
from stackbench.report.words import warnings as warning_words
from stackbench.report.words.verdicts import how, question_name
from stackbench.units import MiB, format_rate

# Past this many questions without verdicts, the tables say it better than sentences.
MEASURED_AT_MOST = 6


@dataclass(frozen=True)
class Unit:
    noun: str  # "requests a second"
    many: str  # "as many"
    fewer: str  # "fewer"


REQUESTS = Unit("requests a second", "many", "fewer")
PAGES = Unit("page views a second", "many", "fewer")
LOAD = Unit("load", "much", "less")


def sentences(a: RunAnalysis) -> list[str]:
    """The paragraph: each answer's sentence; a run without verdicts says what it measured
    (and why it has no verdict) instead."""
    return [f"{topic}: {text}" if topic else text for topic, text in parts(a)]


def parts(a: RunAnalysis) -> list[tuple[str, str]]:
    """The sentences as (what was asked, the answer to it) — the HTML report sets the first
    in bold; "" where a sentence answers no one question."""
    said = [part(x) for x in a.answers]
    if said or not a.no_verdicts:
        return said
    return _measured(a)


def part(ans: Answer) -> tuple[str, str]:
    levels = ans.levels
    if ans.metric == "capacity":  # a search has no level: the load is what it found
        topic = (f"{ans.within} · " if ans.within else "") + f"{ans.topic.workload} {ans.topic.mode()}, capacity"
        return topic, _one_level(ans, levels[0]) + "."
    if len(levels) == 1:
        return question_name(levels[0], ans.within), _one_level(ans, levels[0]) + "."
    first, last = levels[0].level(), levels[-1].level()
    topic = (f"{ans.within} · " if ans.within else "") + f"{ans.topic.workload} {ans.topic.mode()}"
    unit = _unit(ans, ans.standings)
    return (f"{topic}, {len(levels)} levels ({first} to {last})",
            f"in {unit.noun} against {ans.baseline}, " + "; ".join(_over_levels(ans, label) for label in ans.sides)
            + ".")


def workloads(a: RunAnalysis) -> list[tuple[str, str]]:
    """(id, what it is) for each workload the run measured, in the order it did."""
    ids = dict.fromkeys([*(s.question.workload for s in a.summaries), *(c.figures.question.workload for c in a.cells)])
    return [(w, described.workload(w, a.run.plan) or "a workload this version of stackbench does not know")
            for w in ids]


# -- one level -------------------------------------------------------------------------

def _unit(ans: Answer, standings: Sequence[Standing]) -> Unit:
    if ans.metric == "capacity":
        return LOAD
    side = standings[0].verdict.candidate_side if standings else None
    return PAGES if side is not None and side.page_mode else REQUESTS


def _verb(ans: Answer, plural: bool = False) -> str:
    return ("sustain" if plural else "sustains") if ans.metric == "capacity" else ("serve" if plural else "serves")


def _ratio(v: Verdict) -> float | None:
    return v.comparison.ratio


def _more(r: float, unit: Unit, than: str | None) -> str:
    """r > 1 as more: "54 % more requests a second than X", "2.4× as many requests a
    second as X"; without `than`, the short form ("54 % more", "2.4× as many")."""
    if r >= 2:
        return f"{r:.1f}× as {unit.many}" + (f" {unit.noun} as {than}" if than else "")
    return f"{(r - 1) * 100:.0f} % more" + (f" {unit.noun} than {than}" if than else "")


def _fewer(r: float, unit: Unit, than: str | None) -> str:
    """r < 1 as fewer: "59 % fewer requests a second than X" (the verdict line's "59 % slower")."""
    return f"{(1 - r) * 100:.0f} % {unit.fewer}" + (f" {unit.noun} than {than}" if than else "")


def _one_level(ans: Answer, level: Question) -> str:
    st = ans.at(level)
    unit = _unit(ans, st)
    ahead = [s for s in st if s.place == AHEAD]
    behind = [s for s in st if s.place == BEHIND]
    rest = [s for s in st if s.place not in (AHEAD, BEHIND)]
    if ahead:
        lead = _ahead(ans, ahead, unit) + _cost([(s, False) for s in ahead if not _fails(s.verdict)])
        # A side behind says its cost too: "what does it cost when it cannot cache?" is
        # cache-front's question, answered by the pass-through side behind the baseline.
        tail = [_behind_short(s, unit) + ("" if _fails(s.verdict) else _cost([(s, False)])) for s in behind]
    elif behind:
        lead = _baseline_leads(ans, behind, unit) + _cost([(s, True) for s in behind if not _fails(s.verdict)])
        tail = []
    else:
        who = "side" if ans.self_comparison else "stack"
        lead, tail = f"no {who} {_verb(ans)} clearly more {unit.noun} than {ans.baseline}", []
    # An open side's cost is settled or not on its own: two stacks the same in throughput
    # (http2 far: "the same within ±2%") can differ fourfold in memory.
    tail += [f"{s.label}: {_open(s.verdict)}" + ("" if _fails(s.verdict) else _cost([(s, False)])) for s in rest]
    return lead + "".join(f"; {t}" for t in tail)


def _fails(v: Verdict) -> bool:
    return v.kind in verdicts_mod.FAILURE_KINDS


def _ahead(ans: Answer, ahead: list[Standing], unit: Unit) -> str:
    """The sides ahead of the baseline, the first in full, the others shortly."""
    parts = []
    for i, s in enumerate(ahead):
        v, r = s.verdict, _ratio(s.verdict)
        if v.kind == verdicts_mod.BASELINE_FAILS:
            base = v.baseline_side
            parts.append(f"{s.label} {_verb(ans)} this load, which {ans.baseline} fails"
                         + (f" ({how(base)})" if base is not None else ""))
        elif r is None:
            parts.append(f"{s.label} {_verb(ans)} more {unit.noun} than {ans.baseline}")
        else:
            least = "at least " if v.kind == verdicts_mod.AT_LEAST_HIGHER else ""
            parts.append(f"{s.label} {'' if i else _verb(ans) + ' '}{least}{_more(r, unit, None if i else ans.baseline)}")
    return ", and ".join(parts) if len(parts) == 2 else ", ".join(parts)


def _baseline_leads(ans: Answer, behind: list[Standing], unit: Unit) -> str:
    """The baseline ahead of every side that is not open: its ratio to each, inverted."""
    served = [s for s in behind if not _fails(s.verdict)]
    failed = [s for s in behind if _fails(s.verdict)]
    parts = []
    for i, s in enumerate(served):
        r = _ratio(s.verdict)
        if r is None or r <= 0:
            parts.append(f"more {unit.noun} than {s.label}")
            continue
        inverse = 1 / r
        text = (f"{inverse:.1f}× as {unit.many} {unit.noun} as {s.label}" if inverse >= 2
                else f"{(inverse - 1) * 100:.0f} % more {unit.noun} than {s.label}")
        parts.append(text if not i else text.replace(f" {unit.noun}", "", 1))
    lead = f"{ans.baseline} {_verb(ans)} " + (" and ".join(parts) if parts else "this load")
    for s in failed:
        side = s.verdict.candidate_side
        lead += f"; {s.label} fails it" + (f" ({how(side)})" if side is not None else "")
    return lead


def _behind_short(s: Standing, unit: Unit) -> str:
    v, r = s.verdict, _ratio(s.verdict)
    if _fails(v):
        side = v.candidate_side
        return f"{s.label} fails this load" + (f" ({how(side)})" if side is not None else "")
    return f"{s.label} {_fewer(r, unit, None)}" if r is not None else f"{s.label} fewer"


def _open(v: Verdict) -> str:
    """Why a comparison calls neither side ahead, shortly."""
    kind, c = v.kind, v.comparison
    if kind == verdicts_mod.NEITHER_SERVES:
        return "neither serves this load"
    if kind == verdicts_mod.NOT_SEPARABLE:
        return "not separable on this machine (the load generator at its limit)"
    if kind == verdicts_mod.NOT_RESOLVABLE:
        return "not resolvable in so short a window"
    if kind == stats.Verdict.EQUIVALENT.value:
        return f"the same within ±{c.band:.0%}"
    if kind == stats.Verdict.INSUFFICIENT.value and capacity_results.on_probes(v):
        # Capacities compared on their probes lack an edge when a search met (or missed)
        # every rate it probed: more runs would not help, a longer search would.
        return "no verdict (a capacity is a bound, not an estimate: its search met or missed every rate it probed)"
    if kind == stats.Verdict.INSUFFICIENT.value:
        return "no verdict yet (too few valid runs)"
    if v.lost_to_holm and c.ratio is not None:
        return f"not settled ({(c.ratio - 1) * 100:+.0f} %; more runs would settle it)".replace("-", "−")
    return "no significant difference"


# -- what it costs ---------------------------------------------------------------------

def _cost(pairs: list[tuple[Standing, bool]]) -> str:
    """", using 0.63× the CPU per request and 1.4× the memory" of the sides named first
    against the side they are compared with (`invert`: the baseline named first, each
    verdict's ratio turned round); ", with about the same memory (17.7–18.3 MiB)" where
    the verdicts found less than verdicts.NOTABLE between them, "no clear difference in"
    where none settled it. "" when neither was compared."""
    found = [_metric_cost(pairs, which) for which in ("cpu", "memory")]
    using = [text for kind, text in found if kind == "using"]
    with_ = [text for kind, text in found if kind in ("same", "unclear")]
    return ((", using " + " and ".join(using)) if using else "") + ((", with " + " and ".join(with_)) if with_ else "")


def _metric_cost(pairs: list[tuple[Standing, bool]], which: str) -> tuple[str, str]:
    """(kind, words): "using" a ratio, about the "same", "unclear"; ("", "") not compared."""
    name = "CPU per request" if which == "cpu" else "memory"
    found = [(s.cpu if which == "cpu" else s.memory, invert) for s, invert in pairs]
    compared = [(v, invert) for v, invert in found if v is not None and v.comparison.ratio]
    if not compared:
        return "", ""
    settled = [(v, invert) for v, invert in compared
               if v.better is not None or v.kind == stats.Verdict.EQUIVALENT.value]
    notable = [(v, invert) for v, invert in settled if abs((v.comparison.ratio or 1) - 1) >= verdicts_mod.NOTABLE]
    span = _memory_range([v for v, _ in compared], which)
    if not settled:
        return "unclear", f"no clear difference in {name}{span}"
    if not notable:
        return "same", f"about the same {name}{span}"
    ratios = list(dict.fromkeys(f"{_times(1 / r if invert else r)}×" for v, invert in notable
                                if (r := v.comparison.ratio)))
    others = [v.candidate for v, _ in compared if all(v is not n for n, _ in notable)]
    return "using", (" and ".join(ratios) + f" the {name}"
                     + (f" ({', '.join(others)}: about the same)" if others else ""))


def _times(r: float) -> str:
    """A cost ratio: '0.61', '3.28'; ten times or more as the verdicts say it, '18' (static
    --quick's answer said Jetty used "18.01× the memory" beside its verdict's "18×")."""
    return f"{r:.2f}" if r < 10 else f"{r:.0f}"


def _memory_range(vs: list[Verdict], which: str) -> str:
    """" (17.7–18.3 MiB)": the medians of both sides, for a memory no verdict separated."""
    if which != "memory":
        return ""
    values = [m / MiB for v in vs for m in medians(v) if m is not None]
    if not values:
        return ""
    lo, hi = min(values), max(values)
    return f" ({lo:.1f} MiB)" if f"{lo:.1f}" == f"{hi:.1f}" else f" ({lo:.1f}–{hi:.1f} MiB)"


# -- over several levels -----------------------------------------------------------------

def _over_levels(ans: Answer, label: str) -> str:
    """One side over the levels: "Apache mod_php serves 20–40 % more at c=1 and c=10, 15 %
    fewer at c=100, no clear difference at c=50"."""
    st = ans.of(label)
    unit = _unit(ans, st)
    # A level the outcomes decided is said as such, never as a ratio: a side that fails a
    # load may have served its few clients at twice the baseline's rate (ramp-direction
    # --quick: prefork at c=256 up read "-98 % fewer").
    kind = {k: [s for s in st if s.verdict.kind == k] for k in verdicts_mod.FAILURE_KINDS if k}
    decided = [s for ss in kind.values() for s in ss]
    ahead = [s for s in st if s.place == AHEAD and s not in decided]
    behind = [s for s in st if s.place == BEHIND and s not in decided]
    rest = [s for s in st if s.place not in (AHEAD, BEHIND) and s not in decided]
    parts = []
    if ahead:
        parts.append(_span([_ratio(s.verdict) for s in ahead], unit, True) + _at(ahead, st))
    if behind:
        parts.append(_span([_ratio(s.verdict) for s in behind], unit, False) + _at(behind, st))
    if kind[verdicts_mod.BASELINE_FAILS]:
        parts.append(f"the load {ans.baseline} fails" + _at(kind[verdicts_mod.BASELINE_FAILS], st))
    costs = [c for c in (_cost_span(st, "cpu"), _cost_span(st, "memory")) if c]
    cost = (", using " + " and ".join(costs)) if costs else ""
    if rest and parts:
        parts.append("no clear difference" + _at(rest, st))
    failed = ([f"fails the load{_at(kind[verdicts_mod.CANDIDATE_FAILS], st)}"] if kind[verdicts_mod.CANDIDATE_FAILS]
              else []) + ([f"neither serves{_at(kind[verdicts_mod.NEITHER_SERVES], st)}"]
                          if kind[verdicts_mod.NEITHER_SERVES] else [])
    if not parts:
        if failed and not rest:
            return f"{label} " + ", ".join(failed) + cost
        where = " at any level" if len(rest) == len(st) else _at(rest, st)
        return f"{label}: no clear difference{where}" + "".join(f", {f}" for f in failed) + cost
    return f"{label} {_verb(ans)} " + ", ".join(parts + failed) + cost


def _cost_span(st: list[Standing], which: str) -> str:
    """"2.67–3.28× the memory", "0.45× the CPU per request at c=1": a side's cost over the
    levels where a verdict found it at least verdicts.NOTABLE apart ("" where none did) —
    memory's question, asked over levels, was answered in requests a second alone."""
    name = "CPU per request" if which == "cpu" else "memory"
    found = [(s, r) for s in st if (v := s.cpu if which == "cpu" else s.memory) is not None
             and v.better is not None and (r := v.comparison.ratio) and abs(r - 1) >= verdicts_mod.NOTABLE]
    if not found:
        return ""
    lo, hi = _times(min(r for _, r in found)), _times(max(r for _, r in found))
    return (f"{lo}×" if lo == hi else f"{lo}–{hi}×") + f" the {name}" + ("" if len(found) == len(st)
                                                                     else _at([s for s, _ in found], st))


def _at(these: list[Standing], every: list[Standing]) -> str:
    if len(these) == len(every):
        return " at every level"
    return " at " + ", ".join(s.question.level() for s in these)


def _span(ratios: list[float | None], unit: Unit, more: bool) -> str:
    """"20–40 % more", "2.1–3.4× as many", "15 % fewer"; "more" when a ratio is not computable
    (a side that served nothing)."""
    rs = [r for r in ratios if r is not None and r > 0]
    if len(rs) < len(ratios) or not rs:
        return "more" if more else unit.fewer
    lo, hi = min(rs), max(rs)
    if more:
        if lo >= 2:
            return (f"{lo:.1f}–{hi:.1f}×" if f"{lo:.1f}" != f"{hi:.1f}" else f"{lo:.1f}×") + f" as {unit.many}"
        if hi >= 2:
            return f"{_more(lo, unit, None)} to {_more(hi, unit, None)}"
        a, b = (lo - 1) * 100, (hi - 1) * 100
        return (f"{a:.0f}–{b:.0f} %" if f"{a:.0f}" != f"{b:.0f}" else f"{a:.0f} %") + " more"
    a, b = (1 - hi) * 100, (1 - lo) * 100
    return (f"{a:.0f}–{b:.0f} %" if f"{a:.0f}" != f"{b:.0f}" else f"{a:.0f} %") + f" {unit.fewer}"


# -- a run without verdicts --------------------------------------------------------------

def _measured(a: RunAnalysis) -> list[tuple[str, str]]:
    """No verdict: why, then each question's throughput by stack (medians), untested."""
    nv = a.no_verdicts
    assert nv is not None
    by: dict[Question, list[CellSummary]] = {}
    for s in a.summaries:
        by.setdefault(s.question, []).append(s)
    head = f"No verdicts: {warning_words.no_verdicts_why(nv)}"
    if not by:
        return [("", head + ".")]
    if len(by) > MEASURED_AT_MOST:
        return [("", head + f"; {len(by)} questions measured, in the tables below (medians, untested).")]
    measured = []
    for q, ss in by.items():
        key = verdicts_mod.THROUGHPUT.key
        rates = [(s.stack_label, s.metrics[key].median, s.page_mode) for s in ss if key in s.metrics]
        shown = ", ".join(f"{label} {format_rate(m)} {'page views/s' if page else 'req/s'}"
                          for label, m, page in sorted(rates, key=lambda x: -(x[1] or 0)))
        measured.append(f"{question_name(q)}: {shown or 'nothing served'}")
    return [("", head + "; measured, untested (medians): " + "; ".join(measured) + ".")]


def load_line(a: RunAnalysis) -> str | None:
    """What "c=16 keep-alive" means, under the workloads' lines; None when no closed-loop
    level was asked (open loops name their rate: "500/s")."""
    closed = [s.question for s in a.summaries if s.question.rate is None]
    if not closed:
        return None
    kept = {q.keepalive for q in closed}
    conn = ("over connections they keep open (keep-alive)" if kept == {True}
            else "each request on a new connection (no keep-alive)" if kept == {False}
            else "over connections kept open (keep-alive) or one a request (no keep-alive)")
    return f"c=N: N clients at once, each sending its next request when the last is answered, {conn}"
