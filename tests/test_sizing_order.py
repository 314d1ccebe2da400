"""The quick sizing's order and its skip (runner/sizing.py, planning/sizing.py Bisection,
analysis/sizing.py of_tuning): `until_enough` bisects the sizes for each stack's smallest
enough one, the middle size first, and still measures the size just below the answer; a
size whose tuning at the target found no pool meeting the SLO with the CPU busy is not
enough, not searched, and bounded by what its tuning served — stored, read back and said.
On fakes for the runner (no server starts) and synthetic cells for the answer."""

from __future__ import annotations

import io
import math
from dataclasses import replace

import pytest

from stackbench import scenarios
from stackbench.analysis import sizing, tuning
from stackbench.analysis.sizing import Enough
from stackbench.model.sizing import SizeRun
from stackbench.planning import plan as plan_mod
from stackbench.planning.sizing import Bisection, first
from stackbench.report.text import sizing as sizing_text
from stackbench.report.words import sizing as words
from stackbench.runner import sizing as sizing_runner
from stackbench.store import Store
from test_sizing_report import _stored as _sizing
from test_tuning_slow import _stored as _tuning, mix_cell


def _walk(n: int, smallest: dict[str, int | None]) -> list[tuple[int, list[str]]]:
    """The steps Bisection takes when stack s is enough from size smallest[s] up (None: none)."""
    order, steps = Bisection(list(smallest), n), []
    while (step := order.next()) is not None:
        i, stacks = step
        steps.append(step)
        order.record(i, stacks, {s for s in stacks if smallest[s] is not None and i >= smallest[s]})  # type: ignore[operator]
    return steps


def test_three_sizes_take_two_a_stack_the_middle_first():
    assert first(3) == 1 and first(1) == 0 and first(2) == 0
    assert _walk(3, {"a": 0}) == [(1, ["a"]), (0, ["a"])]
    assert _walk(3, {"a": 1}) == [(1, ["a"]), (0, ["a"])]  # the one below is measured: the borderline needs it
    assert _walk(3, {"a": 2}) == [(1, ["a"]), (2, ["a"])]
    assert _walk(3, {"a": None}) == [(1, ["a"]), (2, ["a"])]
    # stacks that part ways: together on the middle, then the smaller size first
    assert _walk(3, {"a": 2, "b": 0}) == [(1, ["a", "b"]), (0, ["b"]), (2, ["a"])]


@pytest.mark.parametrize("n", range(1, 9))
def test_a_binary_search_finds_the_smallest_enough_and_measures_the_one_below(n):
    for answer in [*range(n), None]:
        steps = _walk(n, {"a": answer})
        measured = [i for i, _ in steps]
        assert len(measured) == len(set(measured)) <= math.ceil(math.log2(n)) + 1
        if answer is None:
            assert n - 1 in measured
            continue
        assert answer in measured and (answer == 0 or answer - 1 in measured)


def _quick_plan() -> plan_mod.Plan:
    return scenarios.get("sizing").plan(quick=True)


def test_the_runner_measures_the_sizes_in_the_bisections_order(tmp_path, monkeypatch):
    plan = _quick_plan()
    assert plan.sizing is not None and plan.sizing.until_enough
    labels = [s.label for s in plan.sizing.sizes]
    truth = {"nginx + FPM": 1, "Apache mod_php": 2}  # the smallest enough size of each
    calls = []

    def measure(plan, s, stacks, store, sized, cores, events, options, lab):
        i = labels.index(s.label)
        calls.append((s.label, stacks))
        return {st for st in stacks if i >= truth[st]}

    monkeypatch.setattr(sizing_runner, "_measure", measure)
    sizing_runner.size(plan, Store(tmp_path / "r.sqlite"))
    both = ["nginx + FPM", "Apache mod_php"]
    assert calls == [(labels[1], both), (labels[0], ["nginx + FPM"]), (labels[2], ["Apache mod_php"])]


def _store_tuning(store: Store, reason: str) -> int:
    t = _tuning(None, rate=6.25)
    run_id = store.begin_run("tune", "tune.toml", {"stacks": [{"id": "nginx-fpm"}]}, {}, {})
    return store.record_tuning(None, run_id, t.stack_id, t.workload, t.key, t.question, None, dict(t.sizes), 1,
                               dict(t.knobs), reason)


def test_a_size_whose_tuning_found_the_cpu_busy_is_not_searched_and_is_stored_so(tmp_path, monkeypatch):
    plan = _quick_plan()
    assert plan.sizing is not None
    store = Store(tmp_path / "r.sqlite")
    busy = _store_tuning(store, tuning.Reason.CPU_SATURATED.value)
    served = _store_tuning(store, tuning.Reason.SMALLEST_MEETS.value)
    ids = {"nginx + FPM": busy, "Apache mod_php": served}
    resolved, ran = [], []

    def resolve(one, store, events=None, options=None, lab=None):
        resolved.append([v.label for v in one.stacks])
        return replace(one, stacks=[replace(v, tuning=ids[v.label]) for v in one.stacks])

    monkeypatch.setattr(sizing_runner.tune_runner, "resolve", resolve)
    monkeypatch.setattr(sizing_runner, "run_plan", lambda one, *a, **k: ran.append(one) or (_ for _ in ()).throw(
        RuntimeError("stop after the run's plan")))
    sized = sizing_runner.Sized(store.record_sizing(plan.name, plan.sizing.as_dict(), list(ids), []))
    s = plan.sizing.sizes[0]
    # the busy stack alone: no capacity run, a size stored with its tuning and no run
    assert sizing_runner._measure(plan, s, ["nginx + FPM"], store, sized, [], None, None, None) == set()
    assert not ran and store.sizing(sized.sizing_id).runs == (SizeRun(s.label, None, {"nginx + FPM": busy}),)
    # beside a stack whose tuning served: the run holds that one only (its tuning reused)
    with pytest.raises(RuntimeError):
        sizing_runner._measure(plan, s, list(ids), store, sized, [], None, None, None)
    assert resolved[-1] == ["Apache mod_php"] and [v.label for v in ran[0].stacks] == ["Apache mod_php"]
    # the full form searches every stack, busy or not
    with pytest.raises(RuntimeError):
        sizing_runner._measure(plan, s, None, store, sized, [], None, None, None)
    assert [v.label for v in ran[1].stacks] == list(ids)


def _busy_tuning():
    cells = [mix_cell("1 worker", 0, 3.7, 9_800_000, 10_100_000, 2, load="rate"),
             mix_cell("2 workers", 0, 4.1, 8_500_000, 9_000_000, 2, load="rate")]
    t = _tuning(None, rate=6.25)
    return replace(t, key={**t.key, "slo": {"latency_us": {"99": 500_000}, "errors": 0}},
                   reason=tuning.Reason.CPU_SATURATED.value), cells


def test_a_skipped_size_is_not_enough_and_bounded_by_the_most_its_tuning_served():
    t, cells = _busy_tuning()
    s = _sizing()
    target = s.target_rate
    c = sizing.of_tuning(s, "small", "nginx", t, cells)
    assert sizing.saturated(t) and c.saturated and c.enough is Enough.NO
    assert c.capacity is None and c.low is None and c.high == pytest.approx(min(4.1, target))
    assert words.interval(c) == "< 4.1"
    # merged with the sizes' runs: the skipped one in its place, a stack in no run not measured
    merged = sizing.of_size(s, "small", [], {"nginx": c})
    assert [(m.stack, m.enough) for m in merged] == [("nginx", Enough.NO), ("apache", Enough.UNKNOWN)]
    a = sizing.answer(replace(s, runs=(SizeRun("small", None, {"nginx": t.id}),)), {"small": merged})
    assert a.stacks[0].smallest is None and a.stacks[0].sizes == (c,)
    (line,) = words.skipped(a)
    assert line.startswith("small: nginx not searched — its tuning at the target (tuning 3, on wordpress-mix-slow) "
                           "found no pool meeting the SLO with the CPU busy") and line.endswith("(< 4.1 requests/s)")
    out = io.StringIO()
    sizing_text.render(a, None, out)
    flat = " ".join(out.getvalue().split())
    assert "small: nginx not searched" in flat and "(small: tunings only)" in flat


def test_a_skipped_size_whose_runs_served_the_target_late_is_not_near_it():
    """At a rate a busy size's runs serve about the target, late: its "< X" bound sits at the
    target whatever the latency, so only a p99 within 10 % of the SLO's makes it borderline."""
    t, _ = _busy_tuning()
    t = replace(t, sizes={"1 worker": 1, "2 workers": 2}, chosen_size=2, knobs={})
    s = _sizing()
    late = [mix_cell("2 workers", 0, s.target_rate, 1_200_000, 1_100_000, 2, load="rate")]
    c = sizing.of_tuning(s, "small", "nginx", t, late)
    assert c.high == pytest.approx(s.target_rate) and c.missed_by == pytest.approx(1_200_000 / 500_000)
    assert not sizing.near(c, s.target_rate)
    nearly = [mix_cell("2 workers", 0, s.target_rate, 540_000, 1_100_000, 2, load="rate")]
    c = sizing.of_tuning(s, "small", "nginx", t, nearly)
    assert c.missed_by == pytest.approx(1.08) and sizing.near(c, s.target_rate)
    # the one-worker candidate's late pages are not the chosen pool's
    assert sizing.of_tuning(s, "small", "nginx", t, [
        mix_cell("1 worker", 0, s.target_rate, 540_000, 1_100_000, 2, load="rate")]).missed_by is None
