"""A capacity search on one running stack: probe the rate the search asks for, check the
probe against the SLO, tell the search, until it ends or its time budget would be
exceeded by the next probe. The search brackets the edge, then probes up and down
around it; the capacity is fitted to all its probes when the run is read
(analysis/capacity_edge.py), so a budget that ends the series early costs precision,
not the answer.

A probe that ends with requests still out leaves the stack working: the engine gave up
on them, but the server has them queued (nginx in front of one PHP-FPM child at half a
core had ~30 WordPress pages queued after a probe at twice its capacity) and would serve
them inside the next probe's window, which then reads "nothing completed" for every rate
after it — a search of 12 probes missed 9 in a row that way (bench/RESULTS.md, "The
machine to buy"). So after such a probe the next one waits until the stack has answered
what was left (at the rate it served) and it and its services are idle (`settle`), at
most the plan's timeout: a probe started on an earlier one's queue is not a probe.

The rates come from analysis/capacity.py (pure: it decides, the runner measures). Every
probe is a cell of its own, measured like any other (cell.py) and stored as it ends (seq,
seq + 1, …), so an interrupted search keeps what it measured; the search itself is stored
once it ended, which is what a resume looks at (repetitions.done_seqs).
"""

from __future__ import annotations

import time
from dataclasses import replace

from stackbench.analysis import capacity
from stackbench.engine.result import EngineResult
from stackbench.planning.plan import START_STOP_S, Cell, Plan
from stackbench.runner import visits
from stackbench.runner.cell import measure_and_store
from stackbench.runner.context import Run, StartedStack

# Idle: the stack and its services used under this share of one core over QUIET_S.
QUIET_SHARE = 0.05
QUIET_S = 0.2


def search(run: Run, stack: StartedStack, cell: Cell) -> None:
    plan = run.plan
    params = plan.load.search
    rates = capacity.Search(params)
    began = time.monotonic()
    k = 0
    while (rate := rates.next_rate()) is not None:
        # Long enough to hold ~100 responses at its rate (capacity.probe_seconds); of visits,
        # ~100 pages after the engine's warm-up (runner/visits.py probe_load).
        seconds, connections, lead = _probe_load(plan, cell, rate)
        probe = replace(cell, seq=cell.seq + k, rate=rate, concurrency=connections, step=k, duration_s=seconds)
        if k and time.monotonic() - began + plan.cell_seconds(probe) + lead - START_STOP_S > params.budget_s:
            rates.stop("budget")
            break
        record = measure_and_store(run, stack if not k else replace(stack, fresh=False), probe)
        # The typed result the probe already has: nothing is repacked for the check.
        outcome = capacity.check(record.status, record.error, record.engine, plan.load.slo)
        rates.record(rate, outcome.met, outcome.generator_limited)
        k += 1
        stack.instance.check_alive()
        if record.engine is not None and record.engine.requests.in_flight_at_end:
            settle(stack, plan.timeout_s, drain_s(record.engine))
    run.store.record_search(run.run_id, cell, rates.stopped or "probes", time.monotonic() - began)


def _probe_load(plan: Plan, cell: Cell, rate: float) -> tuple[float, int, float]:
    """A probe's window, connections (of visits: visitor slots) and engine warm-up."""
    at_least = cell.duration_s or plan.duration_s or 1.0
    if plan.visit is None:
        return capacity.probe_seconds(rate, at_least), plan.load.connections_for(rate), 0.0
    slots, seconds, lead = visits.probe_load(plan.visit, rate, cell.logged_in or 0.0, visits.budget_s(plan),
                                             at_least, plan.load.connections)
    return seconds, slots, lead


def drain_s(result: EngineResult) -> float:
    """How long the stack needs to answer what the engine left in flight, at the rate it
    served: a stack that waits (php-sleep, a slow backend) is idle in CPU while its queue
    drains, so the CPU alone cannot say the queue is gone."""
    left = result.requests.in_flight_at_end or 0
    served = result.requests.completed / (result.duration_us / 1e6) if result.duration_us else 0.0
    return left / served if served > 0 else 0.0


def settle(stack: StartedStack, most_s: float, drain: float = 0.0) -> float:
    """Wait until the stack is idle (the module docstring), at most `most_s`: first the
    time its queue takes to drain at the rate it served (`drain`), then until its CPU is
    quiet; the seconds waited. A stack without a cgroup: the drain only."""
    began = time.monotonic()
    time.sleep(min(drain, most_s))
    monitor = stack.monitor
    if monitor is None:
        return time.monotonic() - began
    last = monitor.cpu_used_us()
    while last is not None and time.monotonic() - began < most_s:
        time.sleep(QUIET_S)
        now = monitor.cpu_used_us()
        if now is None or now - last < QUIET_SHARE * QUIET_S * 1e6:
            break
        last = now
    return time.monotonic() - began
