"""The environment a run was measured in (upkeep/environment.py collects it; the runner
adds the idle cores, the machine profile and the hosts of a placed run), read back once
(store/rows.py) as types. `document` is the record as stored: export writes it whole."""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any, Mapping

from stackbench.upkeep.pinning import Pinning
from stackbench.yardstick import Yardstick

__all__ = ["ClientHost", "Environment", "HostFacts", "HostMachine", "IdleCores", "MachineShape", "Yardstick"]


@dataclass(frozen=True)
class IdleCores:
    """What the run's idle cores did (upkeep/idle.py's IdleState, as stored)."""

    asked: str | None = None  # the plan's cpu_idle
    polled: bool = False  # every core held out of halt
    why: str = ""  # in words, for the report
    engine_polled: bool = False  # the load engine's cores alone


@dataclass(frozen=True)
class MachineShape:
    """The machine profile a run emulated (planning/machine.py's, as the run applied it)."""

    cpus: float | None = None  # whole cores, or a share of them (0.5); an older store's are whole
    memory_bytes: int | None = None
    server_cpus: list[int] | None = None  # the stack's cores in it (a list, as the run printed it)
    # A fractional `cpus`'s quota as written to the machine's cgroup (None: whole cores)
    cpu_period_us: int | None = None
    cpu_quota_us: int | None = None


@dataclass(frozen=True)
class HostMachine:
    """What another host's agent said of its machine (a part of its environment)."""

    cpu_model: str | None = None
    cpu_count: int | None = None
    kernel: str | None = None
    pinning: Pinning | None = None
    yardstick: Yardstick | None = None  # its server's core (None: not measured, or before it was)


@dataclass(frozen=True)
class ClientHost:
    """A client of the load as the run connects it (hosts/clients.py): its label, and for an
    SSH host its CPUs and its clock's offset from the lab's. Live only: the store keeps what
    each client did instead (engine/result.py's ClientShare)."""

    host: str
    cpus: int | None = None
    offset_us: int | None = None  # its clock minus the lab's
    offset_uncertainty_us: int | None = None


@dataclass(frozen=True)
class HostFacts:
    """The server's or the database's host (hosts/server.py's facts(), with its role when
    the run is placed): where it is, what it is, and how well its clock is known."""

    host: str
    address: str | None = None
    same_machine: bool = False  # this machine, reached through SSH
    role: str | None = None  # server | database
    offset_us: int | None = None  # its clock minus the lab's
    offset_uncertainty_us: int | None = None
    environment: HostMachine = field(default_factory=HostMachine)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> HostFacts:
        env = d.get("environment") or {}
        pin, stick = env.get("pinning"), env.get("yardstick")
        return cls(str(d.get("host")), d.get("address"), bool(d.get("same_machine")), d.get("role"),
                   d.get("offset_us"), d.get("offset_uncertainty_us"),
                   HostMachine(env.get("cpu_model"), env.get("cpu_count"), env.get("kernel"),
                               Pinning.from_dict(pin) if pin is not None else None,
                               Yardstick.from_dict(stick) if stick else None))


@dataclass(frozen=True)
class Environment:
    stackbench: str | None = None  # its version
    engine: str | None = None  # the load engine's version
    kernel: str | None = None
    os: str | None = None
    cpu_model: str | None = None
    cpu_count: int | None = None
    memory_bytes: int | None = None
    python: str | None = None
    pinning: Pinning | None = None
    cpu_governor: str | None = None
    cpu_noise_cv: float | None = None  # a fixed CPU loop's CV on the server's core, before the run
    mode_order: str | None = None  # how a level's modes were ordered (None: before it was recorded)
    cpu_idle: IdleCores | None = None  # None: before the lab held idle cores
    machine_profile: MachineShape | None = None  # None: the lab's own machine
    server_host: HostFacts | None = None  # None: the stack ran here
    db_host: HostFacts | None = None  # None: its database (if any) ran with it
    # How fast the server's core ran PHP before the run (stackbench/yardstick/); with the
    # stack on another host, this machine's (the load's), and server_yardstick is that host's
    yardstick: Yardstick | None = None
    document: Mapping[str, Any] = field(default_factory=dict, compare=False)

    @property
    def others(self) -> dict[str, Any]:
        """What the record holds that no field names (a newer lab's, or an older one's)."""
        named = {f.name for f in fields(self)}
        return {k: v for k, v in self.document.items() if k not in named}

    @property
    def server_yardstick(self) -> Yardstick | None:
        """The yardstick of the core the stack ran on: its host's, measured there by the
        lab's agent (hosts/agent.py), when it ran on another host; else this machine's."""
        if self.server_host is not None:
            return self.server_host.environment.yardstick
        return self.yardstick

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Environment:
        pin, idle, machine = d.get("pinning"), d.get("cpu_idle"), d.get("machine_profile")
        server, db, stick = d.get("server_host"), d.get("db_host"), d.get("yardstick")
        cores = machine.get("server_cpus") if machine else None
        return cls(
            **{name: d.get(name) for name in _AS_STORED},
            pinning=Pinning.from_dict(pin) if pin is not None else None,
            cpu_idle=IdleCores(idle.get("asked"), bool(idle.get("polled")), str(idle.get("why") or ""),
                               bool(idle.get("engine_polled"))) if idle else None,
            machine_profile=MachineShape(machine.get("cpus"), machine.get("memory_bytes"),
                                         list(cores) if cores is not None else None, machine.get("cpu_period_us"),
                                         machine.get("cpu_quota_us")) if machine else None,
            server_host=HostFacts.from_dict(server) if server else None,
            db_host=HostFacts.from_dict(db) if db else None,
            yardstick=Yardstick.from_dict(stick) if stick else None, document=dict(d))


# The fields stored as they are (a version, a name, a number): read by their own names.
_AS_STORED = ("stackbench", "engine", "kernel", "os", "cpu_model", "cpu_count", "memory_bytes", "python",
              "cpu_governor", "cpu_noise_cv", "mode_order")
