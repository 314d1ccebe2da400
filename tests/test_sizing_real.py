"""The machine to buy on the real servers (runner/sizing.py, analysis/sizing.py): a plan
with [sizing] asks its capacity question of each size (until one is enough) — the stack tuned for the target
rate there first — stores the sizing with each size's run, and names the smallest size
that is enough (a size none is enough on: tests/test_sizing.py). php-sleep (50 ms
asleep a request, no CPU) is the page: its capacity is the pool's, so the sizes are told
apart by what they fit, within seconds. At 100 requests/s a probe's ~100 responses take 1 s
(analysis/capacity.py probe_seconds)."""

from __future__ import annotations

import io
import tomllib

import pytest

from stackbench import yardstick
from stackbench.analysis.sizing import Enough
from stackbench.commands import sizing as sizing_cmd
from stackbench.planning import plan as plan_mod
from stackbench.runner import sizing as sizing_runner
from stackbench.store import Store

from conftest import require_stack

pytestmark = pytest.mark.servers

PLAN = '''
name = "sizing-test"
workloads = ["php-sleep"]
keepalive = [true]
slo = { p99 = "100ms", errors = 0 }
search = { budget = "10s", precision = "30%", edge = 0 }
duration = "0.5s"
warmup = "0s"
timeout = "5s"
repetitions = 1
syscalls = false
tune = { repetitions = 1 }
[sizing]
target = { rate = 100 }
sizes = [{ cpus = 1, memory = "256M", label = "small" }, { cpus = 1, memory = "512M", label = "big" }]
until_enough = true
[[stacks]]
id = "nginx-fpm"
label = "nginx + FPM"
knobs = "tuned"
'''


def test_a_sizing_tunes_each_size_for_the_target_searches_it_and_names_the_smallest_enough(tmp_path, monkeypatch):
    require_stack("nginx-fpm")
    monkeypatch.delenv(yardstick.SKIP_VAR)  # each size's run measures the server's core before it
    store = Store(tmp_path / "r.sqlite")
    plan = plan_mod.parse(tomllib.loads(PLAN), "sizing-test.toml")
    sized = sizing_runner.size(plan, store)
    # until_enough: the stack is enough on the first size, so the larger one is never measured
    assert not sized.errors and [r.size for r in sized.runs] == ["small"]
    stored = store.sizing(sized.sizing_id)
    assert stored.stacks == ("nginx + FPM",) and stored.target_rate == 100.0
    # the core the sizes were measured on: the runs' yardsticks, pooled
    cores = [store.run(r.run_id).environment.yardstick for r in stored.runs]
    assert stored.yardstick is not None and all(cores) and stored.yardstick.repetitions == yardstick.REPETITIONS
    assert min(c.score for c in cores if c) <= stored.yardstick.score <= max(c.score for c in cores if c)
    # the tuned stack: tuned for 100 requests/s on each size (the question's machine)
    tunings = store.tunings()
    assert len(tunings) == 1 and {t.machine["memory"] for t in tunings} == {"256M"}
    assert all(t.rate == 100.0 and t.chosen_size > 1 for t in tunings)  # one child cannot
    out = io.StringIO()
    sizing_cmd.show(store, sized.sizing_id, out)
    text = " ".join(out.getvalue().split())  # the sentence is wrapped for the terminal
    assert text.startswith("For 100 requests/s at peak") and "within p99 ≤ 100 ms" in text, text
    # one child asleep 50 ms a request carries ~20/s: the tuned pool is larger, and enough
    # on the smaller size
    assert "nginx + FPM needs small" in text, text
    assert f"1 core like this one (yardstick: {stored.yardstick.score:.0f})" in text, text
    runs = {r.size: r.run_id for r in stored.runs}
    from stackbench.analysis import sizing

    small = sizing.of_run(stored, "small", store.run(runs["small"]), store.cells(runs["small"]),
                          store.search_rows(runs["small"]))
    (tuned,) = small
    assert tuned.enough is Enough.YES and tuned.probes >= 2 and tuned.label.startswith("nginx + FPM (tuned: ")
