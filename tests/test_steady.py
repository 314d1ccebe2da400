"""The steady warm-up's rule (planning/steady.py) on synthetic window series, its plan
keys, and the warm-up stage's windows (runner/warmup.py) with a fake engine."""

from __future__ import annotations

import random

import pytest

from stackbench.engine import EngineResult
from stackbench.errors import PlanError
from stackbench.model.warmup import WarmupWindow
from stackbench.planning import plan as plan_mod, steady, window as window_mod
from stackbench.planning.steady import Steady
from stackbench.runner import warmup

STACKS = [{"id": "nginx-fpm"}]


def windows(rates, seconds=1.0):
    return [WarmupWindow(seconds, round(r * seconds)) for r in rates]


def first_steady(rates, tolerance=0.05):
    """After how many windows the rule calls the series steady (None: never)."""
    ws = windows(rates)
    return next((n for n in range(1, len(ws) + 1) if steady.is_steady(ws[:n], tolerance)), None)


def test_a_stack_steady_at_once_is_steady_after_the_least_windows():
    assert first_steady([7000, 7050, 6980, 7010]) == steady.MIN_WINDOWS
    assert steady.change(windows([7000, 7050])) is None  # too few windows to judge


def test_a_cold_first_window_is_forgotten():
    """Opcache compiling the first requests: the first third of the windows is not judged."""
    assert first_steady([2500, 7000, 7020, 6990]) == steady.MIN_WINDOWS


def test_a_ramp_that_settles_is_steady_once_the_later_half_of_its_judged_windows_is_flat():
    ramp = [1000, 2000, 3000, 4000, 5000, 6000, 6500, 6600, 6600, 6550, 6600, 6620, 6580, 6600, 6610]
    n = first_steady(ramp)
    assert n is not None and n > 8  # not while climbing
    assert abs(steady.change(windows(ramp[:n]))) <= 0.05
    assert all(not steady.is_steady(windows(ramp[:k]), 0.05) for k in range(1, 8))


def test_a_plateau_inside_a_climb_does_not_end_the_warm_up():
    """Jetty + FPM on php-hello from a fresh start, 1 s windows (bench/RESULTS.md, "Steady
    state before measuring"): three flat seconds at 6-8 s, then the climb goes on. The
    rule that judged the last three windows alone would have measured it at 3.6k req/s."""
    jetty = [942, 1307, 1804, 2993, 3403, 3670, 3677, 3632, 3818, 4198, 4108, 3570, 3993, 4182, 4170, 4435, 4469,
             4363, 3825, 4054, 3977, 4424, 4616, 4234, 4666, 4649, 4813, 5250, 5409, 5641]
    last3 = [3670, 3677, 3632]
    assert max(last3) / (sum(last3) / 3) - 1 < 0.05  # flat by the naive rule at 8 s
    n = first_steady(jetty)
    assert n is None or n >= 20  # not before 20 s of load
    assert not any(steady.is_steady(windows(jetty[:k]), 0.05) for k in range(1, 15))


def test_a_noisy_stack_that_never_settles_is_not_steady_and_its_warm_up_ends_at_the_cap():
    rng = random.Random(7)
    climbing = [1000 * (1.12 ** i) * rng.uniform(0.97, 1.03) for i in range(30)]
    assert first_steady(climbing) is None
    load, asked = fake_load(climbing)
    warmed, _ = warmup.warm(load, parse(steady={"window": "1s", "cap": "20s"}), 16, fresh=True)
    assert warmed.steady is False and len(warmed.windows) == 20 and warmed.seconds == pytest.approx(20.0)


def test_noise_around_a_steady_rate_is_steady_once_averaged():
    """A VM's speed moving ±15 % from second to second (docs/methods.md): the halves'
    means settle, so the warm-up ends and the repetitions carry the noise."""
    rng = random.Random(3)
    noisy = [5000 * rng.uniform(0.85, 1.15) for _ in range(30)]
    n = first_steady(noisy)
    assert n is not None and n < 30


def test_a_stack_serving_nothing_is_steady_at_nothing_and_one_beginning_to_answer_is_not():
    assert steady.is_steady(windows([0, 0, 0]), 0.05)
    assert steady.change(windows([0, 0, 50])) is None and not steady.is_steady(windows([0, 0, 50]), 0.05)


def test_short_windows_are_judged_over_a_second_of_load_at_least():
    """0.2 s windows of a JIT still gaining 20 % a second (Jetty on static files, cold): three
    of them compare two consecutive fifths of a second, 4 % apart — inside the tolerance."""
    ramp = [2700 * 1.2 ** (0.2 * i) for i in range(20)]
    ws = [WarmupWindow(0.2, round(r * 0.2)) for r in ramp]
    assert abs(ws[2].per_s / ws[1].per_s - 1) < 0.05  # what three windows alone would see
    assert steady.change(ws[:3]) is None and steady.change(ws[:7]) is not None  # 5 judged windows: 1 s
    assert not any(steady.is_steady(ws[:n], 0.05) for n in range(1, 21))
    assert steady.least_s(1.0) == 3.0 and steady.least_s(0.2) == pytest.approx(1.4)


def test_windows_of_different_lengths_are_compared_by_their_rates():
    ws = [WarmupWindow(1.0, 100), WarmupWindow(2.0, 400), WarmupWindow(4.0, 800)]
    assert steady.change(ws) == pytest.approx(0.0)


def test_a_window_with_fewer_responses_than_clients_makes_the_next_one_twice_as_long():
    rule = Steady(window_s=1.0, cap_s=30)
    assert steady.next_window_s(rule, None, 16, 1.0) == 1.0
    assert steady.next_window_s(rule, WarmupWindow(1.0, 5), 16, 1.0) == 2.0
    assert steady.next_window_s(rule, WarmupWindow(2.0, 5), 16, 2.0) == 4.0
    assert steady.next_window_s(rule, WarmupWindow(4.0, 400), 16, 4.0) == 4.0


# -- the plan's keys


def parse(**keys):
    return plan_mod.parse({"stacks": STACKS, **keys}, "p.toml")


def test_steady_takes_the_defaults_and_a_fixed_warmup_works_as_before():
    p = parse(steady=True, warmup="1s")
    assert p.steady == Steady(1.0, 0.05, 30.0) and p.warmup_s == 1.0
    p = parse(warmup="10s")
    assert p.steady is None and p.warmup_s == 10.0
    assert parse().warmup_s == 0.5 and parse().steady is None and parse(steady=False).steady is None
    p = parse(steady={"window": "500ms", "tolerance": "3%", "cap": "20s"})
    assert p.steady == Steady(0.5, 0.03, 20.0)
    assert p.checked()["steady"] == {"window_s": 0.5, "tolerance": 0.03, "cap_s": 20.0}


@pytest.mark.parametrize("keys, said", [
    ({"steady": {"cap": "1s"}}, "steady.cap must hold at least 3 windows"),
    ({"steady": {"window": "20s"}}, "steady.window must be between"),
    ({"steady": {"tolerance": 0.9}}, "steady.tolerance must be at most 50%"),
    ({"steady": {"tolerance": "lots"}}, "steady: not a share"),
    ({"steady": {"windows": 3}}, "steady has no key 'windows'"),
    ({"steady": "30s"}, "steady takes true or a table"),
    ({"warmup": "steady"}, "not a duration"),
    ({"steady": True, "ramp": "up", "concurrency": [1, 8]}, "leave steady out"),
])
def test_bad_steady_keys_say_what_to_write(keys, said):
    with pytest.raises(PlanError, match=said):
        parse(**keys)


def test_a_dry_run_counts_a_starts_least_windows_and_a_slow_warming_stack_to_its_cap():
    p = plan_mod.parse({"stacks": [{"id": "nginx-fpm"}, {"id": "jetty-fpm"}], "restart": "stack",
                        "workloads": ["php-hello", "php-100k"], "concurrency": [16], "keepalive": [True],
                        "warmup": "0.5s", "steady": {"window": "0.25s", "cap": "10s"}, "syscalls": False,
                        "duration": "1s"}, "p.toml")
    cells = plan_mod.expand(p)
    assert p.fresh(cells) == [True, False, True, False]
    least = steady.least_s(0.25)
    assert least == 1.25  # five windows: the four after the first third span a second
    assert [p.warmup_seconds(c, f) for c, f in zip(cells, p.fresh(cells))] == [least, 0.5, 10.0, 0.5]
    assert p.seconds(cells) == pytest.approx(4 * (1 + plan_mod.START_STOP_S) + least + 10.0 + 2 * 0.5)
    assert p.longest_seconds(cells) == pytest.approx(4 * (1 + plan_mod.START_STOP_S) + 2 * 10.0 + 2 * 0.5
                                                     + 4 * (window_mod.cap_s(1.0, p.timeout_s) - 1.0))


# -- the warm-up stage, with a fake engine


def result(completed, seconds):
    return EngineResult.from_doc({"schema_version": 1, "started_unix_us": 1, "duration_us": round(seconds * 1e6),
                                  "requests": {"completed": completed, "failed": 0, "non_2xx": 0},
                                  "latency_us": {"percentiles": {}}})


def fake_load(rates):
    asked = []
    series = iter(rates)

    def load(seconds):
        asked.append(seconds)
        return result(round(next(series) * seconds), seconds)

    return load, asked


def test_the_warm_up_stops_once_steady_and_keeps_its_windows():
    load, asked = fake_load([800, 3000, 3100, 3050, 3080])
    p = parse(steady={"window": "0.5s", "cap": "10s"})
    warmed, last = warmup.warm(load, p, 16, fresh=True)
    assert warmed.steady is True and warmed.fresh and len(warmed.windows) == 3 and asked == [0.5] * 3
    assert warmed.seconds == pytest.approx(1.5) and last.requests.completed == 1550
    assert warmed.change == pytest.approx(3100 / 3000 - 1)


def test_a_warm_up_that_never_settles_ends_at_the_cap_and_says_so():
    load, asked = fake_load([1000 * 1.2 ** i for i in range(100)])
    p = parse(steady={"window": "1s", "cap": "4.5s"})
    warmed, _ = warmup.warm(load, p, 16, fresh=True)
    assert warmed.steady is False and warmed.fresh
    assert asked == [1.0, 1.0, 1.0, 1.0, 0.5] and warmed.seconds == pytest.approx(4.5)
    from stackbench import caveats

    (caveat,) = caveats.not_steady(warmed.steady, warmed.seconds, warmed.cap_s, warmed.tolerance, warmed.change)
    assert caveat.code == "not_steady" and caveat.facts.cap_s == 4.5 and caveat.facts.change > 0.05
    assert not caveats.load_failure(caveat) and not caveats.invalidates(caveat)  # a fact, not a bad run


def test_a_fixed_warm_up_is_one_load_and_is_recorded_unjudged_as_is_a_later_cell_of_a_steady_start():
    load, asked = fake_load([500, 500])
    warmed, last = warmup.warm(load, parse(warmup="2s"), 16, fresh=True)
    assert asked == [2.0] and warmed.steady is None and warmed.seconds == 2.0 and not warmed.windows
    assert warmup.warm(load, parse(warmup="0s"), 16, fresh=True) == (None, None)
    warmed, _ = warmup.warm(load, parse(warmup="0.5s", steady=True), 16, fresh=False)
    assert asked == [2.0, 0.5] and warmed.steady is None and not warmed.fresh


def test_a_stack_known_to_warm_in_steps_is_not_judged_before_its_time_or_before_the_cap():
    """A JVM's early plateau (Jetty + FPM from a fresh start, 0.25 s windows: bench/RESULTS.md,
    "Steady state before measuring") looks steady at 1.25 s; Jetty's steady_after_s keeps it
    warming, to the cap when the cap comes first."""
    plateau = [420, 568, 748, 712, 660] + [700 + 60 * i for i in range(100)]
    p = parse(steady={"window": "0.25s", "cap": "12s"})
    load, _ = fake_load(plateau)
    fooled, _ = warmup.warm(load, p, 16, fresh=True)
    assert fooled.steady and fooled.seconds == pytest.approx(1.25)
    load, asked = fake_load(plateau)
    warmed, _ = warmup.warm(load, p, 16, fresh=True, judged_from_s=45.0)
    assert warmed.steady is False and warmed.seconds == pytest.approx(12.0) and len(asked) == 48
    flat = [500, 900] + [1000] * 100
    load, _ = fake_load(flat)
    warmed, _ = warmup.warm(load, p, 16, fresh=True, judged_from_s=3.0)
    assert warmed.steady and warmed.seconds == pytest.approx(3.0)  # judged from then on
    from stackbench.stacks import registry

    assert registry.get("jetty-fpm").steady_after_s == 45.0 and registry.get("nginx-fpm").steady_after_s == 0.0
