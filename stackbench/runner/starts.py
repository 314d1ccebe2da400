"""One start of a stack serving a group of cells: up → check the target → verify →
(one cell, or a capacity search) × cells → down.

Cells share a start when they share a start key (`restart = "stack"`); a walk (ramp,
stages, a capacity search) has one of its own, and `restart = "cell"` gives every cell a
fresh stack. The stack is verified before anything is measured: one that serves the
wrong thing is not benchmarked. A server failure fails the rest of the group (stored as
failed cells, with the reason) and the plan goes on; whatever happened, the stack's
monitor stops and the stack comes down before the next start.
"""

from __future__ import annotations

import itertools
from contextlib import nullcontext
from dataclasses import replace
from typing import Iterator

from stackbench.errors import ServerError
from stackbench.model.cost import StoredCost
from stackbench.monitor.session import CellReadings, StackMonitor
from stackbench.network.topology import Topology
from stackbench.planning import machine as machine_mod, target
from stackbench.planning.plan import Cell, Plan, StackVariant
from stackbench.runner import capacity_search
from stackbench.runner.cell import keep, measure_and_store, record
from stackbench.runner.context import Options, Run, StartedStack
from stackbench.runner.lab import Lab
from stackbench.stacks.lifecycle import StackInstance
from stackbench.states import CellStatus
from stackbench.upkeep.pinning import Pinning


def grouped(cells: list[Cell], plan: Plan) -> Iterator[list[Cell]]:
    """`cells`, in order, as the groups that share a start (Plan.start_key)."""
    for _, group in itertools.groupby(cells, key=plan.start_key):
        yield list(group)


def new_instance(lab: Lab, plan: Plan, pins: Pinning, options: Options, cgroup_parent: str | None,
                 variant: StackVariant, workload_ids: list[str], listen: str | None = None) -> StackInstance:
    """A start of `variant` serving `workload_ids`, as every start of a run makes it: on
    the server's cores, its cgroups under `cgroup_parent` (the run's), confined to the
    plan's machine profile, listening on `listen` (default: loopback)."""
    # With TLS in the plan every start of the stack listens on both ports, its clear-text
    # cells too: HTTP and HTTPS cells then differ only in what the visitors speak.
    tls = {"tls": plan.protocols.tls} if plan.protocols.uses_tls else {}
    return lab.instance(variant, pins.server_cpus, options, cgroup_parent, [plan.workload(w) for w in workload_ids],
                        *([listen] if listen else []), machine=plan.machine, **tls)


def bring_up(instance: StackInstance, workload_ids: list[str], allow_remote_target: bool) -> None:
    """What a start does before anyone sends it a request: its configs rendered and
    checked, its servers (a workload's services first) started and ready, where it
    listens checked against where load may go, and every URL of its workloads verified
    (over TLS too, with the run's CA), PHP's state in force read back. A stack that
    serves the wrong thing is not measured, nor handed to the user."""
    instance.up()
    target.check(instance.host, allow_remote_target)  # before the first request
    instance.verify(sorted(workload_ids))


def serve(run: Run, cells: list[Cell], topo: Topology | None = None,
          listen: str | None = None) -> ServerError | None:
    """One stack start serving a group of cells. A server failure fails the rest of the
    group (stored as failed cells, with the reason) and the plan goes on. With a
    topology, the stack starts in its namespace (the lab's sockets to it — readiness,
    verification, status pages — are made from there too) and listens on its link."""
    plan, store, events, pins = run.plan, run.store, run.events, run.pins
    variant = cells[0].stack
    served = [w for w in plan.workloads if any(c.workload == w for c in cells)]
    in_server = topo.in_server if topo else nullcontext
    instance = new_instance(run.lab, plan, pins, run.options, run.monitor.cgroup_parent, variant, served, listen)
    stack = StartedStack(instance, run.lab.versions(instance.stack), topo)
    done = 0
    monitor: StackMonitor | None = None
    events.stack_starting(variant)
    try:
        with in_server():
            bring_up(instance, served, run.options.allow_remote_target)
            monitor = run.monitor.for_stack(instance)  # its status-page poller thread starts in there
        stack = replace(stack, monitor=monitor)
        events.stack_ready(variant, instance)
        for cell in cells:
            if cell.load == "capacity":
                capacity_search.search(run, stack, cell)
                done += 1
            else:
                measure_and_store(run, stack, cell)
                done += 1
                instance.check_alive()
            stack = replace(stack, fresh=False)  # its next cell finds it warmed
    except ServerError as e:
        # Killed by the small machine's OOM killer: a finding about the stack on that
        # machine, stored with the cells; the run itself did not fail.
        since = instance.machine_cgroup.since_start() if instance.machine_cgroup else None
        oom = machine_mod.oom_reason((since.oom_kills or 0) if since else 0, plan.machine)
        if oom and oom not in e.message:
            e.message += f" ({oom})"
        # A start that failed before any cell was measured: the machine's events so far
        # go with its first cell (once cells were measured, they are in theirs).
        readings = (CellReadings(cost=StoredCost(memory_events=since, oom_kills=since.oom_kills))
                    if since and not done else None)
        for cell in cells[done:]:
            if cell.load == "capacity":  # its probes so far are stored; the search is not
                store.record_search(run.run_id, cell, "failed", None)
                continue
            keep(run, stack, record(run, stack, cell, CellStatus.FAILED, error=e.message, readings=readings), readings)
            readings = None
        events.stack_failed(variant, e)
        return None if oom else e
    finally:
        if monitor:
            monitor.stop()
        instance.down()
        if run.options.keep_rundir and instance.ctx:
            events.rundir_kept(variant, instance.ctx.rundir)
    return None
