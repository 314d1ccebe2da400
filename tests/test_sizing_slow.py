"""The sizing tuned on the traffic a site sees (docs/methods/tuning.md, "Slow requests"):
at the target rate on the mix with slow requests a candidate's window holds several of
them, a window that met none did not test the pool, the pool of 2 goes before the probe
and is kept when it serves within the memory bound, and the sizing's answer says each
stack's pool on each size and what one slow request costs — on synthetic cells and
answers."""

from __future__ import annotations

import json
from dataclasses import replace

import jsonschema
import pytest

from cells import stored_cell
from stackbench import scenarios
from stackbench.analysis import sizing, tuning
from stackbench.analysis.capacity import SLO
from stackbench.model.cost import StoredCost
from stackbench.model.tuning import Candidate, SlowCost
from stackbench.planning import plan as plan_mod, tune as tune_plan
from stackbench.planning.tune import TuneQuestion
from stackbench.report import export
from stackbench.report.text import sizing as sizing_text
from stackbench.report.words import sizing as words, tuning as tuning_words
from stackbench.runner.tune import question_for
from test_sizing_report import SLO as SLO_WORDS, _answer, _run
from test_tuning_slow import ONE, SLOW, TWO, _stored, mix_cell

RATE_SLO = SLO({"99": 500_000}, 0, 0)


def _window_s(workload: str, rate: float = 6.25) -> float:
    q = TuneQuestion("nginx-fpm", workload, 7, duration="2.5s", rate=rate)
    plan = tune_plan.candidates_plan(q, [Candidate(1)])
    assert plan.duration_s is not None
    return plan.duration_s


def test_at_a_rate_the_slow_mix_window_holds_three_slow_requests_on_average():
    # 1 in 50 at 6.25/s: one every 8 s, so 24 s; the home page's window holds 100 responses (16 s)
    assert _window_s("wordpress-mix-slow") == pytest.approx(3 / (0.02 * 6.25))
    assert _window_s("wordpress-home") == pytest.approx(100 / 6.25)
    assert tune_plan.slow_share("wordpress-mix-slow") == pytest.approx(0.02)
    assert tune_plan.slow_share("wordpress-mix") == 0.0 and tune_plan.slow_share("app") == 0.0
    # a faster rate meets its three sooner, never shorter than a capacity probe
    assert _window_s("wordpress-mix-slow", rate=50.0) == pytest.approx(3.0)


def test_the_sizing_tunes_each_size_on_the_slow_mix_at_the_target():
    for quick in (False, True):
        data = scenarios.get("sizing").data(quick=quick)
        assert data["tune"]["workload"] == "wordpress-mix-slow"
        assert data["tune"]["repetitions"] == (1 if quick else 2)
        assert "workload:wordpress-mix-slow" in data["scenario"]["requires"]
        from stackbench.planning import sizing as sizing_plan

        question = sizing_plan.parse(data["sizing"], ValueError)
        assert question is not None
        size = plan_mod.parse(sizing_plan.size_plan(data, question, question.sizes[1]), "sizing.toml")
        q = question_for(size, size.stacks[0])
        # the capacity is searched on the home page; the pool is tuned on the slow mix at the target
        assert size.workloads == ["wordpress-home"]
        assert (q.workload, q.rate, q.repetitions) == ("wordpress-mix-slow", 6.25, 1 if quick else 2)


def test_at_a_rate_a_window_without_a_slow_request_did_not_test_the_pool():
    lucky = mix_cell("1 worker", 0, 6.25, 200_000, 0, 0, load="rate")
    tested = mix_cell("2 workers", 0, 6.25, 310_000, 1_050_000, 3, load="rate")
    one, two = tuning.trials([lucky, tested], {"1 worker": 1, "2 workers": 2}, RATE_SLO, SLOW)
    assert not one.serves and one.failures == (tuning.NO_SLOW,) and one.figures == () and one.slow_runs == ()
    assert two.serves
    assert tuning.choose([one, two], at_rate=True).chosen is two
    assert "no slow request in the window (untested)" in tuning_words.failures(one)
    # in a closed loop the figures decide, and a window is judged as it came
    (closed,) = tuning.trials([mix_cell("1 worker", 0, 16.0, 200_000, 0, 0)], {"1 worker": 1}, None, SLOW)
    assert closed.serves and closed.figures == (16.0,)
    # an ordinary workload at a rate: nothing is slow, nothing untested (the cell's own p99 judged)
    (plain,) = tuning.trials([lucky], {"1 worker": 1}, RATE_SLO)
    assert plain.figures == (6.25,) and plain.failures == ("p99 1,000 ms > 500 ms",)


def _with_memory(cell, stack: int | None, services: int | None):
    cost = replace(cell.cost if cell.cost else StoredCost(), peak_mem_bytes=stack, service_mem_peak_bytes=services)
    return replace(cell, cost=cost)


def test_a_pool_measured_before_the_probe_fits_when_its_peak_is_within_the_bound():
    limit = 512 << 20  # 85 % of it: 435 MiB
    cell = stored_cell(workload="wordpress-mix-slow")
    assert tuning.fits([_with_memory(cell, 150 << 20, 250 << 20)], limit)
    assert not tuning.fits([_with_memory(cell, 200 << 20, 250 << 20)], limit)  # 450 MiB: past the headroom
    assert not tuning.fits([_with_memory(cell, None, 250 << 20)], limit)  # not read: the probe decides
    assert not tuning.fits([], limit)
    # every run must fit, its database counted with it
    assert not tuning.fits([_with_memory(cell, 150 << 20, 250 << 20), _with_memory(cell, 150 << 20, 300 << 20)],
                           limit)


def test_a_tuning_of_three_steps_reads_back_every_candidate_run():
    t = replace(_stored(None, rate=6.25), run_id=9)
    assert t.candidate_run_ids == [9]
    t = replace(t, question={**t.question, "first_run_id": 7})
    assert t.candidate_run_ids == [7, 9]
    t = replace(t, question={**t.question, "second_run_id": 8})
    assert t.candidate_run_ids == [7, 8, 9]


def test_at_a_rate_of_two_pools_of_one_size_the_one_closing_its_connections_is_chosen():
    """Prefork's largest pool kept alive holds one connection a child: sized at the target's
    7 connections it serves the rate, and leaves the search's extra connections waiting."""
    closing = tuning.Trial(7, {}, (6.21,), (None,), one_request=True)
    kept = tuning.Trial(7, {}, (6.21,), (None,))
    failed = tuning.Trial(4, {}, (6.2,), ("p99 2,706 ms > 500 ms",), one_request=True)
    assert tuning.choose([failed, kept, closing], at_rate=True).chosen is closing
    assert tuning.choose([failed, closing, kept], at_rate=True).chosen is closing
    # a tuning stored before the rule is read back as its knobs hold it
    from stackbench.model.tuning import ONE_REQUEST_SUFFIX

    labels = {"7 workers" + ONE_REQUEST_SUFFIX: 7, "7 workers": 7}
    cells = [mix_cell(label, 0, 6.21, 250_000, 1_050_000, 3, load="rate") for label in labels]
    base = _stored(None, rate=6.25)
    t = replace(base, key={**base.key, "slo": RATE_SLO.as_dict()}, sizes=labels, chosen_size=7,
                knobs={"max_request_workers": 7}, reason=tuning.Reason.SMALLEST_MEETS.value)
    chosen = tuning.review(t, cells, None).choice.chosen
    assert (chosen.size, chosen.one_request) == (7, False)


def test_a_rate_tuning_that_stopped_before_the_probe_reads_back_as_it_stopped():
    cells = [mix_cell("1 worker", 0, 4.1, 2_900_000, 3_100_000, 2, load="rate"),
             mix_cell("2 workers", 0, 5.2, 1_900_000, 1_300_000, 2, load="rate")]
    sizes = {"1 worker": 1, "2 workers": 2}
    t = replace(_stored(None, rate=6.25), key={**_stored(None, rate=6.25).key, "slo": RATE_SLO.as_dict()},
                sizes=sizes, chosen_size=2, reason=tuning.Reason.CPU_SATURATED.value)
    r = tuning.review(t, cells, None)
    assert r.choice.reason is tuning.Reason.CPU_SATURATED and r.choice.chosen.size == 2 and r.choice.best is None
    assert tuning_words.why(r).endswith("(the stack does not carry this rate on this machine); with 1 worker it "
                                        "failed too")
    served = [mix_cell("1 worker", 0, 6.25, 300_000, 1_050_000, 3, load="rate")]
    t = replace(t, sizes={"1 worker": 1}, chosen_size=1, reason=tuning.Reason.SMALLEST_SERVES.value)
    r = tuning.review(t, served, None)
    assert r.choice.reason is tuning.Reason.SMALLEST_SERVES and r.choice.best is r.choice.chosen
    # a tuning that went on to the probe is chosen again by the rule
    t = replace(t, reason=tuning.Reason.SMALLEST_MEETS.value)
    assert tuning.review(t, served, None).choice.reason is tuning.Reason.SMALLEST_MEETS


# ------------------------------------------------------------------ the sizing's answer

def _tuned_answer() -> sizing.SizingAnswer:
    """The synthetic sizing with nginx's pools tuned on the slow mix (2 workers on "mid",
    the one worker on "small"), apache's on the home page."""
    a = _answer()
    rate = replace(_stored(SlowCost(1000, 0.02, 6.25, ONE, TWO), rate=6.25), id=4)
    alone = replace(_stored(SlowCost(1000, 0.02, 6.25, ONE, None), rate=6.25), id=5, chosen_size=1)
    plain = replace(_stored(None, rate=6.25), id=6, workload="wordpress-home")
    tunings = {("nginx", "mid"): rate, ("nginx", "small"): alone, ("apache", "mid"): plain}
    labels = {4: "nginx (tuned: 2 PHP-FPM children)", 5: "nginx (tuned: 1 PHP-FPM child)",
              6: "apache (tuned: 1 prefork child)"}
    stacks = tuple(replace(st, sizes=tuple(
        replace(c, tuning=t, label=labels[t.id]) if (t := tunings.get((c.stack, c.size))) else c for c in st.sizes))
        for st in a.stacks)
    return replace(a, stacks=stacks)


def test_the_answer_names_each_pool_and_what_a_slow_request_costs():
    a = _tuned_answer()
    lines = words.tuned(a)
    assert lines[0] == "each stack tuned for the target on each size: mid: apache (tuned: 1 prefork child)"
    assert lines[1] == tuning_words.tuned_line("small: nginx (tuned: 1 PHP-FPM child)",
                                               a.stacks[0].sizes[0].tuning)  # type: ignore[arg-type]
    assert lines[1].startswith("small: nginx (tuned: 1 PHP-FPM child): tuning 5, on wordpress-mix-slow at 6.25 "
                               "requests/s; what a slow request costs with this one worker: each (1 s, 1 request in "
                               "50) holds it, and the ~6 visitors who arrive meanwhile wait behind it")
    assert "with 2 workers (chosen) the other pages' p99 3.0 s" in lines[2] and lines[2].startswith("mid: nginx")
    import io

    out = io.StringIO()
    sizing_text.render(a, SLO_WORDS, out)
    flat = " ".join(out.getvalue().split())
    assert "mid: nginx (tuned: 2 PHP-FPM children): tuning 4, on wordpress-mix-slow" in flat
    assert "small: nginx (tuned: 1 PHP-FPM child): tuning 5" in flat


def test_the_html_and_the_export_carry_each_pool_and_its_cost():
    import html

    from stackbench.report.html import page
    from tests.test_tuning_report import FakeStore

    a = _tuned_answer()
    text = html.unescape(page.render([_run()], FakeStore({}), "2026-01-01T00:00:00+00:00", {}, [(a, SLO_WORDS)]))
    for line in words.tuned(a):
        assert line in text
    doc = export.document(_run(), None, (a, SLO_WORDS))
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    by = {st["stack"]: {c["size"]: c for c in st["sizes"]} for st in doc["sizing"]["stacks"]}
    mid = by["nginx"]["mid"]
    assert (mid["tuning_id"], mid["pool_size"]) == (4, 2)
    assert SlowCost.from_dict(mid["slow_cost"]) == SlowCost(1000, 0.02, 6.25, ONE, TWO)
    assert by["apache"]["mid"]["slow_cost"] is None and by["apache"]["mid"]["tuning_id"] == 6
    assert by["apache"]["big"]["tuning_id"] is None and by["apache"]["big"]["pool_size"] is None


# ------------------------------------------------------------------ the runner's order, on the fake Lab

from test_runner_order import lab  # noqa: E402,F401  (the fake Lab fixture)


def _tune_at_rate(store, fake, monkeypatch, fits: bool):
    from stackbench import runner
    from stackbench.runner import tune as tune_runner
    from stackbench.upkeep.pinning import Pinning

    from stackbench.engine.result import EngineResult

    monkeypatch.setattr(tuning, "fits", lambda cells, limit: fits)
    measure = fake.load

    def load(spec, cpus=None):
        """One process misses the SLO's 500 ms (held by what it waits on); larger pools meet it."""
        result = measure(spec, cpus)
        if spec.url.split("/")[2] != "1 worker":
            return result
        late = {"mean": 600_000.0, "percentiles": {"50": 400_000, "99": 900_000}}
        return EngineResult.from_doc({**result.raw, "latency_us": late})  # stored as the document came

    fake = replace(fake, load=load)
    q = TuneQuestion("nginx-fpm", "php-hello", 8, duration="1s", timeout="2s", repetitions=1, rate=20.0,
                     slo=RATE_SLO.as_dict())
    return tune_runner.tune(q, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)


def test_at_a_rate_the_pool_of_2_goes_before_the_probe_and_is_kept_when_it_serves_and_fits(lab, tmp_path,
                                                                                             monkeypatch):
    from stackbench.store import Store

    log, state, fake = lab
    store = Store(tmp_path / "r.sqlite")
    tuned = _tune_at_rate(store, fake, monkeypatch, fits=True)
    assert tuned.probe_run_id is None and tuned.choice.chosen.size == 2
    assert tuned.choice.reason is tuning.Reason.SMALLEST_MEETS
    assert [label for what, label in log if what == "up"] == ["1 worker", "2 workers"]
    t = store.tuning(tuned.tuning_id)
    assert t.chosen_size == 2 and t.candidate_run_ids == [tuned.first_run_id, tuned.run_id]


def test_a_pool_of_2_past_the_bound_goes_on_to_the_probe_and_the_others(lab, tmp_path, monkeypatch):
    from stackbench.store import Store

    log, state, fake = lab
    store = Store(tmp_path / "r.sqlite")
    tuned = _tune_at_rate(store, fake, monkeypatch, fits=False)
    ups = [label for what, label in log if what == "up"]
    # 1, then 2 alone, then the probe's 4, then the candidates it leaves: 4 and 8 (the connections)
    assert ups == ["1 worker", "2 workers", "4 workers", "4 workers", "8 workers"]
    assert tuned.probe_run_id is not None and tuned.choice.chosen.size == 2  # the smallest that served
    t = store.tuning(tuned.tuning_id)
    assert len(t.candidate_run_ids) == 3 and t.candidate_run_ids[-1] == tuned.run_id
    review = tuning.review(t, [c for r in t.candidate_run_ids for c in store.cells(r)], None)
    assert [tr.size for tr in review.trials] == [1, 2, 4, 8] and review.choice.chosen.size == 2
