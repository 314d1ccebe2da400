"""Before the first measurement: the run lock, the lab tidied, the hosts placed, every
stack and config checked (the preflight), the lab pinned off the server's cores, the
clients connected — and only then the run stored (`begin`).

Ordered so: holding the lock proves no other lab is alive, so what a dead one left can be
swept and its runs marked crashed; whether remote clients are allowed is checked before
any connection; a typo in the last stack of a long plan fails in a second, not after an
hour of measuring; and a host that cannot be reached leaves no empty run behind. The dry
run (`dry_check`) makes the same checks on the same hosts, and stores nothing.
"""

from __future__ import annotations

import os

from contextlib import contextmanager
from typing import Iterator

from stackbench.events import Events
from stackbench.hosts.clients import ClientSession, check_allowed as check_clients_allowed
from stackbench.hosts.placement import placed
from stackbench.network import check as network_check
from stackbench.planning import limits, machine as machine_mod
from stackbench.planning.plan import Plan
from stackbench.runner.context import Options, Session
from stackbench.runner.lab import Lab
from stackbench.stacks import registry
from stackbench.store import Store
from stackbench.upkeep import idle, pinning as pinning_mod, ports


@contextmanager
def open_session(plan: Plan, store: Store, events: Events | None, options: Options, lab: Lab) -> Iterator[Session]:
    """One measuring run per machine (the lock), and everything checked before the first
    measurement: packages, configs, the engine. Holding the lock proves no other lab is
    alive, so what a dead one left is swept now and its runs are marked crashed. Other
    hosts are connected (the server's agent started, the engine shipped to clients, their
    clocks probed) before a run is stored: a host that cannot be reached leaves no empty
    run behind. The session's lab is the one the run uses: with a server on another host,
    its stack, monitor, packages and environment are the agent's there (hosts/server.py)."""
    lock = lab.lock()
    lock.acquire()
    clients: ClientSession | None = None
    events = events or Events()
    # This process's cores as it came: a session pins it to the engine's (below), and the
    # next session of the same process (a tuning's runs, then the plan's) must choose its
    # cores from all of them again, not from the engine's alone.
    cores_before = sorted(os.sched_getaffinity(0))
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
            # Idle cores as the plan asks (upkeep/idle.py), on this machine; recorded either way.
            # The engine's cores only when they are not the server's too, and the load is made here.
            engine_cores = [] if pins.shared or plan.hosts.remote else pins.engine_cpus
            with lab.hold_idle(plan.cpu_idle, engine_cores) as idle_state:
                try:
                    if not plan.hosts.single_local:
                        clients = ClientSession.open(plan.hosts, here.engine_binary)
                        events.clients_ready(clients.hosts_connected())
                    yield Session(plan, store, events, options, here, pins, clients, idle_state)
                finally:
                    if clients is not None:
                        clients.close()
    finally:
        pinning_mod.pin_self(cores_before)
        lock.release()


def begin(session: Session) -> int:
    """Store a new run (the plan as written and as checked, the environment — with the
    machine profile it emulated, if any)."""
    plan, pins = session.plan, session.pins
    env = session.lab.environment(pins)
    env["mode_order"] = plan.mode_order  # how its cells were numbered (a resume expands it so again)
    if session.idle is not None:
        elsewhere = plan.hosts.remote_server or bool(plan.hosts.remote)
        env["cpu_idle"] = session.idle.on_this_machine_only(elsewhere).as_dict()
    if plan.machine is not None:
        env["machine_profile"] = plan.machine.recorded(pins.server_cpus)
    return session.store.begin_run(plan.name, plan.source, plan.raw, plan.checked(), env)


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
    idle.require(plan.cpu_idle, engine_here=not plan.hosts.remote)  # fails now, not after the configs
    for variant in plan.stacks:
        lab.require(registry.get(variant.id))
        if variant.port is not None and not plan.hosts.remote_server:  # there, the agent checks it
            ports.ensure_free(variant.port)
    for wid in plan.workloads:
        lab.require_workload(plan.workload(wid))
    tls = {"tls": plan.protocols.tls} if plan.protocols.uses_tls else {}  # its TLS configs checked too
    for variant in plan.stacks:
        for group in plan.start_groups():
            lab.instance(variant, [], options, None, [plan.workload(w) for w in group], **tls).preflight()
