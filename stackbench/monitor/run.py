"""Monitoring shared by every stack of one plan run: the run's parent cgroup and the one
perf process that counts its system calls.

Why one per run: opening ~55 syscall tracepoints takes 0.15 s, but closing them takes
~2 s of kernel time that blocks the next perf (measured here), i.e. 2 s per stack start.
perf's cgroup filter counts a cgroup's descendants, and cells run one at a time, so a
single perf on the run's cgroup, read per cell window, gives each cell its own counts.
"""

from __future__ import annotations

import os

from stackbench.monitor import syscalls
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.sampler import DEFAULT_INTERVAL_S
from stackbench.monitor.session import StackMonitor, status_pages_of


class RunMonitor:
    def __init__(self, lab_cpus: list[int], interval_s: float = DEFAULT_INTERVAL_S, count_syscalls: bool = True):
        self.lab_cpus = lab_cpus
        self.interval_s = interval_s
        self.cgroup = Cgroup.create(f"run-{os.getpid()}")
        self.counter: syscalls.SyscallCounter | None = None
        self.notes: list[str] = []
        if self.cgroup is None:
            return
        if count_syscalls:
            reason = syscalls.unavailable_reason(self.cgroup.perf_name())
            if reason:
                self.notes.append(f"system calls not counted: {reason}")
            else:
                self.counter = syscalls.SyscallCounter(self.cgroup.perf_name(), cpus=lab_cpus)
                try:
                    self.counter.start()
                except RuntimeError as e:
                    self.notes.append(f"system calls not counted: {e}")
                    self.counter = None

    @property
    def cgroup_parent(self) -> str | None:
        """Where stack instances make their cgroups (None: no cgroups here)."""
        return self.cgroup.name if self.cgroup else None

    def for_stack(self, instance) -> StackMonitor:
        return StackMonitor(instance.cgroup, self.interval_s, self.lab_cpus, counter=self.counter,
                            notes=self.notes, pages=status_pages_of(instance.servers))

    def close(self) -> None:
        if self.counter:
            self.counter.stop()
        if self.cgroup:
            self.cgroup.remove()
