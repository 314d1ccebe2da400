"""Running a plan: for each stack variant, start → verify → for each cell: warm up,
load, store → stop. Nothing here formats text; progress goes to an Events observer."""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from pathlib import Path

from stackbench import engine, environment, pinning as pinning_mod, warnings, workloads
from stackbench.errors import ServerError, StackbenchError
from stackbench.lock import RunLock
from stackbench.monitor.run import RunMonitor
from stackbench.monitor.session import CellCost, StackMonitor
from stackbench.plan import Cell, Plan, StackVariant, expand
from stackbench.stacks import installed, registry
from stackbench.stacks.lifecycle import StackInstance
from stackbench.store import CellRecord, Store


class Events:
    """What a run reports while it goes. The default does nothing (tests, non-TTY)."""

    def plan_started(self, run_id: int, plan: Plan, cells: list[Cell], pinning: pinning_mod.Pinning) -> None: ...
    def stack_starting(self, variant: StackVariant) -> None: ...
    def stack_ready(self, variant: StackVariant, instance: StackInstance) -> None: ...
    def cell_started(self, cell: Cell) -> None: ...
    def cell_finished(self, cell: Cell, record: CellRecord) -> None: ...
    def stack_failed(self, variant: StackVariant, error: StackbenchError) -> None: ...
    def rundir_kept(self, variant: StackVariant, path: Path) -> None: ...
    def plan_finished(self, run_id: int, status: str) -> None: ...


@dataclass
class Options:
    workdir: Path | None = None
    keep_rundir: bool = False
    pinning: pinning_mod.Pinning | None = None


@dataclass
class Outcome:
    run_id: int
    status: str  # complete | failed | interrupted
    errors: list[StackbenchError] = field(default_factory=list)


def run_plan(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None) -> Outcome:
    events = events or Events()
    options = options or Options()
    cells = expand(plan)
    lock = RunLock()
    lock.acquire()
    try:
        return _run_locked(plan, cells, store, events, options)
    finally:
        lock.release()


def _run_locked(plan: Plan, cells: list[Cell], store: Store, events: Events, options: Options) -> Outcome:
    preflight(plan, options)
    engine.binary()  # fail now, not after the first stack started
    pins = options.pinning or pinning_mod.choose()
    # The lab itself (sampler, perf, Python) stays off the server's cores.
    pinning_mod.pin_self(pins.engine_cpus)
    run_id = store.begin_run(plan.name, plan.source, plan.raw, environment.collect(pins))
    events.plan_started(run_id, plan, cells, pins)
    outcome = Outcome(run_id, "failed")
    monitor = RunMonitor(pins.engine_cpus, plan.sample_interval_s, plan.syscalls)
    try:
        for _, group in itertools.groupby(cells, key=lambda c: _start_key(c, plan)):
            error = _run_group(list(group), plan, store, run_id, pins, events, options, monitor)
            if error:
                outcome.errors.append(error)
        outcome.status = "failed" if outcome.errors else "complete"
    except KeyboardInterrupt:
        outcome.status = "interrupted"
        raise
    except StackbenchError as e:  # e.g. a port in use: the run stops, and says why
        outcome.errors.append(e)
        raise
    finally:
        store.finish_run(run_id, outcome.status, "; ".join(e.message for e in outcome.errors) or None)
        events.plan_finished(run_id, outcome.status)
        monitor.close()
    return outcome


def _start_key(cell: Cell, plan: Plan) -> tuple:
    """Cells with the same key share one start of their stack."""
    if plan.restart == "cell":
        return (cell.seq,)
    return (cell.repetition, cell.stack.label)


def preflight(plan: Plan, options: Options) -> None:
    """Before measuring anything: every stack installed, every config accepted by its
    server's checker. A typo in the last stack of a long plan fails in a second."""
    for variant in plan.stacks:
        installed.require(registry.get(variant.id))
    for variant in plan.stacks:
        _instance(variant, [], options).preflight()


def _instance(variant: StackVariant, cpus: list[int], options: Options,
              cgroup_parent: str | None = None) -> StackInstance:
    return StackInstance(registry.get(variant.id), variant.knobs, label=variant.label, cpus=cpus,
                         port=variant.port, workdir=options.workdir, keep_rundir=options.keep_rundir,
                         cgroup_parent=cgroup_parent)


def _run_group(cells: list[Cell], plan: Plan, store: Store, run_id: int, pins: pinning_mod.Pinning,
               events: Events, options: Options, run_monitor: RunMonitor) -> ServerError | None:
    """One stack start serving a group of cells. A server failure fails the rest of the
    group (stored as failed cells, with the reason) and the plan goes on."""
    variant = cells[0].stack
    instance = _instance(variant, pins.server_cpus, options, run_monitor.cgroup_parent)
    versions = installed.versions(instance.stack)
    done = 0
    monitor: StackMonitor | None = None
    events.stack_starting(variant)
    try:
        instance.up()
        instance.verify(sorted({c.workload for c in cells}))
        monitor = run_monitor.for_stack(instance)
        events.stack_ready(variant, instance)
        for cell in cells:
            events.cell_started(cell)
            record = _measure(cell, plan, instance, versions, pins, monitor)
            store.record_cell(run_id, record)
            done += 1
            events.cell_finished(cell, record)
            instance.check_alive()
    except ServerError as e:
        for cell in cells[done:]:
            store.record_cell(run_id, _record(cell, instance, versions, pins, "failed", error=e.message))
        events.stack_failed(variant, e)
        return e
    finally:
        if monitor:
            monitor.stop()
        instance.down()
        if options.keep_rundir and instance.ctx:
            events.rundir_kept(variant, instance.ctx.rundir)
    return None


def _measure(cell: Cell, plan: Plan, instance: StackInstance, versions: dict, pins: pinning_mod.Pinning,
             monitor: StackMonitor) -> CellRecord:
    workload = workloads.get(cell.workload)
    spec = engine.LoadSpec(
        url=f"http://127.0.0.1:{instance.port}{workload.path}",
        connections=cell.concurrency,
        threads=plan.threads or len(pins.engine_cpus) or 1,
        duration_s=plan.duration_s, requests=plan.requests,
        keepalive=cell.keepalive, timeout_s=plan.timeout_s, count_headers=instance.stack.count_headers,
    )
    if plan.warmup_s:
        # A separate, uncounted run, so the monitor's window is exactly the measured one.
        engine.run(replace(spec, duration_s=plan.warmup_s, requests=None), cpus=pins.engine_cpus)
    monitor.begin_cell()
    try:
        doc = engine.run(spec, cpus=pins.engine_cpus)
    finally:  # also on Ctrl-C: the sampler and poller threads must stop
        cost = monitor.end_cell()
    if plan.syscall_profile_s and not instance.dead_servers() and monitor.begin_profile():
        # System calls are counted in a pass of their own: perf's tracepoints slow every
        # system call, so counting during the measured window would bias it (syscalls.py).
        pdoc = engine.run(replace(spec, duration_s=plan.syscall_profile_s, requests=None), cpus=pins.engine_cpus)
        monitor.end_profile(cost, pdoc["started_unix_us"], pdoc["started_unix_us"] + pdoc["duration_us"], pdoc)
    dead = instance.dead_servers()
    if dead:
        # The server died under load: keep what the engine saw, marked failed.
        error = f"{dead[0].name} exited with status {dead[0].popen.returncode} during the load"
        return _record(cell, instance, versions, pins, "failed", engine_doc=doc, error=error, cost=cost)
    return _record(cell, instance, versions, pins, "ok", engine_doc=doc, cost=cost)


def _record(cell: Cell, instance: StackInstance, versions: dict, pins: pinning_mod.Pinning, status: str,
            engine_doc: dict | None = None, error: str | None = None, cost: CellCost | None = None) -> CellRecord:
    pin = pins.as_dict()
    return CellRecord(
        seq=cell.seq, repetition=cell.repetition, stack_id=cell.stack.id, stack_label=cell.stack.label,
        knobs=instance.knobs, workload=cell.workload, concurrency=cell.concurrency, keepalive=cell.keepalive,
        status=status, versions=versions, pinning=pin, files=dict(instance.files), engine=engine_doc,
        error=error, warnings=warnings.for_cell(engine_doc, pin) if engine_doc else [], cost=cost,
    )

