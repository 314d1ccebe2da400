"""The answer that opens `show` and the HTML report (unit): one sentence per thing the run
asked — which side serves more, by how much, at what cost — worded once
(report/words/answer.py) and said the same by both reports; the workloads it names,
one line each."""

from __future__ import annotations

import html
import io
import random
import re

from stackbench.analysis.run import analyze
from stackbench.report.html import answers as html_answers
from stackbench.report.html.colors import Palette
from stackbench.report.html.figure import Context
from stackbench.report.text import run_report
from stackbench.report.words import answer
from cells import stored_cell, stored_run

MIB = 1 << 20


def cells(sides: dict[str, tuple[float, float, float]], *, levels=(16,), runs=6, workload="php-hello",
          per_level=None, seed=1):
    """Interleaved repetitions of each side: (req/s, CPU µs a request, memory MiB), ±1 %
    noise; `per_level`: {concurrency: {label: req/s factor}}."""
    rng = random.Random(seed)
    out, seq = [], 0
    for rep in range(runs):
        for c in levels:
            for label, (rps, cpu, mem) in sides.items():
                rps = rps * (per_level or {}).get(c, {}).get(label, 1.0) * rng.gauss(1, 0.01)
                done = int(rps * 2)
                out.append(stored_cell(
                    id=seq + 1, seq=seq, repetition=rep, stack_label=label, workload=workload, concurrency=c,
                    requests_per_s=rps, latency_mean_us=1e6 / rps, latency_p50_us=int(1e6 / rps),
                    latency_p99_us=int(3e6 / rps), requests_failed=0, non_2xx=0, requests_completed=done,
                    connections_measured=c, connections_without_response=0,
                    mem_rss_peak_bytes=int(mem * MIB * rng.gauss(1, 0.01)), mem_peak_bytes=int(mem * 1.3 * MIB),
                    cpu_total_us=int(done * cpu * rng.gauss(1, 0.01)), engine_cpu_us=1, procs_max=3, threads_max=3))
                seq += 1
    return out


def analysis(cs, baseline: str | None = "nginx"):
    run = stored_run(plan_checked={"baseline": baseline} if baseline else None,
                     plan={"baseline": baseline} if baseline else {})
    return analyze(run, cs)


def test_a_side_ahead_is_named_with_how_much_and_what_it_costs():
    a = analysis(cells({"nginx": (1000, 120, 18), "apache": (1540, 75, 18), "apache All": (400, 90, 18)}))
    (said,) = answer.sentences(a)
    assert said.startswith("php-hello c=16 keep-alive: apache serves 54 % more requests a second than nginx"), said
    assert "using 0.62× the CPU per request" in said and " memory (18.0" in said  # its median, whatever the test
    # behind the baseline: the verdict's own direction, and its cost too (cache-front asks
    # what a cache costs when it cannot cache: the side behind answers it)
    assert re.search(r"; apache All 60 % fewer, using 0\.7\d× the CPU per request, with about the same memory "
                     r"\(18\.\d–18\.\d MiB\)\.$", said), said


def test_the_baseline_ahead_of_every_side_leads_and_a_big_ratio_reads_as_a_multiple():
    a = analysis(cells({"nginx": (1000, 100, 14), "apache All": (400, 300, 18)}))
    (said,) = answer.sentences(a)
    assert said.startswith("php-hello c=16 keep-alive: nginx serves 2.5× as many requests a second as apache All, "
                           "using 0.33× the CPU per request and 0.78× the memory"), said


def test_a_difference_no_test_settled_is_called_no_one_s_win():
    a = analysis(cells({"nginx": (1000, 100, 18), "apache": (1003, 100, 18)}))
    (said,) = answer.sentences(a)
    assert said.startswith("php-hello c=16 keep-alive: no stack serves clearly more requests a second than nginx; "
                           "apache: "), said
    assert "more" not in said.split("; ", 1)[1]


def test_a_side_the_same_in_throughput_still_says_what_it_costs():
    # http2 --quick, 100 ms away: Apache the same within ±2 % in pages, at 2.5× the CPU and 3.8× the memory
    a = analysis(cells({"nginx": (1000, 100, 15), "apache": (1000, 250, 57)}))
    (said,) = answer.sentences(a)
    assert re.search(r"; apache: (the same within ±\d+%|no significant difference), using 2\.\d\d× the CPU per "
                     r"request and 3\.\d\d× the memory\.$", said), said


def test_several_levels_make_one_sentence_that_says_where_each_side_wins():
    a = analysis(cells({"nginx": (1000, 100, 18), "apache": (1000, 100, 18)}, levels=(1, 16),
                       per_level={1: {"apache": 1.5}, 16: {"apache": 0.7}}))
    (said,) = answer.sentences(a)
    assert re.fullmatch(r"php-hello keep-alive, 2 levels \(c=1 to c=16\): in requests a second against nginx, apache serves (49|50|51) % "
                        r"more at c=1, (29|30|31) % fewer at c=16\.", said), said


def test_over_several_levels_a_side_says_what_it_costs_too():
    # memory --quick asks memory over c=1 and c=64: the answer said requests a second alone
    a = analysis(cells({"nginx": (1000, 100, 12), "apache": (1000, 100, 36)}, levels=(1, 64)))
    (said,) = answer.sentences(a)
    assert re.search(r"apache: no clear difference at any level, using (2\.9\d|3\.0\d)(–(2\.9\d|3\.0\d))?× the memory\.$", said), said
    a = analysis(cells({"nginx": (1000, 100, 12), "apache": (1000, 100, 12)}, levels=(1, 64)))
    (said,) = answer.sentences(a)
    assert said.endswith("apache: no clear difference at any level."), said  # nothing notable: nothing said


def test_a_run_without_verdicts_says_why_and_what_it_measured():
    a = analysis(cells({"nginx": (1000, 100, 18), "apache": (1500, 100, 18)}, runs=1), baseline=None)
    (said,) = answer.sentences(a)
    assert said.startswith("No verdicts: its plan names no baseline stack") and "untested (medians)" in said
    assert re.search(r"php-hello c=16 keep-alive: apache 1,[45]\d\d req/s, nginx [\d,]{3,5} req/s\.$", said), said


def test_both_reports_open_with_the_same_answer_and_name_the_workloads():
    a = analysis(cells({"nginx": (1000, 120, 18), "apache": (1540, 75, 18)}, workload="php-100k"))
    out = io.StringIO()
    run_report.render(a, out)
    text = out.getvalue()
    (said,) = answer.sentences(a)
    assert text.index("the answer") < text.index("verdicts (baseline: nginx)")
    assert said in " ".join(line.strip() for line in text.splitlines())  # wrapped, word for word
    assert "  php-100k: a PHP script printing ~100 KB" in text
    assert "c=N: N clients at once" in text
    page = html_answers.the_answer(Context(a, None, Palette(a.stack_labels)))  # type: ignore[arg-type]
    plain = html.unescape(re.sub(r"<[^>]+>", "", page))
    assert said in plain and "<strong>php-100k c=16 keep-alive:</strong>" in page
    assert "<code>php-100k</code>: a PHP script printing ~100 KB" in page


def test_every_workload_has_a_line_and_an_unknown_one_says_so():
    from stackbench import workloads
    from stackbench.planning import described

    for wid in workloads.IDS:
        line = described.workload(wid)
        assert line and not line.startswith("PHP:"), wid  # a sentence a reader takes in, not code
    assert described.workload("gone") is None
    assert described.workload("app", {"app": {"docroot": "/srv/site"}}) == \
        "your own PHP application at /srv/site (the plan's [app] table)"


def test_two_capacities_without_an_edge_say_a_longer_search_not_more_runs_would_settle_them():
    from stackbench.analysis import capacity_results, stats
    from stackbench.analysis import verdicts as verdicts_mod
    from stackbench.analysis.questions import Question

    # every probe of both searches missed (a quarter of a core below the target): bounds only
    c = capacity_results._on_probes(None, None, stats.DEFAULT_EQUIVALENCE)
    v = verdicts_mod.Verdict(Question("wordpress-home", 0, True), capacity_results.CAPACITY, "A", "B", c, (), ())
    assert answer._open(v).startswith("no verdict (a capacity is a bound, not an estimate")


def test_over_levels_a_level_the_outcomes_decided_is_said_so_never_as_a_ratio():
    # ramp-direction --quick: prefork served its few clients at c=256 at twice nginx's
    # rate while 228 of 256 waited — the answer read "-98 % fewer at c=256 up"
    cs = [c for c in cells({"nginx": (1000, 100, 18), "apache": (1500, 60, 18)}, levels=(1, 256))
          if not (c.stack_label == "apache" and c.concurrency == 256)]
    cs += [stored_cell(id=1000 + rep, seq=1000 + rep, repetition=rep, stack_label="apache", workload="php-hello",
                       concurrency=256, requests_per_s=2000.0, latency_mean_us=500.0, latency_p50_us=400,
                       latency_p99_us=900, requests_failed=0, non_2xx=0, requests_completed=4000,
                       connections_measured=256, connections_without_response=230, mem_rss_peak_bytes=18 * MIB,
                       mem_peak_bytes=24 * MIB, cpu_total_us=4000 * 60, engine_cpu_us=1, procs_max=3, threads_max=3,
                       caveats=[{"code": "clients_unserved", "params": {"without_response": 230, "connections": 256}}])
           for rep in range(6)]
    (said,) = answer.sentences(analysis(cs))
    assert re.search(r"apache serves \d+ % more at c=1, fails the load at c=256", said), said
    assert " -" not in said and "fewer" not in said, said


def test_a_cost_ten_times_apart_is_said_as_the_verdicts_say_it():
    # static --quick: Jetty "using … 18.01× the memory" in the answer, "18×" in its verdict
    a = analysis(cells({"nginx": (1000, 100, 10), "h2o": (1800, 55, 9), "jetty": (200, 600, 180)}))
    (said,) = answer.sentences(a)
    assert re.search(r"; jetty 80 % fewer, using 6\.\d\d× the CPU per request and 1[78]× the memory\.$", said), said
