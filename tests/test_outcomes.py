"""Each repetition's outcome: an invalid measurement (and why) or a valid one
that served the load or failed it (and how); the engine gate looking at the server's
side too; and the verdicts the outcomes decide — fails this load, neither serves it, at
least faster (a lower bound), not separable — in words, in the summary and in export."""

from __future__ import annotations

import io
import json
import random

import jsonschema
import pytest

from stackbench.analysis import outcomes, stats, summary, verdicts
from stackbench.analysis.run import analyze
from stackbench.report import export
from stackbench.report.text import run_report, table, verdicts as verdicts_text
from cells import stored_cell, stored_run

WINDOW_US = 2_000_000
ONE_CORE = {"server_cpus": [0], "engine_cpus": [1], "server_host": None, "shared": False}


def cell(*, caveats=(), busy=0.5, cores=1, rps=1000.0, unserved=0, connections=16, **columns):
    """A measured cell of a 2 s window whose server cgroup kept `busy` of its cores busy."""
    pinning = {**ONE_CORE, "server_cpus": list(range(cores))}
    defaults = dict(duration_us=WINDOW_US, requests_per_s=rps, requests_completed=int(rps * 2), requests_failed=0,
                    non_2xx=0, latency_mean_us=900.0, latency_p50_us=800, latency_p99_us=3000,
                    connections_measured=connections, connections_without_response=unserved,
                    cpu_total_us=None if busy is None else int(busy * WINDOW_US * cores), cpu_window_us=WINDOW_US,
                    pinning=pinning)
    return stored_cell(caveats=list(caveats), **{**defaults, **columns})


def caveat(code, **params):
    return {"code": code, "params": params}


SATURATED = caveat("engine_saturated", thread=0, busy=0.93)


# -- one repetition -------------------------------------------------------------------------

def test_a_plain_run_served_the_load():
    o = outcomes.of(cell())
    assert (o.kind, o.valid, o.failures, o.engine_bound) == (outcomes.SERVED, True, (), False)
    assert o.throughput == 1000.0 and (o.p50_us, o.p99_us) == (800, 3000) and o.server_busy == pytest.approx(0.5)


@pytest.mark.parametrize("busy, kind, bound", [
    (0.95, outcomes.SERVED, True),   # both at their limit: a lower bound, valid
    (0.90, outcomes.SERVED, True),   # the threshold itself counts as busy
    (0.85, outcomes.INVALID, False),  # the server had headroom: the generator's figure
    (None, outcomes.INVALID, False),  # nobody knows: invalid, as before
])
def test_the_engine_gate_looks_at_the_server_too(busy, kind, bound):
    o = outcomes.of(cell(caveats=[SATURATED], busy=busy))
    assert (o.kind, o.engine_bound) == (kind, bound)
    assert o.invalid_reasons == (() if kind == outcomes.SERVED else ("engine_saturated",))
    if bound:  # its throughput counts (a lower bound); its latency holds the generator's queueing
        assert o.throughput == 1000.0 and o.p50_us is None and o.p99_us is None


def test_the_busy_share_is_over_the_server_cores_the_cell_had():
    # a machine profile of 2 cores: 1.9 cores' worth of CPU is 95 % busy, not 190 %
    two = cell(caveats=[SATURATED], cores=2, busy=0.95)
    assert outcomes.server_busy(two) == pytest.approx(0.95) and outcomes.of(two).engine_bound
    # 0.95 of one core's time spread over two cores is headroom
    half = cell(caveats=[SATURATED], cores=2, busy=0.475)
    assert outcomes.of(half).kind == outcomes.INVALID
    assert outcomes.server_busy(cell(pinning={})) is None  # cores not recorded


@pytest.mark.parametrize("code, params, reason", [
    ("cpu_steal", {"share": 0.2}, "cpu_steal"),
])
def test_measurement_failures_are_invalid(code, params, reason):
    o = outcomes.of(cell(caveats=[caveat(code, **params)]))
    assert (o.kind, o.invalid_reasons) == (outcomes.INVALID, (reason,))


def test_a_stack_that_never_came_up_is_no_load_result():
    o = outcomes.of(stored_cell(status="failed", error="nginx exited", engine=None))
    assert (o.kind, o.invalid_reasons, o.failures) == (outcomes.INVALID, ("not_measured",), ())


def test_clients_unserved_for_the_whole_window_fail_the_load():
    c = cell(unserved=5, caveats=[caveat("clients_unserved", without_response=5, connections=16)])
    o = outcomes.of(c)
    assert o.kind == outcomes.FAILED and o.valid
    assert o.failures == (outcomes.Failure("unserved", 5, 16, 5 / 16, window_us=WINDOW_US),)


def test_every_client_unserved_is_one_failure_and_its_latency_the_window():
    c = cell(rps=0.0, requests_completed=0, unserved=16, latency_p50_us=None, latency_p99_us=None,
             caveats=[caveat("no_response_all", connections=16), caveat("no_requests")])
    o = outcomes.of(c)
    assert [f.code for f in o.failures] == ["unserved"]  # "nothing completed" goes without saying
    assert o.throughput == 0.0  # what it delivered: never None
    assert (o.p50_us, o.p99_us, o.p50_floor, o.p99_floor) == (WINDOW_US, WINDOW_US, True, True)


def test_a_quantile_among_the_unserved_is_at_least_the_window():
    # 100 requests completed, 2 clients unserved: the p99's rank 0.99 × 102 = 100.98 > 100
    c = cell(rps=50.0, requests_completed=100, unserved=2,
             caveats=[caveat("clients_unserved", without_response=2, connections=16)])
    o = outcomes.of(c)
    assert (o.p99_us, o.p99_floor) == (WINDOW_US, True)
    assert (o.p50_us, o.p50_floor) == (800, True)  # among the served: at least the engine's p50 (q' ≈ 0.51)


def test_a_quantile_among_the_served_reads_the_engines_table():
    engine = {"latency_us": {"percentiles": {"50": 800, "66": 900, "99": 3000, "99.9": 90000, "100": 99000}}}
    c = cell(rps=5000.0, requests_completed=10_000, unserved=1, engine=engine,
             caveats=[caveat("clients_unserved", without_response=1, connections=16)])
    o = outcomes.of(c)
    # q' = 0.99 × 10,001 / 10,000 = 0.990099: between 99 and 99.9 the table says "at least 3 ms"
    assert (o.p99_us, o.p99_floor) == (3000, True)


def test_errors_beyond_the_tolerance_fail_the_load():
    failed = cell(requests_failed=200, caveats=[caveat("requests_failed", share=0.0909, failed=200, attempted=2200)])
    assert outcomes.of(failed).failures == (outcomes.Failure("requests_failed", 200, 2200, 0.0909),)
    errors = cell(non_2xx=300, caveats=[caveat("non_2xx", count=300, share=0.15)])
    o = outcomes.of(errors)
    assert o.failures[0].code == "non_2xx" and o.failures[0].share == 0.15
    assert o.throughput == pytest.approx((2000 - 300) / 2)  # an error page is not service
    within = cell(non_2xx=10, caveats=[caveat("non_2xx", count=10, share=0.005)])  # under 1 %: a caveat only
    assert outcomes.of(within).kind == outcomes.SERVED


def test_a_server_that_died_under_the_load_and_the_oom_killer():
    c = cell(status="failed", error="mariadbd exited with status -9 during the load (1 process OOM-killed under "
                                    "the 512 MiB limit)",
             caveats=[caveat("oom_killed", count=1, before=0, after=0, limit_bytes=512 << 20)])
    o = outcomes.of(c)
    assert o.kind == outcomes.FAILED
    assert o.failures == (outcomes.Failure("server_died", process="mariadbd", exit_status=-9),
                          outcomes.Failure("oom_killed", 1))


def test_oom_kills_only_after_the_window_are_no_failure():
    after = cell(caveats=[caveat("oom_killed", count=0, before=0, after=2)])
    assert outcomes.of(after).kind == outcomes.SERVED
    warmup = cell(caveats=[caveat("oom_killed", count=0, before=1, after=0)])  # the same load, just before
    assert outcomes.of(warmup).failures == (outcomes.Failure("oom_killed", 1),)


def test_due_requests_never_sent_fail_an_open_loop():
    c = cell(requests_due=2000, requests_not_sent=400,
             caveats=[caveat("rate_not_reached", sent_per_s=800, rate=1000, connections=8, due=2000, not_sent=400)])
    assert outcomes.of(c).failures == (outcomes.Failure("not_sent", 400, 2000, 0.2),)
    late = cell(caveats=[caveat("rate_not_reached", sent_per_s=900, rate=1000, connections=8, not_sent=0)])
    assert outcomes.of(late).kind == outcomes.SERVED  # sent late: its latency counts from when due


def test_nothing_completed_and_target_down():
    nothing = cell(rps=0.0, requests_completed=0, caveats=[caveat("no_requests")])
    assert [f.code for f in outcomes.of(nothing).failures] == ["no_requests"]
    down = cell(rps=0.0, requests_completed=0, requests_failed=50,
                caveats=[caveat("target_down", connect_errors=50)])
    o = outcomes.of(down)
    assert o.failures == (outcomes.Failure("target_down", 50),) and o.p99_floor


def test_a_measurement_failure_outranks_a_load_failure():
    c = cell(unserved=3, caveats=[caveat("cpu_steal", share=0.3), caveat("clients_unserved", without_response=3,
                                                                          connections=16)])
    o = outcomes.of(c)
    assert o.kind == outcomes.INVALID and o.failures  # what it saw is kept, but it is no result


# -- verdicts ---------------------------------------------------------------------------------

def runs(label, values, *, start, fail=(), bound=(), background="none", classes=None, **extra):
    """Repetitions of one stack: values are requests/s; `fail`: repetitions that leave 16
    of 16 clients unserved; `bound`: repetitions at the generator's limit, server busy."""
    out = []
    for i, rps in enumerate(values):
        kw = dict(seq=start + 3 * i, repetition=i, stack_label=label, background=background, classes=classes, **extra)
        if i in fail:
            out.append(cell(rps=0.0, requests_completed=0, unserved=16, latency_p50_us=None, latency_p99_us=None,
                            caveats=[caveat("no_response_all", connections=16), caveat("no_requests")], **kw))
        elif i in bound:
            out.append(cell(rps=rps, caveats=[SATURATED], busy=0.96, **kw))
        else:
            out.append(cell(rps=rps, **kw))
    return out


def noisy(m, n, seed, cv=0.02):
    rng = random.Random(seed)
    return [m * rng.gauss(1, cv) for _ in range(n)]


def throughput(cells, baseline="nginx"):
    vs = verdicts.decide(cells, baseline)
    (v,) = vs.for_metric("throughput")
    return vs, v


def test_a_stack_that_fails_the_load_loses_in_the_first_words():
    slow = {"slow": {"connections": 50, "completed": 400}, "server": {"busy_max": {"apache2": 52}}}
    cells = (runs("nginx + FPM", noisy(3321, 5, 1), start=0, background="slow")
             + runs("Apache mod_php", [0] * 5, start=1, fail=range(5), background="slow", classes=slow))
    vs, v = throughput(cells, "nginx + FPM")
    assert v.kind == verdicts.CANDIDATE_FAILS and v.better is False
    line = verdicts_text.headline(v, vs.band)
    assert line.startswith("Apache mod_php fails this load: 0 of 16 measured visitors served in 2 s while 50 "
                           "slow visitors held 52 of its workers; nginx + FPM served 3,3")
    assert "req/s (p99 3.0 ms)" in line
    assert vs.family_sizes["throughput"] == 0  # decided by the outcomes: no test, not in Holm's family
    # every metric of that pair says the same, and no aside rides on it
    assert {x.kind for x in vs.verdicts} == {verdicts.CANDIDATE_FAILS}
    out = io.StringIO()
    verdicts_text.render(vs, out)
    assert " — and " not in out.getvalue() and "fails this load = most of its valid runs" in out.getvalue()


def test_the_baseline_failing_is_said_first_too():
    cells = runs("nginx", [0] * 5, start=0, fail=range(5)) + runs("h2o", noisy(5000, 5, 2), start=1)
    vs, v = throughput(cells)
    assert v.kind == verdicts.BASELINE_FAILS and v.better is True
    assert verdicts_text.headline(v, vs.band).startswith("nginx fails this load: 0 of 16 clients served in 2 s")


def test_neither_stack_serves_this_load():
    oom = [caveat("oom_killed", count=1, before=0, after=0, limit_bytes=512 << 20)]
    died = dict(status="failed", error="mariadbd exited with status -9 during the load (1 process OOM-killed)")
    cells = []
    for label, start in (("nginx + FPM", 0), ("Apache mod_php", 1)):
        for i in range(5):
            cells.append(cell(seq=start + 2 * i, repetition=i, stack_label=label, rps=0.0, requests_completed=0,
                              unserved=64, connections=64, latency_p50_us=None, latency_p99_us=None,
                              caveats=[caveat("no_response_all", connections=64), caveat("no_requests")] + oom,
                              **died))
    vs, v = throughput(cells, "nginx + FPM")
    assert v.kind == verdicts.NEITHER_SERVES and v.better is None
    assert verdicts_text.headline(v, vs.band) == (
        "neither stack serves this load: Apache mod_php: 0 of 64 clients served in 2 s, the OOM "
        "killer took mariadbd; nginx + FPM: 0 of 64 clients served in 2 s, the OOM killer took "
        "mariadbd")


def test_one_failed_run_of_five_is_not_failing_the_load():
    # a majority decides; the failed run still counts with what it served (0 req/s)
    cells = runs("nginx", noisy(1000, 5, 3), start=0) + runs("apache", noisy(1000, 5, 4), start=1, fail={2})
    vs, v = throughput(cells)
    assert v.decided is None and v.candidate_side.failed == 1 and 0.0 in v.candidate_values
    assert v.kind in (stats.Verdict.NO_DIFFERENCE.value, stats.Verdict.EQUIVALENT.value)


def test_a_lower_bound_that_settles_it_is_worded_as_such():
    cells = runs("nginx", noisy(60_000, 5, 5), start=0) + runs("h2o", noisy(110_000, 5, 6), start=1, bound={1, 3})
    vs, v = throughput(cells)
    assert v.kind == verdicts.AT_LEAST_HIGHER and v.better is True
    line = verdicts_text.headline(v, vs.band)
    assert line.startswith("h2o is at least 8") and "% faster than nginx" in line
    assert line.endswith("h2o's runs at the generator's limit: a lower bound)")
    (p99,) = vs.for_metric("latency_p99")
    assert p99.comparison.n_b == 3  # the bounded runs' latency is left out


def test_a_bounded_baseline_settles_a_slower_candidate():
    cells = (runs("nginx", noisy(100_000, 5, 7), start=0, bound={0, 1, 2, 3, 4})
             + runs("caddy", noisy(30_000, 5, 8), start=1))
    vs, v = throughput(cells)
    assert v.kind == verdicts.AT_LEAST_LOWER and v.better is False
    line = verdicts_text.headline(v, vs.band)
    assert "caddy is at least 69 % slower than nginx" in line and "nginx's runs at the generator's limit" in line


@pytest.mark.parametrize("base_bound, cand_values, who", [
    ({0, 1, 2, 3, 4}, None, "both"),  # both at the limit: nothing separates them
    (set(), 50_000, "h2o"),  # the bounded side measured slower: what it could not reach may reverse it
])
def test_lower_bounds_that_cannot_settle_it_are_not_separable(base_bound, cand_values, who):
    cells = (runs("nginx", noisy(60_000, 5, 9), start=0, bound=base_bound)
             + runs("h2o", noisy(cand_values or 90_000, 5, 10), start=1, bound={0, 1, 2, 3, 4}))
    vs, v = throughput(cells)
    assert v.kind == verdicts.NOT_SEPARABLE and v.better is None
    assert verdicts_text.headline(v, vs.band).startswith(
        f"h2o vs nginx: {who} at the generator's limit: not separable on this machine (add a core, or a client host)")
    assert verdicts_text.marks(vs)[(v.question, "h2o")] == "n.sep."


def test_the_way_up_failing_against_the_way_down():
    from stackbench.analysis import ramps
    cells = (runs("apache", noisy(6000, 5, 11), start=0, leg="up", fail=range(5))
             + runs("apache", noisy(8000, 5, 12), start=1, leg="down"))
    vs = ramps.decide(cells)
    (v,) = vs.for_metric("throughput")
    assert vs.self_comparison and v.kind == verdicts.BASELINE_FAILS  # the way up is the baseline
    assert verdicts_text.headline(v, vs.band, vs.self_comparison).startswith(
        "way up fails this load: 0 of 16 clients served in 2 s; way down served 7,955 req/s")


def test_neither_way_serves_in_a_self_comparison():
    from stackbench.analysis import backgrounds
    cells = (runs("apache", [0] * 5, start=0, fail=range(5))
             + runs("apache", [0] * 5, start=1, fail=range(5), background="slow",
                    classes={"slow": {"connections": 50}}))
    vs = backgrounds.decide(cells)
    (v,) = vs.for_metric("throughput")
    assert verdicts_text.headline(v, vs.band, vs.self_comparison).startswith("neither serves this load: with slow: ")


def test_too_few_runs_are_still_no_verdict_and_say_how_many_more():
    cells = runs("nginx", noisy(1000, 3, 13), start=0) + runs("apache", noisy(900, 3, 14), start=1)
    vs, v = throughput(cells)
    assert v.kind == "insufficient"
    assert "no verdict (3 vs 3 runs; 2 more valid run(s) of apache needed" in verdicts_text.headline(v, vs.band)


def test_adaptive_repetitions_count_a_failed_pair_as_settled():
    cells = runs("nginx", noisy(1000, 5, 15), start=0) + runs("apache", [0] * 5, start=1, fail=range(5))
    s = verdicts.spread(cells, "nginx")
    assert (s.open_pairs, s.settled, s.pairs) == (0, 1, 0) and s.narrow_enough(0.03)
    short = runs("nginx", noisy(1000, 3, 15), start=0) + runs("apache", [0] * 3, start=1, fail=range(3))
    assert verdicts.spread(short, "nginx").open_pairs == 1  # a majority of 3 is not yet MIN_RUNS


# -- the summary, the table, export ------------------------------------------------------------

def test_the_summary_says_how_runs_ended_and_marks_bounds():
    cells = (runs("nginx", noisy(60_000, 5, 16), start=0) + runs("h2o", noisy(110_000, 5, 17), start=1, bound={1})
             + runs("apache", [0] * 5, start=2, fail=range(5)))
    rows = {r.stack_label: r for r in summary.summarize(cells)}
    assert rows["h2o"].engine_bound == 1 and "throughput" in rows["h2o"].bounds
    assert rows["apache"].fails and rows["apache"].valid == 5 and "latency_p99" in rows["apache"].bounds
    assert verdicts_text.summary_outcome(rows["apache"]) == "fails 5/5: unserved"
    assert verdicts_text.summary_outcome(rows["h2o"]) == "engine-bound 1/5"
    assert verdicts_text.summary_outcome(rows["nginx"]) == "served"


def test_the_table_shows_each_runs_outcome():
    cells = [cell(seq=0), cell(seq=1, caveats=[SATURATED], busy=0.96),
             cell(seq=2, caveats=[SATURATED], busy=0.5),
             cell(seq=3, unserved=4, caveats=[caveat("clients_unserved", without_response=4, connections=16)])]
    run = stored_run(environment={"pinning": ONE_CORE})
    out = io.StringIO()
    run_report.render(analyze(run, cells), out)
    text = out.getvalue()
    lines = {line.split()[0].rstrip(table.INVALID_MARK): line for line in text.splitlines() if line[:1].isdigit()}
    assert lines["0"].endswith("served") and lines["1"].endswith("engine-bound") and "≥1,000" in lines["1"]
    assert lines["2"].endswith("invalid: engine") and lines["2"].startswith("2" + table.INVALID_MARK)
    assert lines["3"].endswith("FAILS: unserved")
    assert "the server's cores were busy too (96%): both at their limit, it stays valid" in text.replace("\n  ", " ")


def test_export_carries_outcomes_and_kinds_and_validates():
    cells = (runs("nginx", noisy(60_000, 5, 18), start=0) + runs("h2o", noisy(110_000, 5, 19), start=1, bound={1})
             + runs("apache", [0] * 5, start=2, fail=range(5))
             + [cell(seq=40, repetition=5, stack_label="apache", caveats=[caveat("cpu_steal", share=0.3)])])
    run = stored_run(plan_checked={"baseline": "nginx", "equivalence": 0.02}, environment={})
    doc = export.document(analyze(run, cells))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    by = {(c["stack_label"], c["seq"]): c for c in doc["cells"]}
    assert by[("h2o", 4)]["engine_bound"] is True and by[("h2o", 4)]["outcome"] == "served"
    assert by[("apache", 2)]["outcome"] == "failed" and by[("apache", 2)]["failures"] == ["unserved"]
    assert by[("apache", 40)]["outcome"] == "invalid" and by[("apache", 40)]["invalid_reasons"] == ["cpu_steal"]
    kinds = {(v["candidate"], v["metric"]): v["kind"] for v in doc["verdicts"]}
    assert kinds[("apache", "throughput")] == verdicts.CANDIDATE_FAILS
    assert kinds[("h2o", "throughput")] in (verdicts.AT_LEAST_HIGHER, "no_difference")
    schema = json.loads(export.SCHEMA_PATH.read_text())
    assert schema["$defs"]["verdict"]["properties"]["kind"]["enum"] == list(verdicts.KINDS)
    assert set(schema["$defs"]["cell"]["properties"]["failures"]["items"]["enum"]) == set(outcomes.FAILURE_CODES)
    out = io.StringIO()
    export.write_verdicts(analyze(run, cells).verdicts, out)
    assert "kind" in out.getvalue().splitlines()[0].split(",")


# -- slow is not failed: the deadline, not the window -----------------------------------------

def _deadline(timeout_s):
    return {"config": {"timeout_us": int(timeout_s * 1e6), "duration_us": WINDOW_US}}


def test_a_client_still_waiting_when_a_window_shorter_than_the_deadline_ends_is_slow_not_unserved():
    """Four WordPress clients without opcache on one core wait ~2.4 s a page: a 2 s window
    under a 10 s timeout saw 3 of them unserved. They waited less than they were allowed
    to: the run is served, slower, with their wait (the window) as a floor of p99."""
    slow = cell(rps=0.5, requests_completed=1, connections=4, unserved=3, latency_p50_us=1_900_000,
                latency_p99_us=1_900_000, caveats=[caveat("clients_unserved", without_response=3, connections=4)],
                engine=_deadline(10))
    o = outcomes.of(slow)
    assert (o.kind, o.failures, o.pending) == (outcomes.SERVED, (), 3)
    assert (o.p99_us, o.p99_floor) == (WINDOW_US, True) and (o.p50_us, o.p50_floor) == (WINDOW_US, True)
    assert o.throughput == 0.5


def test_a_window_that_served_nobody_is_never_served_whatever_the_deadline():
    """Nothing completed in a 2 s window under a 10 s timeout: no client was served, so no
    turn came — it fails the load, with how long the window was and the deadline (the
    runner measured it on to the deadline first, unless alone it answered many times
    faster: runner/cell.py)."""
    none = cell(rps=0.0, requests_completed=0, connections=4, unserved=4, latency_p50_us=None, latency_p99_us=None,
                caveats=[caveat("no_response_all", connections=4), caveat("no_requests")], engine=_deadline(10))
    o = outcomes.of(none)
    assert (o.kind, o.pending, o.p99_floor, o.throughput) == (outcomes.FAILED, 0, True, 0.0)
    assert o.failures == (outcomes.Failure("unserved", 4, 4, 1.0, window_us=WINDOW_US, deadline_us=10_000_000),)
    # error pages are not service either: nothing served, the errors say how it failed
    errors = cell(rps=100.0, requests_completed=200, non_2xx=200, connections=4, unserved=0,
                  caveats=[caveat("non_2xx", count=200, share=1.0)], engine=_deadline(10))
    assert [f.code for f in outcomes.of(errors).failures] == ["non_2xx"]
    # an engine that warned of nothing: every client unserved all the same
    quiet = cell(rps=0.0, requests_completed=0, connections=4, unserved=None, latency_p50_us=None,
                 latency_p99_us=None, engine=_deadline(10))
    assert outcomes.of(quiet).failures[0].count == 4


@pytest.mark.parametrize("per_s, clients, window_s, held", [
    (3400.0, 16, 1.0, True),  # alone a turn every 4.7 ms: 1 s without one is being held back
    (6.0, 16, 1.0, False),  # a turn every 2.7 s: 1 s without one is slow
    (16.0, 16, 3.0, True),  # exactly three turns in the window
    (0.0, 16, 100.0, False),  # no pace: nothing known, never held back
])
def test_held_back_is_three_turns_in_the_window(per_s, clients, window_s, held):
    assert outcomes.held_back(per_s, clients, window_s) is held


def test_a_client_unserved_for_a_window_as_long_as_the_deadline_was_refused():
    """The same three clients, the window at the deadline: they waited past it — fails."""
    refused = cell(rps=0.5, requests_completed=1, connections=4, unserved=3,
                   caveats=[caveat("clients_unserved", without_response=3, connections=4)], engine=_deadline(2))
    o = outcomes.of(refused)
    assert o.kind == outcomes.FAILED and o.failure("unserved").count == 3 and o.pending == 0


def test_a_slow_side_is_slower_in_the_verdict_not_failing():
    fast = [cell(seq=i, rps=20.0 + i * 0.1, connections=4, engine=_deadline(10)) for i in range(5)]
    slow = [cell(seq=10 + i, stack_label="off", rps=4.0 + i * 0.1, requests_completed=8, connections=4, unserved=1,
                 caveats=[caveat("clients_unserved", without_response=1, connections=4)], engine=_deadline(10))
            for i in range(5)]
    v = next(v for v in verdicts.decide(fast + slow, "nginx-fpm").verdicts if v.metric.key == "throughput")
    assert v.kind == stats.Verdict.LOWER.value and v.decided is None
    assert v.candidate_side.failed == 0 and v.candidate_side.p99_floor


# -- resolution: a count that cannot move is no verdict ----------------------------------------

def _page_runs(label, rps, completed, seq0, config=None, cpu=None):
    return [cell(seq=seq0 + i, stack_label=label, rps=rps(i), requests_completed=completed(i), connections=16,
                 duration_us=3_000_000, engine={"config": config or {"timeout_us": 30_000_000}}) for i in range(5)]


def test_a_quantized_count_is_not_called_equivalent():
    """16 clients, two WordPress pages each in a fixed 3 s window: every run of both stacks
    counts 32 responses (10.7 req/s). The interval has zero width; the step of one response
    is 3.1 % of the figure — the verdict says it cannot resolve, never "equivalent"."""
    base = _page_runs("nginx-fpm", lambda i: 32 / 3, lambda i: 32, 0)
    cand = _page_runs("apache", lambda i: 32 / 3, lambda i: 32, 10)
    vs = verdicts.decide(base + cand, "nginx-fpm")
    v = next(v for v in vs.verdicts if v.metric.key == "throughput")
    assert v.comparison.verdict in (stats.Verdict.EQUIVALENT, stats.Verdict.NO_DIFFERENCE)  # what the steps say
    assert v.kind == verdicts.NOT_RESOLVABLE and v.better is None
    assert v.candidate_side.step_share == pytest.approx(1 / 32) and v.candidate_side.per_client == 2.0
    words = verdicts_text.headline(v, vs.band)
    assert "not resolvable with 2.0 responses a client in the window" in words and "equivalent" not in words
    assert verdicts_text.marks(vs)[(v.question, "apache")] == "n.res."
    # one response more, every run: within two steps, still not a difference it can tell
    cand = _page_runs("apache", lambda i: 33 / 3, lambda i: 33, 10)
    v = next(v for v in verdicts.decide(base + cand, "nginx-fpm").verdicts if v.metric.key == "throughput")
    assert v.kind == verdicts.NOT_RESOLVABLE


def test_windows_that_end_at_a_response_resolve_what_a_fixed_window_cannot():
    """The same pages counted as 64 requests (`-n`: the window ends when the last one
    ended, its length moving with the stack): no step, and a 20 % difference is found."""
    asked = {"timeout_us": 30_000_000, "requests": 64, "duration_us": 12_000_000}
    base = _page_runs("nginx-fpm", lambda i: 12.0 + 0.1 * i, lambda i: 64, 0, asked)
    cand = _page_runs("apache", lambda i: 10.0 + 0.1 * i, lambda i: 64, 10, asked)
    v = next(v for v in verdicts.decide(base + cand, "nginx-fpm").verdicts if v.metric.key == "throughput")
    assert v.candidate_side.step_per_s == 0.0 and v.kind == stats.Verdict.LOWER.value



def test_a_stack_that_served_nothing_fails_the_load_and_is_no_percentage():
    """Slow visitors holding every prefork child: the fast clients got nothing in a 1 s
    window shorter than the deadline, nginx served 2,000 a second. No response is no
    "100 % slower (CI 100–100 %)": it fails this load, 0 of 16 served, and says in how long."""
    base = [cell(seq=i, rps=2000.0 + i, requests_completed=2000 + i, duration_us=1_000_000, connections=16,
                 engine=_deadline(10)) for i in range(5)]
    cand = [cell(seq=10 + i, stack_label="apache", rps=0.0, requests_completed=0, duration_us=1_000_000,
                 connections=16, unserved=16, latency_p50_us=None, latency_p99_us=None,
                 caveats=[caveat("no_response_all", connections=16)], engine=_deadline(10)) for i in range(5)]
    vs = verdicts.decide(base + cand, "nginx-fpm")
    v = next(v for v in vs.verdicts if v.metric.key == "throughput")
    assert v.kind == verdicts.CANDIDATE_FAILS and v.candidate_side.failed == 5
    line = verdicts_text.headline(v, vs.band)
    assert line.startswith("apache fails this load: 0 of 16 clients served in 1 s; nginx-fpm served 2,00"), line
    assert "%" not in line
    # measured on past the deadline: the sentence says the clients waited that long
    on = [replace_engine(c, duration_us=11_000_000) for c in cand]
    v = next(v for v in verdicts.decide(base + on, "nginx-fpm").verdicts if v.metric.key == "throughput")
    assert ("apache fails this load: 0 of 16 clients served in 11 s (past the 10 s the engine waits for a "
            "response)") in verdicts_text.headline(v, vs.band)


def replace_engine(c, **changes):
    from dataclasses import replace
    return replace(c, engine=replace(c.engine, **changes))


def test_a_client_held_back_while_the_others_were_served_fast_was_refused_before_the_deadline():
    """Prefork's 8 children held by kept-alive clients: 5,000 responses a second to 8 of
    64 connections, 56 with none in 2 s. At that pace each client's turn comes every
    13 ms: waiting the whole window is not the stack's speed but its unfairness — fails,
    though the 10 s timeout was not reached."""
    held = cell(rps=5000.0, requests_completed=10_000, connections=64, unserved=56,
                caveats=[caveat("clients_unserved", without_response=56, connections=64)], engine=_deadline(10))
    o = outcomes.of(held)
    assert o.kind == outcomes.FAILED and o.failure("unserved").count == 56 and o.pending == 0
