"""Verdicts in words — one wording for the terminal and the HTML report.

A verdict line reads: `php-hello c=16 keep-alive: apache-prefork-modphp is 58 % faster than
nginx-fpm (95 % CI 51–66 %, 5 vs 5 runs) — and uses 0.61x the CPU per request`. The
throughput verdict is always shown; another metric joins it when it is significant and
at least verdicts.NOTABLE apart (Verdicts.asides; the rest are in `stackbench export`).
Where the runs' outcomes decide (analysis/verdicts.py: decided), the line says so in its
first words: "Apache mod_php fails this load: 16 of 16 measured visitors unserved …;
nginx + FPM served 3,321 req/s (p99 6.7 ms)", "neither stack serves this load: …", "h2o
is at least 76 % faster than nginx (…; h2o's runs at the generator's limit: a lower
bound)", "lighttpd vs nginx: lighttpd at the generator's limit: not separable on this
machine (…)". On an axis other than the stack's the question names the stack the two
sides ran ("nginx + FPM · php-hello c=16 keep-alive: HTTPS is 38 % slower than HTTP").
"""

from __future__ import annotations

from stackbench.analysis import stats
from stackbench.analysis import verdicts as verdicts_mod
from stackbench.analysis.outcomes import SERVER_DIED, FailureSummary
from stackbench.analysis.questions import Question
from stackbench.analysis.verdicts import Side, Verdict, Verdicts
from stackbench.units import format_rate


def question_name(q: Question, within: str | None = None) -> str:
    """"php-hello c=16 keep-alive" — "nginx + FPM · php-hello c=16 keep-alive" when the
    sides compared are conditions of one stack (Verdict.within: an axis other than the stack's)."""
    return (f"{within} · " if within else "") + f"{q.workload} {q.level()} {q.mode()}"


def _pct(ratio: float) -> str:
    return f"{abs(ratio - 1) * 100:.0f} %"


# Past ten times apart a ratio reads as a multiple — "5,620× the p50 latency of" — and never
# as a percentage: "561991 % higher" is a figure nobody reads, and "100 % slower (CI
# 100–100 %)" rounds away what the multiple says. So no percentage a reader sees is over
# 900 % (ten times).
TIMES = 10.0


def far(*ratios: float | None) -> bool:
    """Is any of these ratios ten times apart or more, either way (0: a side at nothing)?"""
    return any(r is not None and (r >= TIMES or r <= 1 / TIMES) for r in ratios)


def _multiple(x: float) -> str:
    """'5,620', '12', '8.2', '1.5'."""
    return f"{x:,.0f}" if x >= 10 else f"{x:.2g}"


def times(ratio: float) -> str:
    """A ratio as a multiple: '5,620×', '2.5×'; below one as a fraction: '1/120'."""
    if ratio <= 0:
        return "0×"
    return f"{_multiple(ratio)}×" if ratio >= 1 else f"1/{_multiple(1 / ratio)}"


def signed(ratio: float | None) -> str:
    """A change as a signed percentage, '+3.1 %', '−45.0 %'; ten times apart or more, a
    multiple ('51×', '1/120')."""
    if ratio is None:
        return "?"
    if far(ratio):
        return times(ratio)
    return f"{(ratio - 1) * 100:+.1f} %".replace("-", "−")


def article(words: str) -> str:
    """'a' or 'an' before `words` that begin with a figure as it is read aloud: an 8 % …, an
    11 % …, an 18,000 … (eight, eleven, eighteen …), a 58 % …."""
    head = words.split(" ", 1)[0].split(".", 1)[0]
    group = head.split(",", 1)[0]
    return "an" if group[:1] == "8" or group in ("11", "18") else "a"


def level(c: stats.Comparison) -> str:
    """The interval's level in words: '95 %', '99.6 %' (Holm's level: stats.adjust)."""
    return f"{c.confidence * 100:.3g} %"


def _ci_pct(c: stats.Comparison) -> str:
    """The CI of the change, in the headline's direction and form: '51–66 %', or as
    multiples where the headline is one: '3,000–9,000×', '1/200–1/80'."""
    assert c.ci_low is not None and c.ci_high is not None, "a headline with a change has its interval"
    return ci_change(c.ratio, c.ci_low, c.ci_high)


def ci_change(ratio: float | None, ci_low: float, ci_high: float) -> str:
    """An interval of a ratio as its headline reads: a change in percent ('51–66 %'), or
    — ten times apart or more anywhere in it — multiples ('3,000–9,000×', '1/200–1/80')."""
    if far(ratio, ci_low, ci_high):
        lo, hi = sorted((ci_low, ci_high))
        if lo >= 1:
            return f"{_multiple(lo)}–{times(hi)}"
        return f"{times(lo)}–{times(hi)}"
    lo_pct, hi_pct = sorted((abs(ci_low - 1) * 100, abs(ci_high - 1) * 100))
    return f"{lo_pct:.0f}–{hi_pct:.0f} %"


def headline(v: Verdict, band: float, self_comparison: bool = False) -> str:
    """`self_comparison`: the sides are two conditions of one stack (ramps, backgrounds)."""
    c = v.comparison
    runs = f"{c.n_b} vs {c.n_a} runs"  # candidate vs baseline, in the sentence's order
    kind = v.kind
    if kind in verdicts_mod.FAILURE_KINDS:
        return _failed(v, self_comparison)
    if kind == verdicts_mod.NOT_SEPARABLE:
        return (f"{v.candidate} vs {v.baseline}: {_at_limit(v)} at the generator's limit: not separable on this "
                f"machine (add a core, or a client host) (measured {signed(c.ratio)}, CI {signed(c.ci_low)} to "
                f"{signed(c.ci_high)}, {runs})")
    if kind == verdicts_mod.NOT_RESOLVABLE:
        return f"{v.candidate} vs {v.baseline}: {unresolved(v)} (measured {signed(c.ratio)}, {runs})"
    if kind in (verdicts_mod.AT_LEAST_HIGHER, verdicts_mod.AT_LEAST_LOWER):
        bounded = v.candidate if kind == verdicts_mod.AT_LEAST_HIGHER else v.baseline
        return (f"{v.candidate} {_comparative(v, at_least=True)} {v.baseline} ({level(c)} CI {_ci_pct(c)}, {runs}{p_text(c)}; "
                f"{bounded}'s runs at the generator's limit: a lower bound)")
    return _stated(v, band, runs) + _bound_note(v)


def unresolved(v: Verdict) -> str:
    """Why a throughput comparison has no verdict at this resolution, in words: "throughput
    not resolvable with 2.0 responses a client in the window (one response is 3.1 % of
    it)"."""
    base, cand = v.baseline_side, v.candidate_side
    assert base is not None and cand is not None  # decided from both sides
    coarser = cand if cand.step_per_s >= base.step_per_s else base
    unit = "pages" if coarser.page_mode else "responses"
    per = "" if coarser.per_client is None else f" with {coarser.per_client:.1f} {unit} a client in the window"
    share = coarser.step_share
    step = (f"one of them is {share:.1%} of {coarser.label}'s figure" if share is not None
            else f"one of them is {coarser.step_per_s:.2g}/s")
    return f"{v.metric.label} not resolvable{per} ({step}: a longer window would settle it)"


def _bound_note(v: Verdict) -> str:
    """A throughput line the statistics decided while a side's runs were lower bounds
    says so: what more runs may settle is a lower bound."""
    base, cand = v.baseline_side, v.candidate_side
    if v.metric.key != "throughput" or base is None or cand is None or not (base.bound or cand.bound):
        return ""
    return f"; {_at_limit(v)}'s runs at the generator's limit: a lower bound"


def _stated(v: Verdict, band: float, runs: str) -> str:
    """The statistics' own verdict in words."""
    c = v.comparison
    if c.verdict == stats.Verdict.INSUFFICIENT:
        return f"{v.candidate} vs {v.baseline}: no verdict ({runs}; {_why_not(v)})"
    if c.verdict == stats.Verdict.EQUIVALENT:
        return (f"{v.candidate} and {v.baseline} are equivalent in {v.metric.label} ({signed(c.ratio)}, "
                f"CI {signed(c.ci_low)} to {signed(c.ci_high)}, within ±{band:.0%}; {runs})")
    if c.verdict == stats.Verdict.NO_DIFFERENCE:
        if v.lost_to_holm:
            return (f"{v.candidate} vs {v.baseline}: {signed(c.ratio)} in {v.metric.label} ({level(c)} CI "
                    f"{signed(c.ci_low)} to {signed(c.ci_high)}, {runs}), not significant after Holm's adjustment "
                    f"(p = {c.p_adjusted:.3g}; {c.p_value:.2g} alone): more runs would settle it")
        return (f"{v.candidate} vs {v.baseline}: no significant difference in {v.metric.label} "
                f"({signed(c.ratio)}, CI {signed(c.ci_low)} to {signed(c.ci_high)}, {runs})")
    return f"{v.candidate} {_comparative(v)} {v.baseline} ({level(c)} CI {_ci_pct(c)}, {runs}{p_text(c)})"


def _why_not(v: Verdict) -> str:
    """What stands between this comparison and a verdict: the runs missing, and how many."""
    parts = []
    for label, n, more, excluded in v.short:
        need = f"{more} more valid run(s) of {label} needed"
        codes = ", ".join(sorted(set(excluded)))
        if n == 0 and excluded:
            parts.append(f"{need}: all {len(excluded)} so far were invalid measurements ({codes}), and more runs "
                         "will not help until the cause is fixed")
        elif excluded:
            parts.append(f"{need} ({len(excluded)} invalid: {codes})")
        else:
            parts.append(need)
    if parts:
        return "; ".join(parts)
    base = v.baseline_side
    if base is not None and base.failed:
        return (f"{base.label} served nothing in {base.failed} of its {base.runs} runs (it failed the load in "
                "them): a ratio to nothing is not computable")
    return "the ratio is not computable (a median of 0)"


def _ms(us: float | None) -> str:
    """A latency in a sentence: '0.18 ms', '6.7 ms', '24 ms', '3.0 s'."""
    if us is None:
        return "-"
    if us >= 1e6:
        return f"{us / 1e6:.1f} s"
    if us < 1000:
        return f"{us / 1000:.2f} ms"
    return f"{us / 1000:.1f} ms" if us < 10_000 else f"{us / 1000:,.0f} ms"


def _range(f: FailureSummary) -> str:
    if f.count_low is None:
        return ""
    return f"{f.count_low:,}" if f.count_low == f.count_high else f"{f.count_low:,}–{f.count_high:,}"


def _seconds(us: int) -> str:
    return f"{round(us / 1e6, 1):g} s"


def _waited(f: FailureSummary) -> str:
    """" in 11 s (past the 10 s the engine waits for a response)", " in 1 s", or nothing
    when the window was not recorded."""
    if f.window_high_us is None or f.window_low_us is None:
        return ""
    lo, hi = _seconds(f.window_low_us), _seconds(f.window_high_us)
    window = f" in {lo}" if lo == hi else f" in {lo.removesuffix(' s')}–{hi}"
    if f.past_deadline and f.deadline_us is not None:
        return f"{window} (past the {_seconds(f.deadline_us)} the engine waits for a response)"
    return window


def _failure_words(f: FailureSummary, side: Side, every: tuple[FailureSummary, ...]) -> str | None:
    """One way of failing, in words; None when another one already says it."""
    codes = {x.code: x for x in every}
    count = _range(f)
    if f.code == "unserved":
        who = "measured visitors" if side.beside else "connections" if side.page_mode else "clients"
        if f.of and f.count_low == f.of:
            # nobody served in any of its failed runs: how long they waited says why it is no "slower"
            text = f"0 of {f.of:,} {who} served{_waited(f)}"
        else:
            text = (f"{count} of {f.of:,} {who}" if count and f.of else f"{count} {who}" if count else who) \
                + " unserved for the whole window"
        if side.beside:
            others = " and ".join(f"{n} {name} visitors" for name, n in side.beside)
            busy = side.busy_workers
            if busy is not None and f.count_low is not None and f.count_low == f.of:
                # every measured visitor waited: the workers busy were the others'
                text += f" while {others} held {busy:,.0f} of its workers"
            elif busy is not None:
                text += f" while {others} were beside them ({busy:,.0f} workers busy at once)"
            else:
                text += f" while {others} were beside them"
        return text
    if f.code == "target_down":
        return "no connection to it succeeded"
    if f.code == "no_requests":
        return "nothing completed"
    if f.code == "requests_failed":
        share = f"{f.share:.1%}" if f.share is not None else "over 1 %"
        return f"{share} of requests failed" + (f" ({count} of {f.of:,})" if count and f.of else "")
    if f.code == "non_2xx":
        share = f"{f.share:.1%}" if f.share is not None else "over 1 %"
        return f"{share} of its answers were errors (non-2xx)"
    if f.code == "not_sent":
        return (f"{count} of {f.of:,} due requests never sent" if count and f.of else "due requests never sent") \
            + " (every connection was waiting on it)"
    if f.code == "server_died":
        if f.process and f.exit_status == -9 and "oom_killed" in codes:
            return f"the OOM killer took {f.process}"
        if f.process:
            return f"{f.process} died under the load (exit status {f.exit_status})"
        return "its server died under the load"
    if f.code == "oom_killed":
        died = codes.get(SERVER_DIED)
        if died and died.process and died.exit_status == -9 and f.count_high == 1:
            return None  # "the OOM killer took mariadbd" said it
        n = count or "processes"
        return f"the OOM killer took {n} process{'es' if count != '1' else ''}" + (" in all" if died else "")
    return f.code


def how(side: Side) -> str:
    """How a side failed the load, from its outcomes: "16 of 16 clients unserved for the
    whole window, the OOM killer took mariadbd"; each way with the share of runs it
    happened in when not all of the failed ones."""
    parts = []
    for f in side.failures:
        words = _failure_words(f, side, side.failures)
        if words:
            parts.append(words + (f" (in {f.runs} of {side.failed} failed runs)" if f.runs < side.failed else ""))
    return ", ".join(parts) or "it failed the load"


def _fails(side: Side, short: bool = False) -> str:
    """"A fails this load: how" — or, beside another failing side, "A: how". How many of
    its runs failed is said unless all did and they were enough for any verdict."""
    runs = (f" in {side.failed} of {side.runs} run{'s' if side.runs != 1 else ''}"
            if side.failed < side.runs or side.runs < stats.MIN_RUNS else "")
    if short:
        return f"{side.label}{f' (fails{runs})' if runs else ''}: {how(side)}"
    return f"{side.label} fails this load{runs}: {how(side)}"


def _served(side: Side) -> str:
    unit = "page views/s" if side.page_mode else "req/s"
    rate = ("at least " if side.bound else "") + f"{format_rate(side.throughput)} {unit}"
    notes = []
    if side.p99_us is not None:
        notes.append(f"p99 {'≥ ' if side.p99_floor else ''}{_ms(side.p99_us)}")
    if side.failed:
        notes.append(f"failed the load in {side.failed} of {side.runs} runs")
    return f"{side.label} served {rate}" + (f" ({'; '.join(notes)})" if notes else "")


def _failed(v: Verdict, self_comparison: bool) -> str:
    base, cand = v.baseline_side, v.candidate_side
    assert base is not None and cand is not None  # a failure kind is decided from both sides
    if v.kind == verdicts_mod.NEITHER_SERVES:
        who = "neither serves this load" if self_comparison else "neither stack serves this load"
        return f"{who}: {_fails(cand, short=True)}; {_fails(base, short=True)}"
    failing, serving = (cand, base) if v.kind == verdicts_mod.CANDIDATE_FAILS else (base, cand)
    return f"{_fails(failing)}; {_served(serving)}"


def _at_limit(v: Verdict) -> str:
    """Who was at the generator's limit: "both", or one side's label."""
    base, cand = v.baseline_side, v.candidate_side
    if base is not None and cand is not None and base.bound and cand.bound:
        return "both"
    return v.candidate if cand is not None and cand.bound else v.baseline


def p_text(c: stats.Comparison) -> str:
    if c.p_adjusted is None:
        return ""
    return f", p = {c.p_adjusted:.3g}" if c.p_adjusted >= 0.001 else ", p < 0.001"


def _ratio(v: Verdict) -> float:
    """The comparison's ratio; 1.0 only when not computable (0.0 is a side that served nothing)."""
    return 1.0 if v.comparison.ratio is None else v.comparison.ratio


def _comparative(v: Verdict, at_least: bool = False) -> str:
    c = v.comparison
    return comparative(_ratio(v), v.metric.key, v.metric.label, at_least, far(c.ratio, c.ci_low, c.ci_high))


# What a multiple is of, by metric: "serves 12× the throughput of", "sustains 1/3 of the load of".
_VERB = {"throughput": "serves", "capacity": "sustains"}


def comparative(r: float, key: str, label: str, at_least: bool = False, multiple: bool | None = None) -> str:
    """The verb phrase between the candidate and the baseline: "is 58 % faster than", "has
    an 89 % higher p50 latency than", "uses 0.61x the CPU per request of"; ten times apart
    or more (or `multiple`: the interval is), a multiple: "serves 12× the throughput of",
    "has 5,620× the p50 latency of", "serves 1/120 of the throughput of" — "at least" / "at
    most" where a side was a lower bound."""
    what = label.replace("peak ", "")
    if far(r) if multiple is None else multiple:
        bound = ("at least " if r > 1 else "at most ") if at_least else ""
        verb = _VERB.get(key, "has" if key.startswith("latency") else "uses")
        noun = "the load" if key == "capacity" else f"the {what}"
        return f"{verb} {bound}{times(r)} {noun} of" if r >= 1 else f"{verb} {bound}{times(r)} of {noun} of"
    if key == "throughput":
        return f"is {'at least ' if at_least else ''}{_pct(r)} {'faster' if r > 1 else 'slower'} than"
    if key == "capacity":
        return f"sustains {_pct(r)} {'more' if r > 1 else 'less'} load than"
    if key.startswith("latency"):
        change = f"{_pct(r)} {'higher' if r > 1 else 'lower'}"
        return f"has {article(change)} {change} {label} than"
    return f"uses {r:.2f}x the {what} of"


def aside(v: Verdict) -> str:
    """A secondary metric, shortly: 'uses 0.61x the CPU per request', 'has an 89 % higher
    p50 latency', 'has 5,620× the p50 latency'; a latency that was a floor on either side
    (clients still waiting when the window ended: outcomes.py) as the two figures, 'has a
    p50 latency of ≥ 1.0 s against 0.2 ms' — its ratio is no measure."""
    r = _ratio(v)
    key, label = v.metric.key, v.metric.label
    if key.startswith("latency"):
        bounded = _latency_floors(v)
        if bounded is not None:
            return f"has a {label} of {bounded}"
    phrase = comparative(r, key, label, multiple=far(r))
    return phrase.removesuffix(" than").removesuffix(" of")


def _latency_floors(v: Verdict) -> str | None:
    """"≥ 1.0 s against 0.2 ms": a latency verdict's two medians where either is a floor;
    None when neither is (or a side is not known)."""
    base, cand = v.baseline_side, v.candidate_side
    if base is None or cand is None:
        return None
    p50 = v.metric.key == "latency_p50"
    (bv, bf), (cv, cf) = ((s.p50_us, s.p50_floor) if p50 else (s.p99_us, s.p99_floor) for s in (base, cand))
    if not (bf or cf) or bv is None or cv is None:
        return None
    return f"{'≥ ' if cf else ''}{_ms(cv)} against {'≥ ' if bf else ''}{_ms(bv)}"


def asides(vs: Verdicts, v: Verdict) -> list[Verdict]:
    """The other metrics worth a word beside a throughput verdict (Verdicts.asides decides)."""
    return vs.asides(v)


# The test a comparison made (stats.Comparison.test), in words; None: a comparison from
# before the test was recorded.
TESTS = {"welch_log": "Welch's t on the logs", "mann_whitney": "Mann–Whitney U", None: "Mann–Whitney U"}


def notes(vs: Verdicts) -> list[str]:
    """How to read the verdicts above: the interval, the test, lower bounds, the runs
    left out (the terminal and the HTML report say the same)."""
    through = vs.for_metric("throughput")
    n = vs.family_sizes.get(verdicts_mod.THROUGHPUT.key, 0)
    out = ["CI: Welch's interval of the ratio of geometric means (t on the logs; the ratio of medians and a "
           "bootstrap interval where a run served nothing), at the level of Holm's decision — 95 % alone or when "
           "the whole family is decided, up to 1 − 0.05/k: every interval that excludes 0 % has a verdict; "
           "the run is the unit"]
    if n > 1:
        tests = dict.fromkeys(TESTS.get(getattr(v.comparison, "test", None), TESTS[None]) for v in through
                              if v.comparison.p_value is not None and v.kind not in verdicts_mod.FAILURE_KINDS)
        untested = any(v.kind in verdicts_mod.FAILURE_KINDS for v in through)
        out.append(f"p-values: {' or '.join(tests)}, Holm–Bonferroni-adjusted over the {n} throughput comparisons"
                   + (" tested (those a failed load decided are not)" if untested else ""))
    if any(v.kind in verdicts_mod.FAILURE_KINDS for v in through):
        out.append("fails this load = most of its valid runs left clients unserved, failed requests or answered "
                   "errors beyond 1 %, lost its server or processes to the OOM killer, or left due requests unsent: "
                   "a result, not a void — such runs count with what they served")
    if any(v.kind in verdicts_mod.BOUND_KINDS for v in through):
        out.append("at the generator's limit = the load engine's thread was busy ≥ 90 % while the server's cores "
                   "were busy ≥ 90 % too: the figure is a lower bound of what the stack serves, its latency left out")
    if vs.excluded:
        listed = ", ".join(f"{k} ×{c}" for k, c in vs.excluded_by_reason().items())
        cells = "; ".join(f"{e.side or e.stack_label} {question_name(e.question, e.within)} #{e.seq}" for e in vs.excluded[:3])
        more = f" (+{len(vs.excluded) - 3} more)" if len(vs.excluded) > 3 else ""
        out.append(f"left out of verdicts: {len(vs.excluded)} invalid measurement(s) ({listed}): {cells}{more}")
    return out


def fallback_note(v: Verdict) -> str:
    """" (Apache mod_php: h2 → http/1.1)" when a side asked for HTTP/2 answered in
    HTTP/1.1: the comparison stands (it is what each stack does when asked), and says so."""
    said = [f"{s.label}: {s.fallback}" for s in (v.candidate_side, v.baseline_side) if s is not None and s.fallback]
    return f" ({'; '.join(said)})" if said else ""
