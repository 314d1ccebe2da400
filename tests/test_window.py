"""Windows sized to the work (planning/window.py): a fast stack keeps the plan's window;
a slow one is measured by a count of responses, capped; a stack that failed keeps its window."""

from __future__ import annotations

from stackbench.planning import window
from stackbench.planning.window import Pace, Window


def test_a_stack_the_window_holds_many_responses_of_keeps_it():
    assert window.size(2.0, 10.0, 0.02, 16, Pace(50_000.0)) == Window(2.0)


def test_without_a_pace_the_plan_window_is_kept():
    assert window.size(3.0, 30.0, 0.02, 16, None) == Window(3.0)


def test_wordpress_on_one_core_is_counted_not_timed():
    """16 clients, 10.7 pages/s: a 3 s window holds 32 responses (steps of 3 %), two a
    client. Measured by a count of 3 a client instead, capped at 4 windows."""
    w = window.size(3.0, 30.0, 0.02, 16, Pace(10.7))
    assert w == Window(12.0, 48) and w.counted


def test_a_count_holds_what_the_window_would_when_that_is_more():
    # 40 responses in 2 s at 4 clients: 10 a client, but under the 100 a ±2 % step needs
    assert window.size(2.0, 10.0, 0.02, 4, Pace(20.0)) == Window(8.0, 40)


def test_the_cap_is_stretch_times_the_window_or_a_second_past_the_deadline():
    assert window.cap_s(2.0, 10.0) == 8.0
    assert window.cap_s(3.0, 5.0) == 6.0
    assert window.cap_s(5.0, 1.0) == 5.0  # never shorter than the plan's window
    assert window.resolve_count(0.02) == 100 and window.resolve_count(0.05) == 40


def test_the_dry_run_says_the_rule():
    words = window.describe(3.0, 30.0, 0.02)
    assert "3 s where the stack answers 100 responses in it and 3 a client" in words and "at most 12 s" in words


def test_a_stack_that_failed_the_load_keeps_the_plan_window():
    """Its database OOM-killed, every answer an error page: no count would answer better."""
    assert window.size(3.0, 30.0, 0.02, 64, Pace(0.0, failing=True)) == Window(3.0)


def test_a_stack_that_left_clients_waiting_gets_the_longest_fixed_window_not_a_count():
    """Apache mod_php, 64 kept-alive WordPress clients: 56 waited through a 4 s window. A
    count would let them in once the others' share was done; a 16 s fixed window shows
    whether they were held back."""
    w = window.size(4.0, 30.0, 0.02, 64, Pace(19.0, waiting=56))
    assert w == Window(16.0) and not w.counted
    assert window.size(4.0, 30.0, 0.02, 64, Pace(19.0, failing=True, waiting=56)) == Window(4.0)


def test_a_level_climbed_to_on_the_same_start_is_sized_from_the_level_before():
    # small-vps climbs 16 → 64 → 256 WordPress clients on one start: the 256-client cell of
    # the first repetition has no pace of its own and no warm-up, but the 64-client cell
    # just measured on the same start read ~24 pages/s — its window is a count, not the
    # plan's 4 s (which holds a page for a tenth of the clients).
    import tomllib
    from types import SimpleNamespace

    from stackbench.engine.process import LoadSpec
    from stackbench.planning import plan as plan_mod
    from stackbench.runner import cell as cell_mod

    plan = plan_mod.parse(tomllib.loads('''
workloads = ["php-hello"]
concurrency = [64, 256]
keepalive = [true]
duration = "4s"
warmup = "0s"
timeout = "30s"
restart = "stack"
[[stacks]]
id = "nginx-fpm"
'''), "p.toml")
    c256 = next(c for c in plan_mod.expand(plan) if c.concurrency == 256)
    run = SimpleNamespace(plan=plan, paces={})
    spec = LoadSpec("http://127.0.0.1/", 256, duration_s=4.0)
    kept = cell_mod._sized(run, c256, spec, None)
    assert (kept.duration_s, kept.requests) == (4.0, None)  # nothing known: the plan's window
    climbed = cell_mod._sized(run, c256, spec, None, window.Pace(24.0, waiting=40))
    assert climbed.requests == 3 * 256 and climbed.duration_s == window.cap_s(4.0, 30.0)
