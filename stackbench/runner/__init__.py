"""Running a plan: begin a stored run, then for each group of cells: start the stack →
verify → (warm up → load + sample → profile pass → store) × cells → stop.

Adaptive repetitions (repetitions = "auto") ask analysis/verdicts.py after each whole
repetition whether the intervals are narrow enough — the one place the runner reads
analysis. Two entry points, so an interrupted run can be finished: `begin` stores a new run and
returns its id; `run` measures a list of cells into a run (all of them, or the ones a
resume still needs). What the runner talks to — the load engine, the stacks, the
monitor, the environment, the run lock — comes in a `Lab`, so tests pass fakes instead
of monkeypatching. Nothing here formats text; progress goes to an Events observer.
"""

from __future__ import annotations

import itertools
import time
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable, Iterator

from stackbench import caveats, engine
from stackbench.planning import limits, machine as machine_mod, target
from stackbench.upkeep import environment, leftovers, pinning as pinning_mod, ports
from stackbench.analysis import capacity, verdicts
from stackbench.engine import EngineResult, LoadSpec
from stackbench.engine.background import Background, spec_for
from stackbench.errors import ServerError, StackbenchError
from stackbench.events import Events
from stackbench.upkeep.lock import RunLock
from stackbench.monitor import memory_events
from stackbench.monitor import status_pages
from stackbench.monitor.run import RunMonitor
from stackbench.monitor.session import CellCost, StackMonitor
from stackbench.network import check as network_check
from stackbench.network.session import NetworkSession
from stackbench.network.topology import Topology
from stackbench.network.visitors import members
from stackbench.planning.plan import START_STOP_S, Cell, Plan, StackVariant, expand
from stackbench.stacks import installed, registry
from stackbench.stacks.lifecycle import StackInstance
from stackbench.states import CellStatus, RunStatus
from stackbench.store import CellRecord, Store
from stackbench.hosts.clients import ClientSession, check_allowed as check_clients_allowed
from stackbench.hosts.placement import placed
from stackbench.workloads.base import Workload


@dataclass
class Options:
    workdir: Path | None = None
    keep_rundir: bool = False
    pinning: pinning_mod.Pinning | None = None
    allow_remote_target: bool = False  # --allow-remote-target (target.py)


def _make_instance(variant: StackVariant, cpus: list[int], options: Options, cgroup_parent: str | None,
                   workload_list: list[Workload], host: str | None = None,
                   machine: machine_mod.MachineProfile | None = None) -> StackInstance:
    extra = {"host": host} if host else {}
    return StackInstance(registry.get(variant.id), variant.knobs, label=variant.label, cpus=cpus,
                         port=variant.port, workdir=options.workdir, keep_rundir=options.keep_rundir,
                         cgroup_parent=cgroup_parent, workloads=workload_list, machine=machine, **extra)


@dataclass
class Lab:
    """The runner's collaborators. The defaults are the real ones; tests replace some."""

    load: Callable[[LoadSpec, list[int]], EngineResult] = engine.run
    # The other visitor classes' engines (None: `load`). A run with clients spreads the
    # measured load over them; the classes stay one engine each, in their namespaces.
    background_load: Callable[[LoadSpec, list[int]], EngineResult] | None = None
    engine_binary: Callable[[], str] = engine.binary
    instance: Callable[..., StackInstance] = _make_instance
    monitor: Callable[[list[int], float, bool], RunMonitor] = RunMonitor
    environment: Callable[[pinning_mod.Pinning], dict] = environment.collect
    lock: Callable[[], RunLock] = RunLock
    require: Callable = installed.require
    require_workload: Callable = installed.require_workload
    versions: Callable = installed.versions
    pin_self: Callable[[list[int]], None] = pinning_mod.pin_self
    sweep: Callable[[], leftovers.Swept] = leftovers.sweep


@dataclass
class Outcome:
    run_id: int
    status: RunStatus
    errors: list[StackbenchError] = field(default_factory=list)
    # How many repetitions ran and why they stopped: {"reason": "fixed" | "target" |
    # "cap", "repetitions": n, "worst_half_width": w, "target": t, "open_pairs": k}
    stop: dict | None = None


def run_plan(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
             lab: Lab | None = None) -> Outcome:
    """A new run of the whole plan."""
    lab, options = lab or Lab(), options or Options()
    with _session(plan, store, events, options, lab) as (pins, here, clients):
        run_id = begin(plan, store, here, pins)
        return run(run_id, plan, expand(plan), store, events, options, here, pins, clients)


def resume(run_id: int, plan: Plan, done_seqs: set[int], store: Store, events: Events | None = None,
           options: Options | None = None, lab: Lab | None = None) -> Outcome:
    """Finish a stored run: the cells whose seq is not in `done_seqs`, in the original order
    (a capacity search is done when its seq is: see `done_seqs`)."""
    lab, options = lab or Lab(), options or Options()
    remaining = [c for c in expand(plan) if c.seq not in done_seqs]
    with _session(plan, store, events, options, lab) as (pins, here, clients):
        store.reopen_run(run_id)
        return run(run_id, plan, remaining, store, events, options, here, pins, clients)


@contextmanager
def _session(plan: Plan, store: Store, events: Events | None, options: Options,
             lab: Lab) -> Iterator[tuple[pinning_mod.Pinning, Lab, ClientSession | None]]:
    """One measuring run per machine (the lock), and everything checked before the first
    measurement: packages, configs, the engine. Holding the lock proves no other lab is
    alive, so what a dead one left is swept now and its runs are marked crashed. Other
    hosts are connected (the server's agent started, the engine shipped to clients, their
    clocks probed) before a run is stored: a host that cannot be reached leaves no empty
    run behind. Yields the lab the run uses: with a server on another host, its stack,
    monitor, packages and environment are the agent's there (hosts/server.py)."""
    lock = lab.lock()
    lock.acquire()
    clients: ClientSession | None = None
    events = events or Events()
    try:
        swept = lab.sweep()
        events.lab_tidied(swept, store.mark_crashed())
        check_clients_allowed(plan.hosts, options.allow_remote_target, plan.duration_s)  # before any connection
        # A machine profile's cores come out of the server's half (machine.py).
        pins = machine_mod.pinning(plan.machine, options.pinning or pinning_mod.choose())
        with placed(plan, pins, lab, events.server_ready) as there:
            here, pins = there.lab, there.pins
            preflight(plan, options, here)
            there.check_same_site()
            here.engine_binary()  # fail now, not after the first stack started
            # The lab itself (sampler, perf, Python) stays off the server's cores.
            here.pin_self(pins.engine_cpus)
            try:
                if not plan.hosts.single_local:
                    clients = ClientSession.open(plan.hosts, here.engine_binary)
                    events.clients_ready(clients.facts())
                yield pins, here, clients
            finally:
                if clients is not None:
                    clients.close()
    finally:
        lock.release()


def begin(plan: Plan, store: Store, lab: Lab, pins: pinning_mod.Pinning) -> int:
    """Store a new run (the plan as written and as checked, the environment — with the
    machine profile it emulated, if any)."""
    env = lab.environment(pins)
    if plan.machine is not None:
        env["machine_profile"] = plan.machine.as_dict() | {"server_cpus": pins.server_cpus}
    return store.begin_run(plan.name, plan.source, plan.raw, plan.checked(), env)


def run(run_id: int, plan: Plan, cells: list[Cell], store: Store, events: Events | None, options: Options,
        lab: Lab, pins: pinning_mod.Pinning, clients: ClientSession | None = None) -> Outcome:
    """Measure `cells` into run `run_id`; the run's status says how it ended."""
    events = events or Events()
    events.plan_started(run_id, plan, cells, pins)
    outcome = Outcome(run_id, RunStatus.FAILED)
    monitor = lab.monitor(pins.engine_cpus, plan.sample_interval_s, plan.syscalls)
    network = NetworkSession(plan, store, run_id, pins.engine_cpus)
    # With clients, every load of the run is spread over them.
    here = replace(lab, load=clients.load, background_load=lab.load) if clients else lab

    def measure(batch: list[Cell]) -> None:
        for _, group in itertools.groupby(batch, key=lambda c: _start_key(c, plan)):
            cells_of_start = list(group)
            with network.start(cells_of_start[0]) as topo:
                listen = topo.server_addr if topo else clients.listen if clients else None
                error = _run_group(cells_of_start, plan, store, run_id, pins, events, options, monitor, here, topo,
                                   listen)
            if error:
                outcome.errors.append(error)

    try:
        if plan.adaptive:
            outcome.stop = _run_adaptive(run_id, plan, cells, store, measure)
        else:
            measure(cells)
            outcome.stop = {"reason": "fixed", "repetitions": plan.repetitions}
        store.set_stop(run_id, outcome.stop)
        outcome.status = RunStatus.FAILED if outcome.errors else RunStatus.COMPLETE
    except KeyboardInterrupt:
        outcome.status = RunStatus.INTERRUPTED
        raise
    except StackbenchError as e:  # e.g. a port in use: the run stops, and says why
        outcome.errors.append(e)
        raise
    finally:
        # Each step even when one before fails (a store that became unwritable must not
        # leave perf running); the first failure is raised after the last step.
        _each(lambda: store.finish_run(run_id, outcome.status, "; ".join(e.message for e in outcome.errors) or None),
              lambda: events.plan_finished(run_id, outcome.status),
              monitor.close)
    return outcome


def _each(*steps: Callable[[], None]) -> None:
    failure: Exception | None = None
    for step in steps:
        try:
            step()
        except Exception as e:
            failure = failure or e
    if failure is not None:
        raise failure


def _quietly(step: Callable[[], object]) -> None:
    """A clean-up step while another exception is on its way: that one is reported."""
    try:
        step()
    except Exception:  # noqa: BLE001 - the exception in flight says what went wrong
        pass


def _run_adaptive(run_id: int, plan: Plan, cells: list[Cell], store: Store,
                  measure: Callable[[list[Cell]], None]) -> dict:
    """Whole repetitions, interleaved A B A B, until every compared pair's CI is within
    ±target_ci (after at least min_repetitions), or max_repetitions ran (the Phoronix
    Test Suite's dynamic run count, with a CI instead of a standard deviation)."""
    by_rep = {rep: list(group) for rep, group in itertools.groupby(cells, key=lambda c: c.repetition)}
    for rep in range(plan.max_repetitions):
        if rep >= plan.min_repetitions:
            spread = verdicts.spread(store.cells(run_id), plan.baseline)
            if spread.narrow_enough(plan.target_ci):
                return _stop("target", rep, spread, plan)
        measure(by_rep.get(rep, []))  # empty when a resumed run already has it
    return _stop("cap", plan.max_repetitions, verdicts.spread(store.cells(run_id), plan.baseline), plan)


def _stop(reason: str, repetitions: int, spread: "verdicts.Spread", plan: Plan) -> dict:
    return {"reason": reason, "repetitions": repetitions, "worst_half_width": spread.worst_half_width,
            "target": plan.target_ci, "open_pairs": spread.open_pairs}


def done_seqs(plan: Plan, store: Store, run_id: int) -> set[int]:
    """What a resumed run keeps: measured cells, and capacity searches that ended (their
    probes). A failed cell is forgotten, to be measured again; so are the probes of a
    search that did not end — the search starts over, since its next rates depended on
    them."""
    cells = store.cells(run_id)
    ended = {seq for seq, stopped in store.searches(run_id).items() if stopped != "failed"}
    searches = [c.seq for c in expand(plan) if c.load == "capacity"]
    forget, done = [], set()
    for c in cells:
        base = next((b for b in searches if b <= c["seq"] < b + capacity.MAX_PROBES), None)
        if base is not None:
            (done.add(base) if base in ended else forget.append(c["seq"]))
        elif c["status"] == CellStatus.OK.value:
            done.add(c["seq"])
        else:
            forget.append(c["seq"])
    done |= ended
    if forget:
        store.forget_cells(run_id, forget)
    store.forget_searches(run_id, [b for b in searches if b not in ended])
    return done


def _start_key(cell: Cell, plan: Plan) -> tuple:
    """Cells with the same key share one start of their stack: a walk (ramp, stages, a
    capacity search) has one of its own."""
    if plan.restart == "cell":
        return (cell.seq,)
    if plan.load.walk:
        return (cell.repetition, cell.stack.label, cell.network, cell.background, cell.workload, cell.keepalive)
    return (cell.repetition, cell.stack.label, cell.network, cell.background)


def dry_check(plan: Plan, options: Options, lab: Lab | None = None) -> list[dict]:
    """What `run --dry-run` checks: the preflight, on the server's and the database's hosts
    when they are other ones (connected for it, their agents started and ended); returns
    those hosts' facts, each with its role."""
    lab = lab or Lab()
    check_clients_allowed(plan.hosts, options.allow_remote_target, plan.duration_s)  # before any connection
    with placed(plan, machine_mod.pinning(plan.machine, options.pinning or pinning_mod.choose()), lab) as there:
        preflight(plan, options, there.lab)
        there.check_same_site()
        return there.facts()


def preflight(plan: Plan, options: Options, lab: Lab | None = None) -> None:
    """Before measuring anything: every stack and workload installed, every config
    accepted by its server's checker. A typo in the last stack of a long plan fails in a
    second."""
    lab = lab or Lab()
    limits.check_machine(plan)
    check_clients_allowed(plan.hosts, options.allow_remote_target, plan.duration_s)
    if plan.namespaced:
        network_check.require(plan)
    for variant in plan.stacks:
        lab.require(registry.get(variant.id))
        if variant.port is not None and not plan.hosts.remote_server:  # there, the agent checks it
            ports.ensure_free(variant.port)
    for wid in plan.workloads:
        lab.require_workload(plan.workload(wid))
    for variant in plan.stacks:
        for group in plan.start_groups():
            lab.instance(variant, [], options, None, [plan.workload(w) for w in group]).preflight()


def _run_group(cells: list[Cell], plan: Plan, store: Store, run_id: int, pins: pinning_mod.Pinning,
               events: Events, options: Options, run_monitor: RunMonitor, lab: Lab,
               topo: Topology | None = None, listen: str | None = None) -> ServerError | None:
    """One stack start serving a group of cells. A server failure fails the rest of the
    group (stored as failed cells, with the reason) and the plan goes on. With a
    topology, the stack starts in its namespace (the lab's sockets to it — readiness,
    verification, status pages — are made from there too) and listens on its link."""
    variant = cells[0].stack
    served = [w for w in plan.workloads if any(c.workload == w for c in cells)]
    in_server = topo.in_server if topo else nullcontext
    instance = lab.instance(variant, pins.server_cpus, options, run_monitor.cgroup_parent,
                            [plan.workload(w) for w in served], *([listen] if listen else []),
                            machine=plan.machine)
    versions = lab.versions(instance.stack)
    done = 0
    monitor: StackMonitor | None = None
    events.stack_starting(variant)
    try:
        with in_server():
            instance.up()
            target.check(instance.host, options.allow_remote_target)  # before the first request
            instance.verify(sorted({c.workload for c in cells}))
            monitor = run_monitor.for_stack(instance)  # its status-page poller thread starts in there
        events.stack_ready(variant, instance)
        for cell in cells:
            if cell.load == "capacity":
                _search(cell, plan, store, run_id, instance, versions, pins, monitor, events, lab, topo)
                done += 1
                continue
            events.cell_started(cell)
            record = _measure(cell, plan, instance, versions, pins, monitor, lab, topo, events)
            store.record_cell(run_id, record)
            done += 1
            events.cell_finished(cell, record)
            instance.check_alive()
    except ServerError as e:
        # Killed by the small machine's OOM killer: a finding about the stack on that
        # machine, stored with the cells; the run itself did not fail.
        since = instance.machine_cgroup.since_start() if instance.machine_cgroup else None
        oom = machine_mod.oom_reason(since["oom_kills"] if since else 0, plan.machine)
        if oom and oom not in e.message:
            e.message += f" ({oom})"
        # A start that failed before any cell was measured: the machine's events so far
        # go with its first cell (once cells were measured, they are in theirs).
        cost = CellCost(memory_events=since, oom_kills=since["oom_kills"]) if since and not done else None
        for cell in cells[done:]:
            if cell.load == "capacity":  # its probes so far are stored; the search is not
                store.record_search(run_id, cell, "failed", None)
                continue
            store.record_cell(run_id, _record(cell, instance, versions, pins, CellStatus.FAILED, error=e.message,
                                              cost=cost))
            cost = None
        events.stack_failed(variant, e)
        return None if oom else e
    finally:
        if monitor:
            monitor.stop()
        instance.down()
        if options.keep_rundir and instance.ctx:
            events.rundir_kept(variant, instance.ctx.rundir)
    return None


def _search(cell: Cell, plan: Plan, store: Store, run_id: int, instance: StackInstance, versions: dict,
            pins: pinning_mod.Pinning, monitor: StackMonitor, events: Events, lab: Lab,
            topo: Topology | None = None) -> None:
    """A capacity search on one running stack: probe the rate the search asks for, check
    the probe against the SLO, tell the search, until it ends or its time budget would
    be exceeded by the next probe. Every probe is stored as a cell (seq, seq + 1, …)."""
    params = plan.load.search
    search = capacity.Search(params)
    began = time.monotonic()
    k = 0
    while (rate := search.next_rate()) is not None:
        probe = replace(cell, seq=cell.seq + k, rate=rate, concurrency=plan.load.connections_for(rate), step=k)
        if k and time.monotonic() - began + plan.cell_seconds(probe) - START_STOP_S > params.budget_s:
            search.stop("budget")
            break
        events.cell_started(probe)
        record = _measure(probe, plan, instance, versions, pins, monitor, lab, topo, events)
        store.record_cell(run_id, record)
        events.cell_finished(probe, record)
        outcome = capacity.check({"status": record.status.value, "error": record.error,
                                  "engine": record.result.raw if record.result else None}, plan.load.slo)
        search.record(rate, outcome.met, outcome.generator_limited)
        k += 1
        instance.check_alive()
    store.record_search(run_id, cell, search.stopped or "probes", time.monotonic() - began)


def load_spec(cell: Cell, plan: Plan, instance: StackInstance, pins: pinning_mod.Pinning) -> LoadSpec:
    """The measured load of a cell, as the engine is asked for it: one URL, a weighted
    mix, or a page with its assets (page mode)."""
    workload = instance.workload(cell.workload)
    shape: dict = {"url": instance.url(workload.path)}
    if workload.page_mode:
        shape = {"url": instance.url(""), "page": workload.path,
                 "assets": tuple(u.path for u in workload.assets), "page_conns": workload.page_conns}
    elif len(workload.urls) > 1:
        shape = {"url": instance.url(""), "mix": tuple((u.path, u.weight) for u in workload.urls)}
    return LoadSpec(
        connections=cell.concurrency, rate=cell.rate,
        threads=plan.threads or len(pins.engine_cpus) or 1,
        duration_s=cell.duration_s or plan.duration_s, requests=None if cell.duration_s else plan.requests,
        keepalive=cell.keepalive, timeout_s=plan.timeout_s, count_headers=instance.stack.count_headers,
        # Checked by target.check when the stack started; the engine has a guard of its own.
        allow_remote=not target.is_loopback(instance.host), **shape,
    )


def _background(cell: Cell, plan: Plan, spec: LoadSpec, pins: pinning_mod.Pinning, lab: Lab,
                topo: Topology | None) -> Background | None:
    """The cell's other visitor classes, started now and lasting past the measured window
    (warm-up, load, profile pass, and a second of slack)."""
    names = members(cell.background)
    if not names or topo is None:
        return None
    background = Background(lab.background_load or lab.load, pins.engine_cpus)
    seconds = plan.warmup_s + (spec.duration_s or 0) + plan.syscall_profile_s + 1.0
    for name in names:
        v = plan.visitors[name]
        background.start(name, spec_for(spec, v.connections, v.keepalive, v.read_rate, v.rcvbuf, seconds),
                         lambda name=name: topo.in_client(name))
    return background


def _pass(spec: LoadSpec, phase: str, seconds: float) -> LoadSpec:
    """A separate, uncounted run of the cell's load (warm-up, system-call profile), its
    progress shown as that phase."""
    shown = spec.on_progress
    return replace(spec, duration_s=seconds, requests=None, phase=phase,
                   on_progress=(lambda p: shown({**p, "phase": phase})) if shown else None)


def _measure(cell: Cell, plan: Plan, instance: StackInstance, versions: dict, pins: pinning_mod.Pinning,
             monitor: StackMonitor, lab: Lab, topo: Topology | None = None,
             events: Events | None = None) -> CellRecord:
    spec = load_spec(cell, plan, instance, pins)
    if events is not None:
        spec = replace(spec, on_progress=lambda progress: events.cell_progress(cell, progress))
    in_client = topo.in_client if topo else nullcontext
    in_server = topo.in_server if topo else nullcontext
    background = _background(cell, plan, spec, pins, lab, topo)
    try:
        if plan.warmup_s:
            # A separate, uncounted run, so the monitor's window is exactly the measured one.
            with in_client():
                lab.load(_pass(spec, "warmup", plan.warmup_s), pins.engine_cpus)
        with in_server():  # the status-page poller's sockets are made in the stack's namespace
            monitor.begin_cell()
        try:
            with in_client():
                result = lab.load(spec, pins.engine_cpus)
        except BaseException:
            # Also on Ctrl-C the sampler and poller threads must stop — without a failure
            # of their own (an agent there gone) replacing the one that stopped the load.
            _quietly(monitor.end_cell)
            raise
        cost = monitor.end_cell()
        if plan.syscall_profile_s and not instance.dead_servers() and monitor.begin_profile():
            # System calls are counted in a pass of their own: perf's tracepoints slow every
            # system call, so counting during the measured window would bias it (syscalls.py).
            with in_client():
                profile = lab.load(_pass(spec, "profile", plan.syscall_profile_s), pins.engine_cpus)
            monitor.end_profile(cost, profile)
    finally:
        classes = background.finish() if background else None
    dead = instance.dead_servers()
    if dead:
        # The server died under load: keep what the engine saw, marked failed.
        error = f"{dead[0].name} exited with status {dead[0].exit_status} during the load"
        oom = machine_mod.oom_reason(memory_events.total_kills(cost.memory_events if cost else None), plan.machine)
        if oom:
            error += f" ({oom})"
        return _record(cell, instance, versions, pins, CellStatus.FAILED, result=result, error=error, cost=cost,
                       classes=classes)
    return _record(cell, instance, versions, pins, CellStatus.OK, result=result, cost=cost, classes=classes)


def _record(cell: Cell, instance: StackInstance, versions: dict, pins: pinning_mod.Pinning, status: CellStatus,
            result: EngineResult | None = None, error: str | None = None, cost: CellCost | None = None,
            classes: dict | None = None) -> CellRecord:
    pin = pins.as_dict()
    if classes is not None or cell.background != "none" or cell.network != "loopback":
        # Where visitors differ, what the server held is the point: keep its own count.
        pages = cost.status if cost else []  # the status pages' samples (not the cell's status)
        classes = {**(classes or {}), "server": {"busy_max": status_pages.busy_max(pages),
                                                 "unanswered": status_pages.unanswered(pages),
                                                 "procs_max": cost.procs_max if cost else None}}
    found = []
    if result:
        found = caveats.for_cell(result, pin, cost.server_steal_share if cost else None)
        found += caveats.server_limits(cost.status if cost else [], instance.knobs, cell.concurrency)
        found += caveats.memory_limit(cost.memory_events if cost else None)
    return CellRecord(
        seq=cell.seq, repetition=cell.repetition, stack_id=cell.stack.id, stack_label=cell.stack.label,
        knobs=instance.knobs, workload=cell.workload, concurrency=cell.concurrency, keepalive=cell.keepalive,
        status=status, versions=versions, pinning=pin, files=dict(instance.files), result=result,
        error=error, cost=cost, php=instance.php_state, caveats=found,
        load=cell.load, rate=cell.rate, leg=cell.leg, step=cell.step,
        network=cell.network, background=cell.background, classes=classes,
    )
