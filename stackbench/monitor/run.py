"""What every stack of one plan run shares: the run's parent cgroup (each stack instance
makes its own below it, so a killed lab leaves one place to sweep), whether system calls
can be counted here, and the perf processes still closing their tracepoints (~2 s each),
which the run waits for before it ends.
"""

from __future__ import annotations

import os

from stackbench.monitor import strace, syscalls
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.sampler import DEFAULT_INTERVAL_S
from stackbench.monitor.session import StackMonitor, cache_counts_of, status_pages_of
from stackbench.upkeep import leftovers


class RunMonitor:
    def __init__(self, lab_cpus: list[int], interval_s: float = DEFAULT_INTERVAL_S, count_syscalls: bool = True):
        self.lab_cpus = lab_cpus
        self.interval_s = interval_s
        self.cgroup = Cgroup.create(f"run-{os.getpid()}")
        self.syscall_method: str | None = None  # "perf", "strace" (fallback) or None
        self.notes: list[str] = []
        self.reapers: list = []  # perf processes still closing their tracepoints
        if self.cgroup is None or not count_syscalls:
            return
        reason = syscalls.unavailable_reason(self.cgroup.perf_name())
        if reason is None:
            self.syscall_method = "perf"
        elif strace.available():
            self.syscall_method = "strace"
            self.notes.append(f"perf cannot count here ({reason})")
        else:
            self.notes.append(f"system calls not counted: {reason}; strace is not installed either")

    @property
    def cgroup_parent(self) -> str | None:
        """Where stack instances make their cgroups (None: no cgroups here)."""
        return self.cgroup.name if self.cgroup else None

    def for_stack(self, instance) -> StackMonitor:
        return StackMonitor(instance.cgroup, self.interval_s, self.lab_cpus, syscall_method=self.syscall_method,
                            notes=self.notes, pages=status_pages_of(instance.servers), reapers=self.reapers,
                            server_cpus=instance.cpus, services_cgroup=instance.services_cgroup,
                            machine=instance.machine_cgroup, caches=cache_counts_of(instance.servers))

    def close(self) -> None:
        for reaper in self.reapers:
            if reaper is not None:
                reaper.join()
        if self.cgroup:
            self.cgroup.remove()
            # Anything its stacks' stops did not remove (the v1 cpu and cpuset directories
            # are made on the way to a machine profile's, outside this cgroup's own).
            leftovers.remove_cgroup_named(self.cgroup.name)
