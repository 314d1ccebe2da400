"""Which cores the server gets and which the load engine gets.

With two or more cores they are disjoint (server on the first half, engine on the rest),
so the engine's CPU use does not come out of the server's budget. With one core they
share it, and the result says so.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Pinning:
    server_cpus: list[int]
    engine_cpus: list[int]
    # The stack on another machine (hosts.server): its cores are that host's, and the
    # engine may have every core here.
    server_host: str | None = None
    # A machine profile's fractional CPUs (planning/machine.py): the CPU time the stack
    # may use, in cores (0.5 of its one core); None: its cores' whole time.
    server_cpu_quota: float | None = None

    @property
    def server_capacity(self) -> float:
        """The cores' worth of CPU time the stack may use: what its busy share is of."""
        return self.server_cpu_quota if self.server_cpu_quota is not None else len(self.server_cpus)

    @property
    def shared(self) -> bool:
        return self.server_host is None and bool(set(self.server_cpus) & set(self.engine_cpus))

    def as_dict(self) -> dict:
        d = asdict(self) | {"shared": self.shared}
        if self.server_cpu_quota is None:  # as every record before fractional CPUs had it
            del d["server_cpu_quota"]
        return d

    @classmethod
    def from_dict(cls, d: dict) -> "Pinning":
        """As stored with a cell or a run's environment (`shared` is worked out again; a
        store's test row may hold none of it)."""
        return cls(list(d.get("server_cpus") or []), list(d.get("engine_cpus") or []), d.get("server_host"),
                   d.get("server_cpu_quota"))


def choose(available: list[int] | None = None) -> Pinning:
    cpus = sorted(available if available is not None else os.sched_getaffinity(0))
    if len(cpus) < 2:
        return Pinning(cpus, cpus)
    half = len(cpus) // 2
    return Pinning(cpus[:half], cpus[half:])


def pin_self(cpus: list[int]) -> None:
    """Move the calling process (the lab) onto `cpus`; children it starts inherit this
    unless they are pinned explicitly (servers are)."""
    if cpus:
        try:
            os.sched_setaffinity(0, cpus)
        except OSError:
            pass
