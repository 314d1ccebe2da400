"""The machine to buy (docs/guide/sizing.md): a plan's [sizing] parsed and refused one line
each, each size's plan, and the smallest-size rule on synthetic capacities with intervals —
a size whose interval straddles the target is not "enough"."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.analysis import sizing
from stackbench.analysis.sizing import Enough, SizeCapacity
from stackbench.errors import PlanError
from stackbench.model.sizing import SizeRun, StoredSizing
from stackbench.planning import plan as plan_mod
from stackbench.planning import sizing as sizing_plan

PLAN = '''
name = "s"
workloads = ["php-hello"]
keepalive = [true]
slo = { p99 = "400ms", errors = 0 }
search = { budget = "30s" }
duration = "2s"
repetitions = 1
[sizing]
target = { hits_per_day = 200000, peak_factor = 3 }
sizes = [{ cpus = 1, memory = "256M", price = 3 }, { cpus = 1, memory = "1G", label = "big" }]
[[stacks]]
id = "nginx-fpm"
knobs = "tuned"
'''


def test_a_sizing_plan_is_its_capacity_plan_asked_of_each_size_with_stacks_tuned_for_the_target():
    plan = plan_mod.parse(tomllib.loads(PLAN), "s.toml")
    q = plan.sizing
    assert q is not None and [s.label for s in q.sizes] == ["1 CPU, 256 MiB", "big"]
    # 200,000 hits × 3 / 86,400 s
    assert q.target.rate == pytest.approx(6.944, abs=0.001) and q.target.hits(q.target.rate) == pytest.approx(200_000)
    assert "200,000 hits a day (peak 3× the mean" in q.target.describe()
    assert q.as_dict()["target"] == {"rate": q.target.rate, "hits_per_day": 200_000, "peak_factor": 3.0}
    assert q.core is None and q.as_dict()["core"] is None
    one = plan_mod.parse(sizing_plan.size_plan(plan.raw, q, q.sizes[1]), "s.toml")
    assert one.load.kind == "capacity" and one.machine is not None and one.machine.memory_bytes == 1 << 30
    assert one.tune_rate == pytest.approx(6.944, abs=0.001) and one.load.search.start == pytest.approx(6.944, abs=0.01)
    assert one.sizing is None and one.name == "s: big"


@pytest.mark.parametrize("change, words", [
    (("[sizing]", 'machine = { cpus = 1 }\n[sizing]'), "leave machine out"),
    (('slo = { p99 = "400ms", errors = 0 }\n', ""), "needs an slo"),
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { rate = 0 }"), "must be a number above 0"),
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { rate = 5, hits_per_day = 9 }"),
     "one of rate"),
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { hits_per_day = 9, peak_factor = 0.5 }"),
     "at least 1"),
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { rate = 5, peak_factor = 3 }"),
     "with rate it means nothing"),
    # a visit is pages with their assets: visits a day need the plan's [visit] to say it
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { visits_per_day = 200000 }"),
     "sizing.target.visits_per_day needs the plan's [visit]"),
    (("target = { hits_per_day = 200000, peak_factor = 3 }", "target = { visits_per_day = 20000, rate = 5 }"),
     "not rate and visits_per_day"),
    (("peak_factor = 3 }", "peak_factor = 3, requests_per_visit = 4 }"), "sizing.target.requests_per_visit:"),
    (("[sizing]", "[sizing]\ncore = 0"), "sizing.core is the yardstick of your core"),
    (("[sizing]", '[sizing]\ncore = "fast"'), "a number above 0, not 'fast'"),
    (('{ cpus = 1, memory = "1G", label = "big" }', '{ cpus = 1 }'), "needs cpus and memory"),
    (('{ cpus = 1, memory = "1G", label = "big" }', '{ cpus = 1, memory = "256M", price = 3 }'), "two sizes are both"),
    (('{ cpus = 1, memory = "1G", label = "big" }', '{ cpus = 1, memory = "1G", disk = 9 }'), "sizing.sizes[1].'disk'"),
    (('price = 3', 'price = -3'), "price a month"),
    (("[sizing]", "[sizing]\nconfidence = 0.9"), "unknown key sizing.'confidence'"),
])
def test_a_bad_sizing_table_is_one_line(change, words):
    with pytest.raises(PlanError) as e:
        plan_mod.parse(tomllib.loads(PLAN.replace(*change)), "s.toml")
    assert words in str(e.value) and "\n" not in str(e.value), str(e.value)


def test_enough_is_an_interval_at_or_above_the_target_and_a_straddle_is_not():
    assert sizing.enough(12.0, 10.5, 13.0, True, 10.0) is Enough.YES
    assert sizing.enough(10.4, 9.6, 11.2, True, 10.0) is Enough.NOT_SHOWN  # the edge is above; its interval not
    assert sizing.enough(8.0, 7.0, 9.5, True, 10.0) is Enough.NO
    assert sizing.enough(12.0, 10.5, None, True, 10.0) is Enough.YES  # unbounded above
    # no edge: every probe met up to 20/s; none met down to 4/s
    assert sizing.enough(None, 20.0, None, False, 10.0) is Enough.YES
    assert sizing.enough(None, None, 4.0, False, 10.0) is Enough.NO
    assert sizing.enough(None, None, None, False, 10.0) is Enough.UNKNOWN


def _stored() -> StoredSizing:
    sizes = [{"machine": {}, "price": p, "label": label} for label, p in (("small", 3.0), ("mid", 6.0), ("big", 12.0))]
    return StoredSizing(1, "s", {"target": {"rate": 10.0, "hits_per_day": None, "peak_factor": 3.0}, "sizes": sizes},
                        ("nginx", "apache"), (SizeRun("small", 1), SizeRun("mid", 2), SizeRun("big", 3)), "t")


def _c(stack: str, size: str, cap: float, lo: float, hi: float) -> SizeCapacity:
    return SizeCapacity(stack, stack, size, None, cap, lo, hi, True, sizing.enough(cap, lo, hi, True, 10.0), None, 12)


def test_the_smallest_enough_size_is_chosen_per_stack_and_a_straddling_one_is_passed_over():
    per_size = {
        "small": [_c("nginx", "small", 6.0, 5.5, 6.6), _c("apache", "small", 4.0, 3.5, 4.4)],
        "mid": [_c("nginx", "mid", 12.5, 11.5, 13.6), _c("apache", "mid", 10.5, 9.2, 11.9)],  # apache straddles
        "big": [_c("nginx", "big", 24.0, 22.0, 26.0), _c("apache", "big", 21.0, 19.0, 23.0)],
    }
    a = sizing.answer(_stored(), per_size)
    by = {s.stack: s for s in a.stacks}
    assert by["nginx"].smallest is not None and by["nginx"].smallest.size == "mid"
    assert by["apache"].smallest is not None and by["apache"].smallest.size == "big"
    assert [c.enough for c in by["apache"].sizes] == [Enough.NO, Enough.NOT_SHOWN, Enough.YES]
    # 12 requests/s at a peak 3× the mean: 345,600 hits a day
    assert a.hits(12.0) == pytest.approx(345_600)
    from stackbench.report.words import sizing as words

    text = words.sentence(a, "p99 ≤ 1 s")
    assert text.startswith("For 10.0 requests/s at peak") and "nginx needs mid" in text and "apache needs big" in text
    # apache's mid straddles the target: the answer is borderline and says so; nginx's is not
    assert by["apache"].borderline is not None and by["apache"].borderline.size == "mid"
    assert by["nginx"].borderline is None
    assert "borderline: mid carries 10.5 [9.2, 11.9]/s" in text and text.count("borderline") == 1


def test_an_answer_within_ten_per_cent_of_the_target_is_borderline_on_either_side():
    # target 10/s: nginx's small barely misses it, apache's mid barely clears it
    per_size = {
        "small": [_c("nginx", "small", 8.5, 8.0, 9.3), _c("apache", "small", 4.0, 3.5, 4.4)],
        "mid": [_c("nginx", "mid", 14.0, 12.0, 16.0), _c("apache", "mid", 10.5, 10.3, 10.8)],
    }
    by = {s.stack: s for s in sizing.answer(_stored(), per_size).stacks}
    assert by["nginx"].smallest.size == "mid" and by["nginx"].borderline.size == "small"
    assert by["apache"].smallest.size == "mid" and by["apache"].borderline is by["apache"].smallest
    clear = {"small": [_c("nginx", "small", 5.0, 4.5, 5.5)], "mid": [_c("nginx", "mid", 14.0, 12.0, 16.0)]}
    assert sizing.answer(_stored(), clear).stacks[0].borderline is None
    # met only at the target itself ("at least 10"): borderline — it is known to serve no more
    only = SizeCapacity("nginx", "nginx", "mid", None, None, 10.0, None, False, Enough.YES, None, 1)
    assert sizing.near(only, 10.0) and not sizing.near(_c("nginx", "mid", 14.0, 12.0, 16.0), 10.0)


def test_a_stack_no_size_serves_says_what_the_largest_carried():
    per_size = {"small": [_c("nginx", "small", 3.0, 2.5, 3.4), _c("apache", "small", 2.0, 1.5, 2.5)]}
    a = sizing.answer(_stored(), per_size)
    from stackbench.report.words import sizing as words

    assert all(s.smallest is None for s in a.stacks) and a.sizes == ("small",)
    assert "none of these sizes is enough — the largest, small, carries 3.0 [2.5, 3.4]/s" in words.sentence(a, None)


def test_a_size_that_missed_every_probe_is_bounded_by_what_it_served_not_by_the_rate_it_missed():
    from types import SimpleNamespace as NS

    # 0.25 CPU missed 6.25/s serving 4.9: its capacity is under 4.9, far from the target
    probe = NS(figures=NS(requests_per_s=4.9), served_per_s=4.9)
    mine = [NS(probes=(probe,), at_capacity=None)]
    c = sizing._one("nginx", "nginx", "small", 3.0, NS(edge=None, low=None, high=6.25), mine, 6.25, 0.25)
    assert c.enough is Enough.NO and c.high == 4.9 and not sizing.near(c, 6.25)
    from stackbench.report.words import sizing as words

    assert words.interval(c) == "< 4.9"
def test_a_sizing_plan_may_name_the_users_core_to_say_the_answer_in():
    plan = plan_mod.parse(tomllib.loads(PLAN.replace("[sizing]", "[sizing]\ncore = 1360")), "s.toml")
    assert plan.sizing is not None and plan.sizing.core == 1360.0 and plan.sizing.as_dict()["core"] == 1360.0


def _sized(core: float | None) -> sizing.SizingAnswer:
    """nginx enough on 0.5 CPU of a core of yardstick 680, asked in a core of `core`."""
    from stackbench.model.environment import Yardstick

    sizes = [{"machine": {"cpus": c}, "price": None, "label": label} for label, c in (("half", 0.5), ("one", 1))]
    stored = StoredSizing(1, "s", {"target": {"rate": 10.0, "hits_per_day": None, "peak_factor": 3.0},
                                   "sizes": sizes, "core": None},
                          ("nginx",), (SizeRun("half", 1), SizeRun("one", 2)), "t",
                          Yardstick(680.0, 650.0, 700.0, 9, "8.2.36", 0))
    per_size = {"half": [SizeCapacity("nginx", "nginx", "half", None, 12.0, 11.0, 13.0, True, Enough.YES, None, 9,
                                      0.5, 52_000.0)],
                "one": [SizeCapacity("nginx", "nginx", "one", None, 25.0, 23.0, 27.0, True, Enough.YES, None, 9,
                                     1.0, 45_000.0)]}
    return sizing.answer(stored, per_size, core)


def test_the_answer_says_its_core_and_rescales_the_cpus_to_the_users():
    from stackbench.report.words import sizing as words

    here = _sized(None)
    assert here.on_core(0.5) is None  # no core asked: nothing rescaled
    assert "nginx needs half — 0.5 of a core like this one (yardstick: 680), capacity" in words.sentence(here, None)
    # a core twice as fast (yardstick 1,360) does a CPU-bound page in half the time: 0.25 of it
    theirs = _sized(1360.0)
    assert theirs.on_core(0.5) == pytest.approx(0.25) and theirs.on_core(1.0) == pytest.approx(0.5)
    assert "0.5 of a core like this one (yardstick: 680); 0.25 of a core of yardstick 1360" in \
        words.sentence(theirs, None)
    assert "CPUs × 680 / 1360" in words.core_line(theirs)
    # the workload's own CPU a request: on the least throttled size (1 CPU), not under the quota
    (stack,) = theirs.stacks
    assert stack.page_cpu is not None and stack.page_cpu.size == "one" and stack.page_cpu.cpu_us_per_request == 45_000
    import io
    from stackbench.report.text import sizing as sizing_text

    out = io.StringIO()
    sizing_text.render(theirs, None, out)
    table = out.getvalue()
    assert "cores of 1360" in table and "0.25" in table and "nginx 45 ms (one)" in table
