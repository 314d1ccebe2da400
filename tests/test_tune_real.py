"""`stackbench tune` on the real servers (analysis/tuning.py's rules, runner/tune.py's runs):
a page that waits gets a pool that serves its clients at once, a page that burns CPU a
small one; the tuning is stored, and a plan's knobs = "tuned" takes it without measuring
again."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.planning import plan as plan_mod
from stackbench.planning.tune import TuneQuestion
from stackbench.runner import run_plan
from stackbench.runner import tune as tune_runner
from stackbench.store import Store

from conftest import require_stack

pytestmark = pytest.mark.servers

MACHINE = {"cpus": 1, "memory": "512M"}


def _question(workload: str) -> TuneQuestion:
    return TuneQuestion("nginx-fpm", workload, 8, machine=MACHINE, duration="0.7s", repetitions=2)


def test_a_sleeping_page_gets_a_pool_for_its_clients_a_cpu_bound_one_a_small_one_and_a_plan_reuses_it(tmp_path):
    require_stack("nginx-fpm")
    store = Store(tmp_path / "r.sqlite")
    # php-sleep waits 50 ms and burns nothing: each worker adds 20 pages a second, up to
    # one per client
    sleep = tune_runner.tune(_question("php-sleep"), store)
    assert sleep.choice.chosen.size == 8, [(t.size, t.figures) for t in sleep.trials]
    assert sleep.knobs == {"pm": "static", "pm_max_children": 8}
    assert [t.size for t in sleep.trials] == [1, 2, 4, 8]  # 512 MiB fits far more: the clients bound it
    assert sleep.memory is not None and 1 << 20 < sleep.memory.worker_bytes < 64 << 20
    one, eight = sleep.trials[0].center, sleep.trials[-1].center
    assert 5 < eight / one < 12, (one, eight)  # ~8×: the pool is all a sleeping page needs
    # php-hello is all CPU on one core: more workers than that core can run buy nothing
    cpu = tune_runner.tune(_question("php-hello"), store)
    assert cpu.choice.chosen.size <= 4, [(t.size, t.figures) for t in cpu.trials]
    assert len(store.tunings()) == 2

    plan = plan_mod.parse(tomllib.loads('''
name = "reuse"
workloads = ["php-sleep"]
concurrency = [8]
keepalive = [true]
duration = "1s"
warmup = "0.3s"
repetitions = 1
syscalls = false
machine = { cpus = 1, memory = "512M" }
[[stacks]]
id = "nginx-fpm"
label = "nginx + FPM"
knobs = "tuned"
'''), "reuse.toml")
    runs_before = len(store.runs())
    tuned = tune_runner.resolve(plan, store)
    assert len(store.runs()) == runs_before and len(store.tunings()) == 2  # reused, nothing measured
    (v,) = tuned.stacks
    assert v.label == "nginx + FPM (tuned: 8 PHP-FPM children)" and v.tuning == sleep.tuning_id
    outcome = run_plan(tuned, store)
    (cell,) = store.cells(outcome.run_id)
    assert (cell.knobs["pm"], cell.knobs["pm_max_children"]) == ("static", 8)
    assert cell.stack_label == v.label
