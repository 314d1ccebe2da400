"""Ground truth for the capacity on the real servers: php-sleep waits 50 ms a request, so
nginx + PHP-FPM with a static pool of N workers serves at most N / 0.05 s a second (4
workers: 80/s, 8: 160/s), whatever the CPU. The capacity search must land near that and
never report more than a met probe served (docs/methods/capacity.md). Five full searches
of the 4-worker case are bench/known-ceiling/run.sh's; here one short search a pool
(p99 ≤ 250 ms: 1.25 s probes, ~100 responses each)."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.analysis import capacity_results
from stackbench.planning import plan as plan_mod
from stackbench.runner import run_plan
from stackbench.store import Store

from conftest import require_stack

pytestmark = pytest.mark.servers

PLAN = '''
name = "known-ceiling"
load = "capacity"
slo = { p99 = "250ms", errors = 0 }
search = { budget = "15s", start = 60, precision = "5%", confirm = 0, edge = 3 }
workloads = ["php-sleep"]
keepalive = [true]
duration = "1.25s"
warmup = "0.3s"
timeout = "5s"
syscalls = false
repetitions = 1

[[stacks]]
id = "nginx-fpm"
label = "4 workers"
knobs = { pm = "static", pm_max_children = 4 }

[[stacks]]
id = "nginx-fpm"
label = "8 workers"
knobs = { pm = "static", pm_max_children = 8 }
'''


def test_php_sleep_on_n_workers_has_a_capacity_at_most_n_over_50_ms_and_at_most_what_was_served(tmp_path):
    require_stack("nginx-fpm")
    store = Store(tmp_path / "r.sqlite")
    outcome = run_plan(plan_mod.parse(tomllib.loads(PLAN), "known-ceiling.toml"), store)
    run_id = outcome.run_id
    found = capacity_results.results(store.run(run_id), store.cells(run_id), store.search_rows(run_id))
    by = {r.stack_label: r for r in found}
    for label, ceiling in (("4 workers", 80.0), ("8 workers", 160.0)):
        r = by[label]
        walked = [(p.rate, p.check.met, p.figures.requests_per_s, p.check.reasons[:1]) for p in r.probes]
        served = [p.figures.requests_per_s for p in r.probes if p.check.met]
        assert r.edge is not None and served, walked
        # Every probe served what the pool allows, never more (the construction itself).
        assert all(s <= ceiling * 1.01 for _, _, s, _ in walked), walked
        # The capacity: near the ceiling, never above it nor above what a met probe served.
        assert 0.85 * ceiling <= r.edge.rate <= min(1.03 * ceiling, max(served)), walked
        assert r.edge.high is not None and r.edge.high <= max(served), walked
        # A probe well over the ceiling never met it, whatever its p99 said.
        assert not any(met for rate, met, _, _ in walked if rate >= 1.08 * ceiling), walked
