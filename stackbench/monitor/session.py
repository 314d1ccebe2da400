"""Monitoring one stack instance across its cells: the cgroup sampler, the per-process
memory snapshot and the system-call counter, put together per cell as a CellCost."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.monitor import processes, status_pages, strace, syscalls
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.cgroup_stats import CgroupReader, CgroupSample
from stackbench.monitor.sampler import DEFAULT_INTERVAL_S, Sampler


@dataclass
class CellCost:
    samples: list[CgroupSample] = field(default_factory=list)
    peak_mem_bytes: int | None = None
    cpu_user_us: int | None = None  # over the sampled window
    cpu_system_us: int | None = None
    window_s: float | None = None  # wall time between the first and last sample
    processes: list[processes.ProcessMemory] = field(default_factory=list)
    syscalls: syscalls.WindowCounts | None = None  # from the profile pass, not the measured window
    syscalls_requests_per_s: float | None = None  # the profile pass's own throughput
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why
    sampler_cost_s: float = 0.0
    status: list[status_pages.StatusSample] = field(default_factory=list)

# Which parser reads a server's status page, by server name.
STATUS_KIND = {"nginx": "nginx", "apache2": "apache", "php-fpm": "fpm"}


def status_pages_of(servers: list) -> dict[str, tuple[str, str]]:
    """{server name: (kind, url)} for the servers of a stack that have a status page."""
    pages = {}
    for server in servers:
        url = server.status_url()
        kind = STATUS_KIND.get(server.name)
        if url and kind:
            pages[server.name] = (kind, url)
    return pages


class StackMonitor:
    """What is measured per cell of one stack instance: during the measured window the
    cheap things (cgroup sampler, status pages), after it the PSS snapshot, and in a
    separate profile pass the system calls (see syscalls.py for why apart)."""

    def __init__(self, cgroup: Cgroup | None, interval_s: float = DEFAULT_INTERVAL_S,
                 lab_cpus: list[int] | None = None, syscall_method: str | None = None,
                 notes: list[str] | None = None, pages: dict[str, tuple[str, str]] | None = None,
                 reapers: list | None = None):
        self.cgroup = cgroup
        self.interval_s = interval_s
        self.lab_cpus = lab_cpus
        self.reader = CgroupReader(cgroup) if cgroup else None
        # "perf" (cheap, per cgroup), "strace" (fallback, slow: profile pass only) or None
        self.syscall_method = syscall_method if cgroup else None
        self.counter = None
        self.reapers = reapers if reapers is not None else []
        self.notes: list[str] = list(notes or [])
        self._sampler: Sampler | None = None
        self.pages = pages or {}
        self._poller: status_pages.StatusPoller | None = None
        if cgroup is None:
            self.notes.append("no cgroup for the stack (not root?): memory, CPU and system calls not measured")

    def begin_cell(self) -> None:
        self._poller = status_pages.StatusPoller(self.pages)
        self._poller.start()
        if not self.reader:
            return
        self.reader.reset_peak()
        self._sampler = Sampler(self.reader, self.interval_s)
        self._sampler.start()

    def end_cell(self) -> CellCost:
        cost = CellCost(notes=list(self.notes))
        if self._poller:
            cost.status = self._poller.stop()
            self._poller = None
        if not self.reader or not self._sampler:
            return cost
        cost.samples = self._sampler.stop()
        cost.sampler_cost_s = self._sampler.cost_s
        cost.peak_mem_bytes = self.reader.peak_bytes()
        first, last = cost.samples[0], cost.samples[-1]
        cost.window_s = (last.t_unix_us - first.t_unix_us) / 1e6
        if first.cpu_user_us is not None and last.cpu_user_us is not None:
            cost.cpu_user_us = last.cpu_user_us - first.cpu_user_us
            cost.cpu_system_us = last.cpu_system_us - first.cpu_system_us
        # After the load, while every worker still exists (prefork reaps spares slowly).
        cost.processes = processes.snapshot(self.cgroup.pids())
        self._sampler = None
        return cost

    def begin_profile(self) -> bool:
        """Start counting system calls for a profile pass; False if that cannot be done."""
        if self.syscall_method == "perf":
            self.counter = syscalls.SyscallCounter(self.cgroup.perf_name(), cpus=self.lab_cpus)
        elif self.syscall_method == "strace":
            self.counter = strace.StraceCounter(self.cgroup.pids(), cpus=self.lab_cpus)
        else:
            return False
        try:
            self.counter.start()
        except RuntimeError as e:
            self.notes.append(f"system calls not counted: {e}")
            self.syscall_method = None
            self.counter = None
            return False
        return True

    def end_profile(self, cost: CellCost, window_start_us: int, window_end_us: int, doc: dict) -> None:
        if not self.counter:
            return
        if self.syscall_method == "strace":
            # strace counts from attach to detach: per request = calls / requests completed.
            self.counter.stop()
            cost.syscalls = self.counter.window(window_start_us, window_end_us)
            seconds = cost.syscalls.seconds if cost.syscalls else 0
            cost.syscalls_requests_per_s = doc["requests"]["completed"] / seconds if seconds else None
            cost.notes.append(strace.NOTE)
            self.counter = None
            return
        cost.syscalls = self.counter.window(window_start_us, window_end_us)
        cost.syscalls_requests_per_s = doc.get("requests_per_s")
        if cost.syscalls is None:
            cost.notes.append("system calls: the profile pass was shorter than one perf interval")
        self.reapers.append(self.counter.stop(wait=False))
        self.counter = None

    def stop(self) -> None:
        if self._poller:
            self._poller.stop()
        if self._sampler:
            self._sampler.stop()
        if self.counter:
            self.reapers.append(self.counter.stop(wait=False))
            self.counter = None
