"""A run's warnings (unit): decided once in analysis/run_warnings.py — the noisy machine's
threshold, the caveats' groups and what they add (figures that differ, the runs that
stay valid as lower bounds), why a run has no verdicts — and worded once in
report/words/warnings.py, the same sentence in the terminal and in the HTML report."""

from __future__ import annotations

import html
import io
import re

from stackbench.analysis import run_warnings
from stackbench.analysis.run import analyze
from stackbench.report.html import answers
from stackbench.report.html.colors import Palette
from stackbench.report.html.figure import Context
from stackbench.report.text import run_report
from stackbench.report.words import warnings as words
from cells import stored_cell, stored_run

WINDOW_US = 2_000_000
ONE_CORE = {"server_cpus": [0], "engine_cpus": [1], "server_host": None, "shared": False}


def cell(seq: int, label: str = "nginx", *, rep: int = 0, caveats=(), busy: float = 0.5, rps: float = 1000.0):
    return stored_cell(seq=seq, repetition=rep, stack_label=label, requests_per_s=rps, requests_completed=int(rps * 2),
                       requests_failed=0, non_2xx=0, latency_p50_us=800, latency_p99_us=3000,
                       connections_measured=16, connections_without_response=0, duration_us=WINDOW_US,
                       cpu_total_us=int(busy * WINDOW_US), cpu_window_us=WINDOW_US, pinning=ONE_CORE,
                       caveats=list(caveats))


def terminal(a) -> str:
    out = io.StringIO()
    run_report.render(a, out)
    return " ".join(out.getvalue().split())  # the terminal wraps prose: compare the words


def page(a) -> str:
    return html.unescape(re.sub(r"<[^>]+>", " ", answers.render(Context(a, None, Palette(a.stack_labels)))))


def test_the_noisy_machine_is_decided_in_analysis_and_worded_alike_in_both_reports():
    assert run_warnings.noisy_machine(stored_run(environment={"cpu_noise_cv": run_warnings.NOISY_CV})) is None
    assert run_warnings.noisy_machine(stored_run(environment={})) is None
    run = stored_run(environment={"cpu_noise_cv": 0.12})
    a = analyze(run, [cell(0), cell(1, "apache")])
    noisy = a.warnings.machine
    assert noisy == run_warnings.NoisyMachine(0.12) and noisy.blurred == 0.24
    said = words.noisy(noisy)
    assert "a CV of 12%" in said and "smaller than about 24%" in said
    assert said in terminal(a) and " ".join(said.split()) in " ".join(page(a).split())


def test_a_caveat_reads_the_same_in_both_reports_with_its_first_figures():
    unserved = [{"code": "clients_unserved", "params": {"without_response": n, "connections": 16}} for n in (3, 8)]
    a = analyze(stored_run(), [cell(0, caveats=[unserved[0]]), cell(1, rep=1, caveats=[unserved[1]])])
    (group,) = a.warnings.caveats
    assert group.varies and group.engine_bound is None
    said = words.caveat(group)
    assert said.startswith("3 of 16 connections got no response") and said.endswith("(figures of the first of 2 runs)")
    assert said in terminal(a) and said in page(a)


def test_runs_at_the_engines_limit_with_the_server_busy_stay_valid_as_lower_bounds():
    saturated = {"code": "engine_saturated", "params": {"thread": 0, "busy": 0.93}}
    a = analyze(stored_run(), [cell(0, caveats=[saturated], busy=0.96), cell(1, rep=1, caveats=[saturated], busy=0.5)])
    (group,) = a.warnings.caveats
    assert group.engine_bound == run_warnings.EngineBound((0.96,), 2)
    said = words.caveat(group)
    assert "in 1 of the 2 runs the server's cores were busy too (96%)" in said
    assert said in terminal(a) and said in page(a)


def test_a_run_without_verdicts_says_why_and_what_would_give_them():
    one = analyze(stored_run(), [cell(0), cell(1, "apache")])
    nv = one.no_verdicts
    assert nv == run_warnings.NoVerdicts(False, 1, "nginx") and not nv.enough
    assert words.plan_lines(nv) == ['baseline = "nginx"', 'repetitions = 5        # or "auto": more runs until the CI '
                                                           'is narrow']
    assert words.show_now(nv, 1) is None
    assert words.no_verdicts_why(nv) in page(one)
    five = [cell(2 * i + j, label, rep=i) for i in range(5) for j, label in enumerate(("nginx", "apache"))]
    enough = analyze(stored_run(), five).no_verdicts
    assert enough.enough and words.show_now(enough, 1) == "stackbench show 1 --baseline nginx"
    assert analyze(stored_run(plan_checked={"baseline": "nginx"}), five).no_verdicts is None
    short = analyze(stored_run(plan_checked={"baseline": "nginx"}), [cell(0), cell(1, "apache")]).no_verdicts
    assert short.baseline_named and "needs at least 5 valid runs a side" in words.no_verdicts_why(short)
