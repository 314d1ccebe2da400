"""What a run prints when it ends (unit): the answers first — every block of verdicts, one
line on how to read them, or why there are none — then the tables, each with one short
legend line; every legend in full, each once, with --explain; one line at the end
pointing to the rest."""

from __future__ import annotations

import io
import random

from stackbench.analysis.run import analyze
from stackbench.report.text import legend, run_report
from cells import stored_cell, stored_run

TLS = {"protocol": "https", "handshake": "keep-alive"}


def runs(label: str, rps: float, *, start: int, seed: int, n: int = 5, **columns) -> list:
    rng = random.Random(seed)
    out = []
    for rep in range(n):
        value = rps * rng.gauss(1, 0.01)
        out.append(stored_cell(seq=start + 4 * rep, repetition=rep, stack_label=label, requests_per_s=value,
                               latency_p50_us=int(1e6 / value), latency_p99_us=int(3e6 / value),
                               requests_completed=int(value * 2), requests_failed=0, non_2xx=0,
                               connections_measured=16, connections_without_response=0, **columns))
    return out


def cells() -> list:
    """Two stacks, each in clear text and over TLS: verdicts between the stacks and, on
    each stack, HTTPS against HTTP — two blocks of answers."""
    return (runs("nginx", 1000, start=0, seed=1) + runs("apache", 1500, start=1, seed=2)
            + runs("nginx", 800, start=2, seed=3, **TLS) + runs("apache", 900, start=3, seed=4, **TLS))


def show(cs: list, baseline: str | None = "nginx", **kw) -> str:
    run = stored_run(plan_checked={"baseline": baseline} if baseline else None)
    out = io.StringIO()
    run_report.render(analyze(run, cs), out, **kw)
    return out.getvalue()


def test_the_answers_come_before_the_tables_and_say_once_how_to_read_them():
    text = show(cells())
    lines = text.splitlines()
    first_verdict = lines.index("verdicts (baseline: nginx)")
    assert first_verdict < text.count("\n") and "over repetitions (medians of valid runs)" in lines
    assert first_verdict < lines.index("over repetitions (medians of valid runs)")
    assert lines.index("over repetitions (medians of valid runs)") > next(
        i for i, x in enumerate(lines) if x.startswith("what TLS costs each stack"))
    assert text.count(legend.VERDICTS) == 1 and "CI: Welch's interval" not in text
    assert lines[-1] == "(`stackbench show 1 --explain`: every legend in full; `stackbench show 1 --all`: every repetition)"


def test_a_tables_legend_is_one_or_two_lines():
    text = show(cells())
    table = text.split("over repetitions (medians of valid runs)\n", 1)[1].split("\n\n(", 1)[0]
    legend_lines = table[table.index("vs base = "):].splitlines()
    assert 1 <= len(legend_lines) <= 2 and all(len(x) <= legend.WIDTH for x in legend_lines)


def test_explain_prints_every_note_in_full_each_once():
    text = show(cells(), explain=True)
    assert text.count("CI: Welch's interval of the ratio of geometric means") == 1  # two blocks, one note
    assert "vs base = throughput against the baseline: a significant difference in %" in text
    assert legend.VERDICTS not in text and "--explain" not in text
    assert text.rstrip().endswith("(`stackbench show 1 --all`: every repetition)")


def test_a_run_without_verdicts_says_why_among_the_answers():
    text = show(runs("nginx", 1000, start=0, seed=1, n=1) + runs("apache", 1500, start=1, seed=2, n=1),
                baseline=None)
    assert text.index("no verdicts between stacks: its plan names no baseline stack") < text.index("\n#")
    assert '`baseline = "nginx"`' in " ".join(text.split()) and '`repetitions = 5`' in " ".join(text.split())


def test_prose_is_never_wrapped_between_a_figure_and_its_unit():
    # keep-alive --quick's answer broke "lighttpd + FPM 20" / "% more" across two lines
    for pad in range(0, 40):
        text = "x" * pad + " " + "word " * 20 + "and lighttpd + FPM 20 % more, at 3.4 ms and 17.4 MiB, 9,948 req/s; " * 3
        wrapped = legend.wrap(text)
        assert " ".join(wrapped.split()) == " ".join(text.split())  # nothing lost or added
        lines = wrapped.splitlines()
        assert all(len(x) <= legend.WIDTH for x in lines)
        assert not any(x.lstrip().startswith(("%", "ms", "MiB", "req/s")) for x in lines[1:]), wrapped
        assert "\u00a0" not in wrapped


def test_the_busy_gloss_says_nginx_counts_connections_as_the_full_note_does():
    # slow-clients --quick: "busy 211" for nginx + FPM's 16 workers under "workers busy at once"
    from stackbench.report.words.classes import BUSY_NOTE
    assert "nginx" in legend.GLOSS["busy"] and "connections" in legend.GLOSS["busy"]
    assert "nginx connections" in BUSY_NOTE and len(legend.GLOSS["busy"]) <= legend.WIDTH
