"""Monitoring one stack instance across its cells: the cgroup sampler, the per-process
memory snapshot and the system-call counter, put together per cell as a CellCost."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.monitor import processes, status_pages, syscalls
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
    syscalls: syscalls.WindowCounts | None = None
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
    """What is measured per cell of one stack instance. The system-call counter is the
    run's (see run.py): it counts a cgroup enclosing this stack's."""

    def __init__(self, cgroup: Cgroup | None, interval_s: float = DEFAULT_INTERVAL_S,
                 lab_cpus: list[int] | None = None, counter: syscalls.SyscallCounter | None = None,
                 notes: list[str] | None = None, pages: dict[str, tuple[str, str]] | None = None):
        self.cgroup = cgroup
        self.interval_s = interval_s
        self.lab_cpus = lab_cpus
        self.reader = CgroupReader(cgroup) if cgroup else None
        self.counter = counter
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

    def end_cell(self, window_start_us: int | None, window_end_us: int | None) -> CellCost:
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
        if self.counter and window_start_us and window_end_us:
            cost.syscalls = self.counter.window(window_start_us, window_end_us)
            if cost.syscalls is None:
                cost.notes.append("system calls: the measured window was shorter than one perf interval")
        self._sampler = None
        return cost

    def stop(self) -> None:
        """Stop what runs per cell; the shared counter belongs to the run."""
        if self._poller:
            self._poller.stop()
        if self._sampler:
            self._sampler.stop()
