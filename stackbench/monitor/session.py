"""Monitoring one stack instance across its cells: the cgroup sampler, the per-process
memory snapshot and the system-call counter, put together per cell as a CellCost."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.engine.result import EngineResult
from stackbench.monitor import memory_events, processes, status_pages, steal, strace, syscalls
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.machine_cgroup import MachineCgroup
from stackbench.monitor.cgroup_stats import CgroupReader, CgroupSample
from stackbench.monitor.sampler import DEFAULT_INTERVAL_S, Sampler


@dataclass
class CellCost:
    """What a stack cost during one measured window. Every figure is derived here, once,
    from the samples; the store persists them as they are."""

    samples: list[CgroupSample] = field(default_factory=list)
    peak_mem_bytes: int | None = None  # the cgroup's own peak, page cache included
    anon_peak_bytes: int | None = None  # highest sampled anonymous + shared memory
    cpu_user_us: int | None = None  # over the sampled window (USER_HZ resolution on v1)
    cpu_system_us: int | None = None
    cpu_total_us: int | None = None  # user + system, exact (cpuacct.usage / cpu.stat)
    window_us: int | None = None  # wall time between the first and last sample
    procs_max: int | None = None
    threads_max: int | None = None
    processes: list[processes.ProcessMemory] = field(default_factory=list)
    syscalls: syscalls.WindowCounts | None = None  # from the profile pass, not the measured window
    syscalls_requests_per_s: float | None = None  # the profile pass's own throughput
    notes: list[str] = field(default_factory=list)  # what could not be measured, and why
    sampler_cost_s: float = 0.0
    status: list[status_pages.StatusSample] = field(default_factory=list)
    # Share of the server cores' time the hypervisor took during the window (steal.py)
    server_steal_share: float | None = None
    # The workload's services (a database) in their own cgroup, over the same window: a
    # WordPress page costs web server + PHP + database, shown side by side.
    service_mem_peak_bytes: int | None = None
    service_cpu_us: int | None = None
    # A machine profile's memory limit over the window (memory_events.difference); None
    # without a limit. oom_kills: processes the OOM killer took in the window.
    memory_events: dict | None = None
    oom_kills: int | None = None

    def derive(self) -> None:
        """Figures over the sampled window: last cumulative value minus the first,
        maxima of the gauges. Not computable (fewer than two samples) stays None."""
        s = self.samples
        anon = [x.mem_rss_bytes + (x.mem_shmem_bytes or 0) for x in s if x.mem_rss_bytes is not None]
        self.anon_peak_bytes = max(anon) if anon else None
        self.procs_max = max((x.procs for x in s if x.procs is not None), default=None)
        self.threads_max = max((x.threads for x in s if x.threads is not None), default=None)
        if len(s) < 2:
            return
        self.window_us = s[-1].t_unix_us - s[0].t_unix_us
        self.cpu_user_us = _delta(s, "cpu_user_us")
        self.cpu_system_us = _delta(s, "cpu_system_us")
        self.cpu_total_us = _delta(s, "cpu_usage_us")


def _delta(samples: list[CgroupSample], attr: str) -> int | None:
    first, last = getattr(samples[0], attr), getattr(samples[-1], attr)
    return None if first is None or last is None else last - first


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
                 reapers: list | None = None, server_cpus: list[int] | None = None,
                 services_cgroup: Cgroup | None = None, machine: MachineCgroup | None = None):
        self.cgroup = cgroup
        # The small machine's limit, when the plan has one: its events per cell.
        self.machine = machine if machine and machine.profile.memory_bytes is not None else None
        self._machine_reader = CgroupReader(machine.cgroup) if self.machine else None
        self._mem_before: memory_events.MemoryCounters | None = None
        self._mem_last: memory_events.MemoryCounters | None = None
        self.services = CgroupReader(services_cgroup) if services_cgroup else None
        self._services_cpu_before: int | None = None
        self.server_cpus = list(server_cpus or [])
        self._steal_before: steal.CpuTimes | None = None
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
        self._steal_before = steal.read(self.server_cpus) if self.server_cpus else None
        self._poller = status_pages.StatusPoller(self.pages)
        self._poller.start()
        if self.services:
            self.services.reset_peak()
            self._services_cpu_before = self.services.sample(0).cpu_usage_us
        if self.machine:
            self._machine_reader.reset_peak()
            self._mem_before = self.machine.read()
        if not self.reader:
            return
        self.reader.reset_peak()
        self._sampler = Sampler(self.reader, self.interval_s)
        self._sampler.start()

    def end_cell(self) -> CellCost:
        cost = CellCost(notes=list(self.notes))
        if self._steal_before is not None:
            cost.server_steal_share = steal.share(self._steal_before, steal.read(self.server_cpus))
            self._steal_before = None
        if self._poller:
            cost.status = self._poller.stop()
            self._poller = None
        if self.services:
            after = self.services.sample(0).cpu_usage_us
            cost.service_mem_peak_bytes = self.services.peak_bytes()
            if after is not None and self._services_cpu_before is not None:
                cost.service_cpu_us = after - self._services_cpu_before
        if self.machine and self._mem_before is not None:
            after_mem = self.machine.read()
            cost.memory_events = memory_events.difference(
                self._mem_before, after_mem, limit_bytes=self.machine.profile.memory_bytes,
                previous=self._mem_last, peak_bytes=self._machine_reader.peak_bytes())
            cost.oom_kills = cost.memory_events["oom_kills"]
            self._mem_last, self._mem_before = after_mem, None
        if not self.reader or not self._sampler:
            return cost
        cost.samples = self._sampler.stop()
        cost.sampler_cost_s = self._sampler.cost_s
        cost.peak_mem_bytes = self.reader.peak_bytes()
        cost.derive()
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

    def end_profile(self, cost: CellCost, result: EngineResult) -> None:
        """The profile pass ran as `result`: count its system calls over its window."""
        window_start_us, window_end_us = result.started_unix_us, result.ended_unix_us
        if self.machine and self._mem_last is not None and cost.memory_events is not None:
            # The pass loads the stack as hard as the window did: kills during it belong
            # to this cell, not to the next one's "before" (nor lost after the last cell).
            after = self.machine.read()
            cost.memory_events["oom_kills_profile"] = memory_events.kills_between(self._mem_last, after)
            self._mem_last = after
        if not self.counter:
            return
        if self.syscall_method == "strace":
            # strace counts from attach to detach: per request = calls / requests completed.
            self.counter.stop()
            cost.syscalls = self.counter.window(window_start_us, window_end_us)
            seconds = cost.syscalls.seconds if cost.syscalls else 0
            cost.syscalls_requests_per_s = result.requests.completed / seconds if seconds else None
            cost.notes.append(strace.NOTE)
            self.counter = None
            return
        cost.syscalls = self.counter.window(window_start_us, window_end_us)
        cost.syscalls_requests_per_s = result.requests_per_s
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
