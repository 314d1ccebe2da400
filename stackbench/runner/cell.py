"""One cell's measurement on a running stack: warm up (runner/warmup.py: a fixed time,
or until the stack is steady) → load + sample → system-call profile pass → record.

Ordered so: the warm-up is a run of its own, uncounted, so the monitor's window is
exactly the measured one; the monitor samples only the measured load; system calls are
counted in a pass after it, since perf's tracepoints slow every system call and counting
during the measured window would bias it (monitor/syscalls.py); the cell's other visitor
classes start first and last past the profile pass, so the measured class never sees
them come or go. The record keeps what the engine saw even when a server died under the
load (the cell is then failed, with why).
"""

from __future__ import annotations

from contextlib import nullcontext
from dataclasses import replace

from stackbench import caveats
from stackbench.analysis import outcomes
from stackbench.engine import EngineResult, LoadSpec
from stackbench.engine import logged_in
from stackbench.engine.background import Background, spec_for
from stackbench.engine.result import Negotiated
from stackbench.model.cell import StoredCell
from stackbench.model.cost import StoredCost
from stackbench.model.php import PhpState
from stackbench.model.visitors import ClassSummary, ServerHeld, VisitorClasses
from stackbench.model.warmup import StoredWarmup
from stackbench.monitor import status_pages
from stackbench.monitor.session import CellReadings
from stackbench.network.visitors import members
from stackbench.planning import machine as machine_mod, target, window
from stackbench.planning.plan import Cell, Plan
from stackbench.planning.protocols import PROTOCOLS
from stackbench.runner import visits, warmup
from stackbench.runner.cleanup import quietly
from stackbench.runner.context import Run, StartedStack
from stackbench.stacks.lifecycle import StackInstance
from stackbench.states import CellStatus
from stackbench.upkeep.pinning import Pinning


def measure_and_store(run: Run, stack: StartedStack, cell: Cell) -> StoredCell:
    """The cell measured and stored, its observer told before and after."""
    run.events.cell_started(cell)
    stored = keep(run, stack, *measure(run, stack, cell))
    run.events.cell_finished(cell, stored)
    return stored


def keep(run: Run, stack: StartedStack, cell: StoredCell, readings: CellReadings | None) -> StoredCell:
    """The cell stored, with its stack's config files and what the monitor read."""
    return run.store.record_cell(run.run_id, cell, files=dict(stack.instance.files), readings=readings)


def measure(run: Run, stack: StartedStack, cell: Cell) -> tuple[StoredCell, CellReadings]:
    plan, lab, pins, monitor = run.plan, run.lab, run.pins, stack.monitor
    spec = load_spec(cell, plan, stack.instance, pins)
    spec = replace(spec, on_progress=lambda progress: run.events.cell_progress(cell, progress))
    in_client = stack.topo.in_client if stack.topo else nullcontext
    background = _background(run, stack, cell, spec)
    try:
        # Uncounted runs of their own, so the monitor's window is exactly the measured one.
        with in_client():
            warmed, warm = warmup.warm(lambda seconds: load(run, _pass(spec, "warmup", seconds)),
                                       plan, _clients(cell, plan), stack.fresh,
                                       stack.instance.stack.steady_after_s)
        spec = _sized(run, cell, spec, warm, run.start_paces.get(id(stack.instance)))
        result, readings = _window(run, stack, spec)
        longer = _measure_on(run, stack, cell, spec, result)
        if longer is not None:
            # Nothing completed in a window shorter than the deadline: measured on before
            # it is judged (planning/window.py). The other visitors' engines last a fixed
            # time: they are let go and come again for the longer window, arriving as they
            # did for the first (for the plan's warm-up).
            if background is not None:
                background.finish()
                background = _background(run, stack, cell, longer)
                if plan.warmup_s:
                    with in_client():
                        load(run, _pass(longer, "warmup", plan.warmup_s))
            spec = longer
            result, readings = _window(run, stack, spec)
        if _sizable(run, cell):
            run.paces[_question(cell)] = _pace(result, failing=bool(stack.instance.dead_servers()))
            run.start_paces[id(stack.instance)] = run.paces[_question(cell)]
        if plan.syscall_profile_s and not stack.instance.dead_servers() and monitor.begin_profile():
            # System calls are counted in a pass of their own: perf's tracepoints slow every
            # system call, so counting during the measured window would bias it (syscalls.py).
            with in_client():
                profile = load(run, _pass(spec, "profile", plan.syscall_profile_s))
            monitor.end_profile(readings, profile)
    finally:
        classes = background.finish() if background else None
    dead = stack.instance.dead_servers()
    if dead:
        # The server died under load: keep what the engine saw, marked failed.
        error = f"{dead[0].name} exited with status {dead[0].exit_status} during the load"
        events = readings.cost.memory_events
        oom = machine_mod.oom_reason(events.total_kills if events else 0, plan.machine)
        if oom:
            error += f" ({oom})"
        return record(run, stack, cell, CellStatus.FAILED, result=result, error=error, readings=readings,
                      classes=classes, warmed=warmed), readings
    return record(run, stack, cell, CellStatus.OK, result=result, readings=readings, classes=classes,
                  warmed=warmed), readings


def _window(run: Run, stack: StartedStack, spec: LoadSpec) -> tuple[EngineResult, CellReadings]:
    """The measured load, the monitor sampling exactly its window."""
    monitor = stack.monitor
    in_client = stack.topo.in_client if stack.topo else nullcontext
    in_server = stack.topo.in_server if stack.topo else nullcontext
    with in_server():  # the status-page poller's sockets are made in the stack's namespace
        monitor.begin_cell()
    try:
        with in_client():
            result = load(run, spec)
    except BaseException:
        # Also on Ctrl-C the sampler and poller threads must stop — without a failure
        # of their own (an agent there gone) replacing the one that stopped the load.
        quietly(monitor.end_cell)
        raise
    return result, monitor.end_cell()


def load(run: Run, spec: LoadSpec) -> EngineResult:
    """One load of the cell's, by the lab's engine: visits of which a share log in by the
    two classes' engines together (engine/logged_in.py), any other as it is."""
    return logged_in.run(run.lab.load, spec, run.pins.engine_cpus)


def _measure_on(run: Run, stack: StartedStack, cell: Cell, spec: LoadSpec, result: EngineResult) -> LoadSpec | None:
    """The cell's load on a window to past the deadline (planning/window.py measure_on),
    when the one measured ended with every client still waiting — nothing answered, nothing
    failed — before the deadline; None when it is judged as it is: something completed or
    failed, a server died, the window reached the deadline, the window cannot be another
    (`_closed_window`), or — beside other visitors — the stack alone at this question
    answered so fast that each client's turn would have come many times over in the window
    (analysis/outcomes.py held_back): the others held its workers, and a longer wait says
    nothing more."""
    r = result.requests
    if (not _closed_window(run, cell) or stack.instance.dead_servers() or r.completed or r.failed
            or (result.pages is not None and (result.pages.completed or result.pages.failed))):
        return None
    seconds = result.duration_us / 1e6
    longer = window.measure_on(seconds, run.plan.timeout_s)
    if longer is None:
        return None
    alone = run.paces.get(_question(cell)) if cell.background != "none" else None
    if alone is not None and not alone.failing and outcomes.held_back(alone.per_s, _clients(cell, run.plan), seconds):
        return None
    return replace(spec, duration_s=longer.duration_s, requests=longer.requests)


def load_spec(cell: Cell, plan: Plan, instance: StackInstance, pins: Pinning) -> LoadSpec:
    """The measured load of a cell, as the engine is asked for it: one URL, a weighted
    mix, or a page with its assets (page mode); over TLS, to the stack's TLS port."""
    workload = instance.workload(cell.workload)
    url = instance.https_url if cell.tls else instance.url
    shape: dict = {"url": url(workload.path)}
    if workload.page_mode:
        shape = {"url": url(""), "page": workload.path,
                 "assets": tuple(u.path for u in workload.assets), "page_conns": workload.page_conns}
    elif len(workload.urls) > 1:
        shape = {"url": url(""), "mix": tuple((u.path, u.weight) for u in workload.urls)}
    if plan.visit is not None and cell.logged_in is not None:
        # Visits: `concurrency` counts visitors, `rate` visits a second (runner/visits.py);
        # a capacity probe's engine warms up until its visits' pages come at their steady rate.
        shape = {"url": url(""), "page_conns": workload.page_conns, "journey": visits.journey(plan.visit, workload),
                 "login_share": cell.logged_in}
        if cell.load == "capacity" and cell.rate is not None:
            shape["warmup_s"] = plan.visit.lead_s(visits.budget_s(plan), cell.logged_in)
        if cell.logged_in > 0:
            shape["login_journey"] = visits.journey(plan.visit, workload,
                                                    visits.login(workload, instance.logins_path))
    if cell.tls:
        protocol = PROTOCOLS[cell.protocol]
        # Measured runs pin the run's own leaf (its bytes), not a chain verified per
        # connection: a full handshake costs the client as much as the server, and the
        # engine must not become the bottleneck of a full-handshake run (docs/servers.md,
        # "The client's side of a handshake").
        # A stack whose TLS port answered HTTP/2's offer with HTTP/1.1 when it was
        # verified (Apache prefork) is loaded as a browser then loads it: an HTTP/1.1
        # client with its connections (page mode: six per visitor), the offer of h2 made
        # and refused — not the engine's streams queued on a fallback. The cell still
        # says what was asked (h2) and what was spoken (http/1.1).
        read_back = Negotiated.from_dict(instance.negotiated.get(cell.protocol) or {})
        http2 = protocol.http2 and read_back.alpn != "http/1.1"
        shape |= {"pin_cert": str(instance.leaf_path), "handshake": cell.handshake, "http2": http2,
                  "streams": plan.protocols.streams if http2 else 1}
    return LoadSpec(
        connections=cell.concurrency, rate=cell.rate,
        threads=plan.threads or len(pins.engine_cpus) or 1,
        duration_s=cell.duration_s or plan.duration_s, requests=None if cell.duration_s else plan.requests,
        keepalive=cell.keepalive, timeout_s=plan.timeout_s, count_headers=instance.stack.count_headers,
        # Checked by target.check when the stack started; the engine has a guard of its own.
        allow_remote=not target.is_loopback(instance.host), **shape,
    )


def _closed_window(run: Run, cell: Cell) -> bool:
    """Can this cell's window be another than the plan's (planning/window.py)? A closed
    loop (one URL, a mix, or pages: the engine counts pages then), measured by one local
    engine for the plan's duration: a load spread over clients keeps its clock, and a walk
    (a ramp, stages) keeps each step's time — how long a step lasts is part of what a pool
    grows by on the way; a plan that counts requests itself keeps its count; visits keep
    their window (a count would be of visits, whose pace no earlier window measured)."""
    plan = run.plan
    return (cell.logged_in is None and cell.load == "closed" and not plan.load.walk and cell.rate is None and not cell.duration_s
            and plan.duration_s is not None and plan.requests is None and plan.hosts.single_local)


def _sizable(run: Run, cell: Cell) -> bool:
    """Can this cell's window be a count? One whose window can be another, with nobody
    beside it: other visitor classes last a fixed time."""
    return _closed_window(run, cell) and cell.background == "none"


def _question(cell: Cell) -> tuple:
    return (cell.stack.label, cell.workload, cell.concurrency, cell.keepalive, cell.protocol, cell.handshake,
            cell.network)


# The engine's own threshold for failed requests, applied to errors and error pages alike.
FAILING_SHARE = 0.01


def _pace(result: EngineResult, failing: bool = False) -> window.Pace:
    seconds, r = result.duration_us / 1e6, result.requests
    errors = r.failed + r.non_2xx
    done = result.pages.completed if result.pages is not None else r.completed  # what a count counts
    return window.Pace(done / seconds if seconds > 0 else 0.0, failing or errors > FAILING_SHARE * max(1, r.attempted),
                       result.clients.without_response or 0)


def _clients(cell: Cell, plan: Plan) -> int:
    """Requests a cell keeps in flight: its connections, times HTTP/2's streams on each."""
    return cell.concurrency * (plan.protocols.streams if PROTOCOLS[cell.protocol].http2 else 1)


def _sized(run: Run, cell: Cell, spec: LoadSpec, warm: EngineResult | None,
           climbed: window.Pace | None = None) -> LoadSpec:
    """The measured load with its window sized to how fast the stack answered this
    question before: in an earlier repetition, else in this cell's warm-up, else — a level
    climbed to on the same stack start (restart = "stack") — at the level before: a stack
    that kept its CPU busy there answers as fast at more clients, and the plan's window
    would hold a response for few of them (256 WordPress clients on one core: ~10 s a page
    against a 4 s window)."""
    if not _sizable(run, cell):
        return spec
    plan, clients = run.plan, _clients(cell, run.plan)
    pace = run.paces.get(_question(cell))
    if pace is None and warm is None and climbed is not None:
        pace = replace(climbed, waiting=0)
    if pace is None and warm is not None and warm.requests.completed >= clients:
        # A warm-up that saw fewer responses than clients was the stack's cold start (the
        # first pages compiling), not its pace: a count sized on it could be over in a blink.
        # Its waiting clients are a pool still growing (prefork spawns children in its
        # first seconds), not what the measured window will see.
        pace = replace(_pace(warm), waiting=0)
    w = window.size(plan.duration_s, plan.timeout_s, plan.equivalence, clients, pace)
    return replace(spec, duration_s=w.duration_s, requests=w.requests)


def _background(run: Run, stack: StartedStack, cell: Cell, spec: LoadSpec) -> Background | None:
    """The cell's other visitor classes, started now and lasting past the measured window
    (warm-up, load, profile pass, and a second of slack)."""
    names, topo, plan = members(cell.background), stack.topo, run.plan
    if not names or topo is None:
        return None
    background = Background(run.lab.background_load or run.lab.load, run.pins.engine_cpus)
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
                   on_progress=(lambda p: shown(replace(p, phase=phase))) if shown else None)


def record(run: Run, stack: StartedStack, cell: Cell, status: CellStatus, result: EngineResult | None = None,
           error: str | None = None, readings: CellReadings | None = None, classes: dict | None = None,
           warmed: StoredWarmup | None = None) -> StoredCell:
    """What is stored of a cell: how it was run and warmed, what the engine and the
    monitor saw, and the caveats that limit trust in it."""
    instance = stack.instance
    cost = readings.cost if readings else StoredCost()
    pages = readings.status if readings else []  # the status pages' samples (not the cell's status)
    visitors = None
    if classes is not None or cell.background != "none" or cell.network != "loopback":
        # Where visitors differ, what the server held is the point: keep its own count.
        visitors = VisitorClasses({name: ClassSummary.from_dict(got) for name, got in (classes or {}).items()},
                                  ServerHeld(status_pages.busy_max(pages), status_pages.unanswered(pages),
                                             cost.procs_max))
    found = []
    if result:
        found = caveats.for_cell(result, run.pins.as_dict(), cost.server_steal_share)
        found += caveats.server_limits(pages, instance.knobs, cell.concurrency)
        found += caveats.memory_limit(cost.memory_events.as_dict() if cost.memory_events else None)
        if warmed is not None:
            found += caveats.not_steady(warmed.steady, warmed.seconds, warmed.cap_s, warmed.tolerance, warmed.change)
    # What the stack agreed to when verified over this protocol (read back, not assumed).
    read_back = instance.negotiated.get(cell.protocol) if cell.tls else None
    return StoredCell(
        id=0, run_id=run.run_id, seq=cell.seq, repetition=cell.repetition, stack_id=cell.stack.id,
        stack_label=cell.stack.label, knobs=instance.knobs, workload=cell.workload, concurrency=cell.concurrency,
        keepalive=cell.keepalive, status=status, error=error, config_hash=None, versions=stack.versions,
        pinning=run.pins, engine=result, cost=cost, caveats=tuple(found),
        php=PhpState.from_dict(instance.php_state) if instance.php_state is not None else None,
        load=cell.load, rate=cell.rate, leg=cell.leg, step=cell.step,
        network=cell.network, background=cell.background, classes=visitors,
        protocol=cell.protocol, handshake=cell.handshake,
        streams=run.plan.protocols.streams if PROTOCOLS[cell.protocol].http2 else None,
        negotiated=Negotiated.from_dict(read_back) if read_back is not None else None, warmup=warmed,
        logged_in=cell.logged_in,
    )
