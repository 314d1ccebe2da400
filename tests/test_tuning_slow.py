"""Tuning that survives a slow page (docs/methods/tuning.md, "Slow requests"): a plan tunes
on the traffic a site sees (`tune = { workload }`), a mix's deliberately slow requests are
judged apart from the SLO they cannot meet themselves, and what one slow request costs the
other visitors is computed from the tuning's own runs — on synthetic trials and cells."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.errors import PlanError
from stackbench.planning import plan as plan_mod
from stackbench.runner.tune import question_for

PLAN = '''
workloads = ["wordpress-home"]
concurrency = [16, 64]
keepalive = [true]
machine = { cpus = 1, memory = "512M" }
tune = { concurrency = 64, repetitions = 2, workload = "wordpress-mix-slow" }
[[stacks]]
id = "nginx-fpm"
knobs = "tuned"
'''


def test_a_plan_tunes_on_another_workload_than_the_one_it_measures():
    plan = plan_mod.parse(tomllib.loads(PLAN), "p.toml")
    assert plan.workloads == ["wordpress-home"] and plan.tune_workload == "wordpress-mix-slow"
    q = question_for(plan, plan.stacks[0])
    assert (q.workload, q.concurrency, q.repetitions) == ("wordpress-mix-slow", 64, 2)
    assert q.key()["workload"] == "wordpress-mix-slow"  # a tuning on the home page is not reused for it
    plain = plan_mod.parse(tomllib.loads(PLAN.replace(', workload = "wordpress-mix-slow"', "")), "p.toml")
    assert question_for(plain, plain.stacks[0]).workload == "wordpress-home"


@pytest.mark.parametrize("bad,words", [
    ('workload = "wordpress-slow"', "tune.workload: unknown workload 'wordpress-slow'"),
    ("workload = 3", "tune.workload names one of the lab's workloads, not 3"),
    ('workload = "app"', "tune.workload names one of the lab's workloads, not 'app'"),
])
def test_a_bad_tune_workload_is_one_line(bad, words):
    with pytest.raises(PlanError) as e:
        plan_mod.parse(tomllib.loads(PLAN.replace('workload = "wordpress-mix-slow"', bad)), "p.toml")
    assert words in str(e.value), str(e.value)



# ------------------------------------------------------------------ the choice and the cost

from cells import stored_cell  # noqa: E402
from stackbench.analysis import slow_requests, tuning  # noqa: E402
from stackbench.analysis.capacity import SLO  # noqa: E402
from stackbench.model.tuning import SlowCost, SlowPool, StoredTuning  # noqa: E402
from stackbench.workloads.wordpress import SLOW_PATH  # noqa: E402

SLOW = {SLOW_PATH: 1000}
PAGES = ("/", "/a-post/", "/category/servers/", "/?s=cache")
WINDOW_US = 10_000_000


def mix_cell(label: str, rep: int, per_s: float, others_p99_us: int, slow_p50_us: int, slow_n: int, *,
             load: str = "closed", in_flight_oldest_us: int | None = None, window_us: int = WINDOW_US) -> object:
    """A repetition on the slow mix: the pages at their weights, `slow_n` slow requests; its
    overall p99 is the slow requests' own (2 % of the mix: past every pool's reach)."""
    total = round(per_s * window_us / 1e6)
    rest = total - slow_n
    shares = (20, 15, 10, 4)
    per_url = [{"path": p, "weight": w,
                "requests": {"completed": round(rest * w / 49), "ok_2xx": round(rest * w / 49), "non_2xx": 0,
                             "failed": 0},
                "latency_us": {"mean": others_p99_us / 3, "percentiles": {"50": others_p99_us // 3,
                                                                          "99": others_p99_us - 1000 * i}}}
               for i, (p, w) in enumerate(zip(PAGES, shares))]
    per_url.append({"path": SLOW_PATH, "weight": 1,
                    "requests": {"completed": slow_n, "ok_2xx": slow_n, "non_2xx": 0, "failed": 0},
                    "latency_us": {"mean": slow_p50_us, "percentiles": {"50": slow_p50_us, "99": slow_p50_us}}})
    requests = {"completed": total, "failed": 0, "non_2xx": 0}
    if in_flight_oldest_us is not None:
        requests |= {"in_flight_at_end": 1, "in_flight_oldest_us": in_flight_oldest_us}
    if load == "rate":
        requests |= {"due": total, "not_sent": 0}
    return stored_cell(repetition=rep, stack_label=label, load=load, rate=per_s if load == "rate" else None,
                       concurrency=64, workload="wordpress-mix-slow", requests_per_s=per_s, requests_failed=0,
                       non_2xx=0, latency_p50_us=others_p99_us // 3, latency_p99_us=max(slow_p50_us, 1_000_000),
                       connections_measured=64, connections_without_response=0,
                       engine={"duration_us": window_us, "requests": requests, "per_url": per_url})


def test_others_latency_is_each_percentile_of_the_worst_other_page_and_the_slow_one_is_left_out():
    cell = mix_cell("1 worker", 0, 16.0, 4_200_000, 4_900_000, 3)
    assert cell.engine is not None
    others = slow_requests.others_latency(cell.engine, SLOW)
    assert others.p99_us == 4_200_000 and others.p50_us == 1_400_000  # the home page's, the worst
    judged = slow_requests.judged(cell.engine, SLOW)
    assert judged.latency.p99_us == 4_200_000 and cell.engine.latency.p99_us == 4_900_000
    assert slow_requests.judged(cell.engine, {}) is cell.engine  # an ordinary mix: as measured
    run = slow_requests.run_of(cell.engine, SLOW)
    assert run == slow_requests.SlowRun(160, 3, WINDOW_US, 4_200_000, 4_900_000)


def test_a_one_process_pool_that_misses_the_slo_on_the_slow_mix_is_not_chosen():
    """At 6.25/s within p99 ≤ 500 ms (the sizing's question): one worker held a second by each
    slow request makes the others wait past the SLO; two workers keep them within it. Every
    pool's overall p99 is past 500 ms — the slow requests' own second — so judged on it no
    pool would serve."""
    slo = SLO({"99": 500_000}, 0, 0)
    cells = [mix_cell("1 worker", r, 6.25, 1_300_000, 1_400_000, 2, load="rate") for r in range(2)]
    cells += [mix_cell("2 workers", r, 6.25, 310_000, 1_050_000, 2, load="rate") for r in range(2)]
    cells += [mix_cell("4 workers", r, 6.25, 300_000, 1_040_000, 2, load="rate") for r in range(2)]
    sizes = {"1 worker": 1, "2 workers": 2, "4 workers": 4}
    found = tuning.trials(cells, sizes, slo, SLOW)
    one, two, four = found
    assert not one.serves and one.failures[0] == "p99 1,300 ms > 500 ms" and two.serves and four.serves
    choice = tuning.choose(found)
    assert choice.chosen is two and choice.chosen.size == 2
    # judged on every request, the slow ones' own second fails every pool
    assert not any(t.serves for t in tuning.trials(cells, sizes, slo))
    # in a closed loop with an SLO, the same rule (outcomes' p99 is the slow requests')
    closed = [mix_cell(label, r, 6.25, p99, 1_400_000, 2) for label, p99 in (("1 worker", 1_300_000),
                                                                            ("2 workers", 310_000)) for r in range(2)]
    c1, c2 = tuning.trials(closed, {"1 worker": 1, "2 workers": 2}, slo, SLOW)
    assert c1.failures == (tuning.SLO_LATENCY,) * 2 and c2.serves


def test_a_slow_request_still_out_at_the_end_is_allowed_its_hold_and_no_more():
    slo = SLO({"99": 500_000}, 0, 0)
    held = mix_cell("2 workers", 0, 6.25, 310_000, 1_050_000, 2, load="rate", in_flight_oldest_us=1_400_000)
    (t,) = tuning.trials([held], {"2 workers": 2}, slo, SLOW)
    assert t.serves, t.failures  # 1.4 s out: a slow request's second, and 0.4 s of waiting
    stuck = mix_cell("2 workers", 0, 6.25, 310_000, 1_050_000, 2, load="rate", in_flight_oldest_us=1_700_000)
    (t,) = tuning.trials([stuck], {"2 workers": 2}, slo, SLOW)
    assert not t.serves and "unanswered" in (t.failures[0] or "")


def test_at_a_closed_loop_the_slow_mix_makes_two_workers_the_choice_and_the_cost_says_why():
    """64 WordPress clients on one core: one worker idles through every slow request's second
    (~30 % fewer pages), two keep the core busy."""
    cells = [mix_cell("1 worker", r, v, 4_200_000 - 100_000 * r, 4_900_000, 3) for r, v in enumerate((16.0, 16.5))]
    cells += [mix_cell("2 workers", r, v, 3_000_000, 1_400_000, 4) for r, v in enumerate((22.9, 23.1))]
    cells += [mix_cell("4 workers", r, v, 3_100_000, 1_300_000, 4) for r, v in enumerate((22.6, 23.0))]
    found = tuning.trials(cells, {"1 worker": 1, "2 workers": 2, "4 workers": 4}, None, SLOW)
    choice = tuning.choose(found)
    assert choice.chosen.size == 2
    weights = {SLOW_PATH: 1, **dict(zip(PAGES, (20, 15, 10, 4)))}
    cost = tuning.slow_cost(found, choice.chosen, SLOW, weights, 64, None)
    assert cost is not None and (cost.hold_ms, cost.behind) == (1000, 63.0)
    assert cost.share == pytest.approx(0.02)
    one = cost.one
    assert one is not None and (one.size, one.others_p99_us, one.slow_p50_us) == (1, 4_200_000, 4_900_000)
    assert one.responses_per_s == pytest.approx((16.0 * 16.5) ** 0.5)
    # 3 + 3 slow requests of a second in 20 s of windows: the one worker held 30 % of the time
    assert one.held_share == pytest.approx(0.3)
    assert cost.chosen is not None and (cost.chosen.size, cost.chosen.others_p99_us) == (2, 3_000_000)
    assert cost.chosen.held_share == pytest.approx(8 / (20 * 2))
    plain = tuning.trials(cells, {"1 worker": 1}, None)  # judged without the slow URLs: nothing of them kept
    assert tuning.slow_cost(plain, plain[0], SLOW, weights, 64, None) is None
    assert tuning.slow_cost(found, choice.chosen, {}, weights, 64, None) is None


def test_when_one_process_is_still_the_choice_its_cost_is_its_own():
    # the smallest pool at a rate, with the CPU saturated: nothing larger was measured
    cells = [mix_cell("1 worker", r, 4.8, 3_400_000, 3_900_000, 2, load="rate") for r in range(2)]
    (one,) = tuning.trials(cells, {"1 worker": 1}, SLO({"99": 500_000}, 0, 0), SLOW)
    cost = tuning.slow_cost([one], one, SLOW, {SLOW_PATH: 1, "/": 49}, 13, 6.25)
    assert cost is not None and cost.chosen is None and cost.behind == 6.25  # arrivals during the hold
    assert cost.one is not None and cost.one.held_share == pytest.approx(0.2)


# ------------------------------------------------------------------ what a user reads

def _stored(cost: SlowCost | None, rate: float | None = None) -> StoredTuning:
    key = {"stack": "nginx-fpm", "workload": "wordpress-mix-slow", "concurrency": 64, "keepalive": True,
           "machine": {"cpus": 1, "memory": "512M"}, "slo": {}, "knobs": {}} | ({"rate": rate} if rate else {})
    return StoredTuning(3, 6, 7, "nginx-fpm", "wordpress-mix-slow", key, {**key, "slow": SLOW}, None,
                        {"1 worker": 1, "2 workers": 2}, 2, {"pm": "static", "pm_max_children": 2}, "best", "t",
                        cost)


ONE = SlowPool(1, False, 16.2, 4_200_000, 4_900_000, 0.3)
TWO = SlowPool(2, False, 23.0, 3_000_000, 1_400_000, 0.1)


def test_the_cost_in_words_names_the_visitors_behind_a_held_worker_and_the_measured_waits():
    from stackbench.report.words import tuning as words

    larger = words.slow_cost(_stored(SlowCost(1000, 0.02, 63.0, ONE, TWO)))
    assert larger == ("what a slow request would cost with 1 worker: each (1 s, 1 request in 50) holds it, and the "
                      "other 63 clients wait behind it — measured on wordpress-mix-slow: the other pages' p99 4.2 s "
                      "and 16.2 responses/s (a slow request itself 4.9 s); slow requests held it 30% of the time, "
                      "when nobody else was served; with 2 workers (chosen) the other pages' p99 3.0 s and 23.0 "
                      "responses/s")
    alone = words.slow_cost(_stored(SlowCost(1000, 0.02, 6.25, ONE, None), rate=6.25))
    assert alone is not None and alone.startswith("what a slow request costs with this one worker: each (1 s, 1 "
                                                  "request in 50) holds it, and the ~6 visitors who arrive meanwhile")
    assert words.slow_cost(_stored(None)) is None
    line = words.tuned_line("nginx + FPM (tuned: 2 PHP-FPM children)", _stored(SlowCost(1000, 0.02, 63.0, ONE, TWO)))
    assert line is not None and line.startswith("nginx + FPM (tuned: 2 PHP-FPM children): tuning 3, on "
                                                "wordpress-mix-slow at 64 clients; what a slow request would cost")


def test_the_tuning_the_export_and_the_run_report_carry_the_cost(tmp_path):
    import io
    import json
    from pathlib import Path

    import jsonschema

    from cells import stored_run
    from stackbench.analysis.run import analyze
    from stackbench.model.plan import CheckedPlan
    from stackbench.report import export
    from stackbench.report.text import run_report, tuning as tuning_text

    cost = SlowCost(1000, 0.02, 63.0, ONE, TWO)
    t = _stored(cost)
    cells = [mix_cell("1 worker", r, 16.0, 4_200_000, 4_900_000, 3) for r in range(2)]
    cells += [mix_cell("2 workers", r, 23.0, 3_000_000, 1_400_000, 4) for r in range(2)]
    out = io.StringIO()
    tuning_text.render(tuning.review(t, cells, None), out)
    assert "what a slow request would cost with 1 worker" in out.getvalue()

    label = "nginx + FPM (tuned: 2 PHP-FPM children)"
    run = stored_run(plan_checked={"baseline": label, "stacks": [{"id": "nginx-fpm", "label": label, "tuned": True,
                                                                   "tuning": 3}]})
    measured = [stored_cell(seq=i, repetition=i, stack_label=label, workload="wordpress-home", requests_per_s=22.0,
                            requests_completed=66, requests_failed=0, non_2xx=0, latency_p50_us=900_000,
                            latency_p99_us=2_000_000, duration_us=3_000_000) for i in range(2)]
    a = analyze(run, measured)
    report = io.StringIO()
    run_report.render(a, report, tunings={3: t})
    assert f"{label}: tuning 3, on wordpress-mix-slow at 64 clients; what a slow request would cost" in \
        report.getvalue().replace("\n", " ").replace("  ", " ")
    doc = export.document(a, {3: t})
    (row,) = doc["tunings"]
    assert row["slow_cost"] == cost.as_dict() and SlowCost.from_dict(row["slow_cost"]) == cost
    schema = json.loads((Path(export.__file__).parent / "schema" / "export-v1.schema.json").read_text())
    jsonschema.validate(json.loads(json.dumps(doc)), schema)


def test_the_html_report_says_the_cost_beside_the_tuning_curve():
    import html

    from stackbench.report.html import page
    from stackbench.report.words import tuning as words
    from test_tuning_report import TUNED, FakeStore, _tuned_run
    from tests.test_report_html import figures_of

    t = _stored(SlowCost(1000, 0.02, 63.0, ONE, TWO))
    cells = [mix_cell(label, r, v, 3_000_000, 1_400_000, 3) for label, v in (("1 worker", 16.0), ("2 workers", 23.0))
             for r in range(2)]
    text = page.render([_tuned_run()], FakeStore({}), "now", {5: {TUNED: tuning.review(t, cells, None)}})
    fig = html.unescape(next(f for f in figures_of(text) if "Tuning — " in f))
    cost = words.slow_cost(t)
    assert cost is not None and cost[1:] in fig


def test_at_a_rate_the_smallest_pool_that_meets_the_slo_is_chosen_not_the_highest_figure():
    """One run a candidate (the sizing's quick form): two pools serve 6.25/s, the larger by a
    hair more — noise, since both serve the rate; the smallest that meets the SLO is chosen."""
    from stackbench.report.words import tuning as words

    slo = SLO({"99": 500_000}, 0, 0)
    cells = [mix_cell("1 worker", 0, 6.25, 1_300_000, 1_400_000, 2, load="rate"),
             mix_cell("2 workers", 0, 6.21, 310_000, 1_050_000, 2, load="rate"),
             mix_cell("4 workers", 0, 6.30, 300_000, 1_040_000, 2, load="rate")]
    found = tuning.trials(cells, {"1 worker": 1, "2 workers": 2, "4 workers": 4}, slo, SLOW)
    assert tuning.choose(found).chosen.size == 4  # the closed loop's rule would crown the noise
    choice = tuning.choose(found, at_rate=True)
    assert choice.chosen.size == 2 and choice.reason is tuning.Reason.SMALLEST_MEETS and choice.best is found[2]
    from dataclasses import replace

    t = _stored(None, rate=6.25)
    t = replace(t, key={**t.key, "slo": slo.as_dict()}, sizes={"1 worker": 1, "2 workers": 2, "4 workers": 4})
    review = tuning.review(t, cells, None)
    assert review.choice.chosen.size == 2  # a stored rate tuning is read back by the same rule
    assert words.why(review).startswith("chosen: 2 workers — the smallest pool that served the rate within the SLO "
                                        "in every run (1 worker: p99 1,300 ms > 500 ms)")
