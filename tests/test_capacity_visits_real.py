"""Ground truth for a capacity in visits on the real servers: php-sleep waits 50 ms a page,
so nginx + PHP-FPM with a static pool of 4 workers serves at most 4 / 0.05 s = 80 pages a
second; a visit of 2 such pages (no assets, 300 ms of think time between them) is at most
40 visits a second, whatever the think time. The search's probes are open-loop visits
(docs/methods/capacity.md, "Visits"): its capacity must land near 40 visits/s and never
above what a met probe served in visits. Its simulated twin, for 4 and 8 workers, is
tests/test_capacity_visits.py."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.analysis import capacity_results
from stackbench.planning import plan as plan_mod
from stackbench.runner import run_plan
from stackbench.store import Store

from conftest import require_stack
from test_capacity_ground_truth_real import PLAN as GROUND_PLAN

pytestmark = pytest.mark.servers

# The requests' known-ceiling plan (its 4-worker pool), its load made of visits.
DATA = tomllib.loads(GROUND_PLAN) | {
    "name": "known-ceiling-visits", "warmup": "0s", "stacks": tomllib.loads(GROUND_PLAN)["stacks"][:1],
    "search": {"budget": "14s", "start": 30, "precision": "5%", "confirm": 0, "edge": 2},
    "visit": {"pages": ["/sleep.php", "/sleep.php"], "think": "300ms"},
}
CEILING = 4 / 0.05 / 2  # visits a second


def test_php_sleep_visits_on_4_workers_have_a_capacity_near_n_over_50_ms_over_k_pages(tmp_path):
    require_stack("nginx-fpm")
    store = Store(tmp_path / "r.sqlite")
    outcome = run_plan(plan_mod.parse(DATA, "known-ceiling-visits.toml"), store)
    run_id = outcome.run_id
    (r,) = capacity_results.results(store.run(run_id), store.cells(run_id), store.search_rows(run_id))
    walked = [(p.rate, p.check.met, p.served_per_s, p.check.reasons[:1]) for p in r.probes]
    # every probe was of visits: served in visits a second, never more than the pool allows
    assert all(p.check.visits_served_per_s is not None for p in r.probes), walked
    assert all(s is not None and s <= CEILING * 1.02 for _, _, s, _ in walked), walked
    served = [s for _, met, s, _ in walked if met and s is not None]
    assert served, walked
    # the capacity in visits: near the ceiling, never above it nor above what a met probe served
    cap = r.edge.rate if r.edge is not None else r.low
    assert cap is not None and 0.8 * CEILING <= cap <= min(1.03 * CEILING, max(served)), walked
    # a probe well over the ceiling never met it
    assert not any(met for rate, met, _, _ in walked if rate >= 1.08 * CEILING), walked
