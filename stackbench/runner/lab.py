"""What the runner talks to — the load engine, the stacks, the monitor, the environment,
the run lock — in one `Lab`, so tests pass fakes instead of monkeypatching. The defaults
are the real ones; with a server or a database on another host, placement replaces the
parts that live there (hosts/server.py, hosts/remote_db.py).
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable

from stackbench import engine
from stackbench.engine import EngineResult, LoadSpec
from stackbench.monitor.run import RunMonitor
from stackbench.planning import machine as machine_mod
from stackbench.planning.plan import StackVariant
from stackbench.planning.protocols import TlsPlan
from stackbench.stacks import installed, registry
from stackbench.stacks.lifecycle import StackInstance, TlsOptions
from stackbench.upkeep import environment, idle, leftovers, pinning as pinning_mod
from stackbench.upkeep.lock import RunLock
from stackbench.workloads.base import Workload

if TYPE_CHECKING:
    from stackbench.runner.context import Options


def make_instance(variant: StackVariant, cpus: list[int], options: Options, cgroup_parent: str | None,
                  workload_list: list[Workload], host: str | None = None,
                  machine: machine_mod.MachineProfile | None = None, tls: TlsPlan | None = None) -> StackInstance:
    """`tls`: the plan's TLS table when any of its cells is a TLS one — the stack then
    listens on a TLS port beside its clear one, with a certificate of the run's own CA."""
    extra: dict = {"host": host} if host else {}
    if tls is not None:
        extra["tls"] = TlsOptions(certificate=tls.certificate, tickets=tls.tickets)
    return StackInstance(registry.get(variant.id), variant.knobs, label=variant.label, cpus=cpus,
                         port=variant.port, workdir=options.workdir, keep_rundir=options.keep_rundir,
                         cgroup_parent=cgroup_parent, workloads=workload_list, machine=machine, **extra)


@dataclass
class Lab:
    """The runner's collaborators. The defaults are the real ones; tests replace some."""

    # (spec, cpus, started=None): `started` told each engine process (engine/process.py `run`)
    load: Callable[..., EngineResult] = engine.run
    # The other visitor classes' engines (None: `load`). A run with clients spreads the
    # measured load over them; the classes stay one engine each, in their namespaces.
    background_load: Callable[[LoadSpec, list[int]], EngineResult] | None = None
    engine_binary: Callable[[], str] = engine.binary
    instance: Callable[..., StackInstance] = make_instance
    monitor: Callable[[list[int], float, bool], RunMonitor] = RunMonitor
    environment: Callable[[pinning_mod.Pinning], dict] = environment.collect
    lock: Callable[[], RunLock] = RunLock
    require: Callable = installed.require
    require_workload: Callable = installed.require_workload
    versions: Callable = installed.versions
    pin_self: Callable[[list[int]], None] = pinning_mod.pin_self
    sweep: Callable[[], leftovers.Swept] = leftovers.sweep
    # Idle cores as the plan's cpu_idle asks, for the session: a context manager.
    hold_idle: Callable[[str, list[int]], AbstractContextManager[idle.IdleState]] = idle.held
