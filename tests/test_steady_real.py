"""A steady warm-up on a real stack through the whole runner (integration): the start's
first cell is warmed in windows of its own load until its throughput holds, that time is
stored as the start's time to steady, the next cell on the same start has the plan's fixed
warm-up, and the run reports each stack's time to steady."""

from __future__ import annotations

import io

import pytest

from conftest import run_real_plan
from stackbench.analysis.run import analyze
from stackbench.planning import steady
from stackbench.report.text import run_report

pytestmark = pytest.mark.servers

CAP_S = 3.0
PLAN = f"""
name = "steady"
duration = "0.5s"
warmup = "0.2s"
steady = {{ window = "0.2s", cap = "{CAP_S:g}s" }}
restart = "stack"
syscalls = false
concurrency = [4, 8]
keepalive = [true]
workloads = ["php-hello"]
[[stacks]]
id = "nginx-fpm"
knobs = {{ pm = "static", pm_max_children = 4 }}
"""


def test_a_stacks_start_records_its_time_to_steady():
    store, (first, second) = run_real_plan(PLAN, "steady.toml", "nginx-fpm")
    w = first.warmup
    assert w is not None and w.fresh and w.judged and w.cap_s == CAP_S and w.tolerance == 0.05
    assert len(w.windows) >= steady.MIN_WINDOWS and all(x.completed > 0 for x in w.windows)
    # the windows are the load the warm-up took, and it stopped when steady or at the cap
    assert w.seconds == pytest.approx(sum(x.seconds for x in w.windows), abs=1e-3)
    assert 3 * 0.2 * 0.9 <= w.seconds <= CAP_S + 0.2
    assert w.steady == steady.is_steady(w.windows, w.tolerance)
    assert ("not_steady" in [c.code for c in first.caveats]) is (w.steady is False)
    assert (second.warmup.fresh, second.warmup.steady, second.warmup.seconds) == (False, None, 0.2)
    assert first.engine.requests.completed > 0 and second.engine.requests.completed > 0  # measured after it
    row = store.db.execute("SELECT warmup_us, steady FROM cells WHERE seq = 0").fetchone()
    assert row[0] == round(first.warmup.seconds * 1e6) and row[1] == int(first.warmup.steady)
    (only,) = analyze(store.run(first.run_id), [first, second]).steady
    assert only.seconds == (first.warmup.seconds,)
    out = io.StringIO()
    run_report.render(analyze(store.run(first.run_id), [first, second]), out)
    assert "time to steady" in out.getvalue() and "nginx-fpm" in out.getvalue()
