"""Monitoring one stack instance across its cells: the cgroup sampler, the per-process
memory snapshot and the system-call counter, put together per cell as CellReadings."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable, Sequence

from stackbench.engine.result import EngineResult
from stackbench.model.cost import CacheCounts, CgroupSample, ProcessMemory, StoredCost
from stackbench.monitor import memory_events, processes, status_pages, steal, strace, syscalls
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.machine_cgroup import MachineCgroup
from stackbench.monitor.cgroup_stats import CgroupReader
from stackbench.monitor.sampler import DEFAULT_INTERVAL_S, Sampler


@dataclass
class CellReadings:
    """What the monitor read over one cell: the cost's figures (model/cost.py's
    StoredCost, every one derived here, once, and stored as it is) and what they were
    derived from, which the store keeps in tables of its own."""

    cost: StoredCost = field(default_factory=StoredCost)
    samples: list[CgroupSample] = field(default_factory=list)
    processes: list[ProcessMemory] = field(default_factory=list)  # right after the load
    status: list[status_pages.StatusSample] = field(default_factory=list)
    syscalls: syscalls.WindowCounts | None = None  # from the profile pass, not the measured window
    sampler_cost_s: float = 0.0


def derive(cost: StoredCost, samples: list[CgroupSample]) -> StoredCost:
    """Figures over the sampled window: last cumulative value minus the first, maxima of
    the gauges. Not computable (fewer than two samples) stays None."""
    s = samples
    anon = [x.mem_rss_bytes + (x.mem_shmem_bytes or 0) for x in s if x.mem_rss_bytes is not None]
    cost = replace(cost, anon_peak_bytes=max(anon) if anon else None,
                   procs_max=max((x.procs for x in s if x.procs is not None), default=None),
                   threads_max=max((x.threads for x in s if x.threads is not None), default=None))
    if len(s) < 2:
        return cost
    return replace(cost, window_us=s[-1].t_unix_us - s[0].t_unix_us, cpu_user_us=_delta(s, "cpu_user_us"),
                   cpu_system_us=_delta(s, "cpu_system_us"), cpu_total_us=_delta(s, "cpu_usage_us"))


def _delta(samples: list[CgroupSample], attr: str) -> int | None:
    first, last = getattr(samples[0], attr), getattr(samples[-1], attr)
    return None if first is None or last is None else int(last - first)


def count_syscalls(readings: CellReadings, counts: syscalls.WindowCounts | None, requests_per_s: float | None,
                   notes: Sequence[str] = ()) -> None:
    """A profile pass's system calls into the readings, and the cost's figures of them:
    the total, the part of the pass's window the counts cover, the pass's throughput
    (None, all three, without counts)."""
    readings.syscalls = counts
    readings.cost = replace(
        readings.cost, syscalls_total=counts.counts.get("total") if counts else None,
        syscalls_window_us=int(counts.seconds * 1e6) if counts else None,
        syscalls_requests_per_s=requests_per_s if counts else None, notes=readings.cost.notes + tuple(notes))


# A cache's own counters so far (servers/base.py's Server.cache_counts), or None.
CacheReader = Callable[[], "dict[str, int] | None"]


def cache_counts_of(servers: list) -> dict[str, CacheReader]:
    """{server name: its counters' reader} for the servers of a stack that count what
    their cache did (Varnish); the others answer None and are dropped at the first read."""
    return {server.name: server.cache_counts for server in servers}


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
                 services_cgroup: Cgroup | None = None, machine: MachineCgroup | None = None,
                 caches: dict[str, CacheReader] | None = None):
        self.cgroup = cgroup
        # The small machine's limit, when the plan has one: its events per cell.
        self.machine = machine if machine and machine.profile.memory_bytes is not None else None
        self._machine_reader = CgroupReader(self.machine.cgroup) if self.machine else None
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
        self.counter: syscalls.SyscallCounter | strace.StraceCounter | None = None
        self.reapers = reapers if reapers is not None else []
        self.notes: list[str] = list(notes or [])
        self._sampler: Sampler | None = None
        self.pages = pages or {}
        self._poller: status_pages.StatusPoller | None = None
        # A cache in front's own counters, read at the window's start and end (cache_counts_of).
        self.caches = caches or {}
        self._caches_before: dict[str, dict[str, int]] = {}
        if cgroup is None:
            self.notes.append("no cgroup for the stack (not root?): memory, CPU and system calls not measured")

    def cpu_used_us(self) -> int | None:
        """CPU time the stack and its services have used so far (None: not measured): what
        tells a stack still working off abandoned requests from an idle one."""
        if not self.reader:
            return None
        stack = self.reader.sample(0).cpu_usage_us
        services = self.services.sample(0).cpu_usage_us if self.services else 0
        return None if stack is None else stack + (services or 0)

    def begin_cell(self) -> None:
        self._steal_before = steal.read(self.server_cpus) if self.server_cpus else None
        self._caches_before = {name: counts for name, read in self.caches.items() if (counts := read()) is not None}
        self._poller = status_pages.StatusPoller(self.pages)
        self._poller.start()
        if self.services:
            self.services.reset_peak()
            self._services_cpu_before = self.services.sample(0).cpu_usage_us
        if self.machine and self._machine_reader:
            self._machine_reader.reset_peak()
            self._mem_before = self.machine.read()
        if not self.reader:
            return
        self.reader.reset_peak()
        self._sampler = Sampler(self.reader, self.interval_s)
        self._sampler.start()

    def end_cell(self) -> CellReadings:
        readings = CellReadings()
        cost = StoredCost(notes=tuple(self.notes))
        if self._steal_before is not None:
            cost = replace(cost, server_steal_share=steal.share(self._steal_before, steal.read(self.server_cpus)))
            self._steal_before = None
        if self._poller:
            readings.status = self._poller.stop()
            self._poller = None
        cost = replace(cost, cache=self._cache_counts())
        if self.services:
            after = self.services.sample(0).cpu_usage_us
            cost = replace(cost, service_mem_peak_bytes=self.services.peak_bytes())
            if after is not None and self._services_cpu_before is not None:
                cost = replace(cost, service_cpu_us=after - self._services_cpu_before)
        if self.machine and self._machine_reader and self._mem_before is not None:
            after_mem = self.machine.read()
            events = memory_events.difference(
                self._mem_before, after_mem, limit_bytes=self.machine.profile.memory_bytes,
                previous=self._mem_last, peak_bytes=self._machine_reader.peak_bytes())
            cost = replace(cost, memory_events=events, oom_kills=events.oom_kills)
            self._mem_last, self._mem_before = after_mem, None
        if not self.reader or not self._sampler or not self.cgroup:
            readings.cost = cost
            return readings
        readings.samples = self._sampler.stop()
        readings.sampler_cost_s = self._sampler.cost_s
        readings.cost = derive(replace(cost, peak_mem_bytes=self.reader.peak_bytes()), readings.samples)
        # After the load, while every worker still exists (prefork reaps spares slowly).
        readings.processes = processes.snapshot(self.cgroup.pids())
        self._sampler = None
        return readings

    def _cache_counts(self) -> CacheCounts | None:
        """What the cache in front counted over the window: its counters' differences."""
        before, self._caches_before = self._caches_before, {}
        for name, first in before.items():
            last = self.caches[name]()
            if last is not None:
                return CacheCounts(name, **{k: last[k] - first[k] for k in ("hits", "misses", "passes")})
        return None

    def begin_profile(self) -> bool:
        """Start counting system calls for a profile pass; False if that cannot be done."""
        if not self.cgroup:  # no syscall method without one
            return False
        perf_name = self.cgroup.perf_name()  # set where perf was chosen (syscalls.unavailable_reason)
        if self.syscall_method == "perf" and perf_name is not None:
            self.counter = syscalls.SyscallCounter(perf_name, cpus=self.lab_cpus)
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

    def end_profile(self, readings: CellReadings, result: EngineResult) -> None:
        """The profile pass ran as `result`: count its system calls over its window."""
        window_start_us, window_end_us = result.started_unix_us, result.ended_unix_us
        events = readings.cost.memory_events
        if self.machine and self._mem_last is not None and events is not None:
            # The pass loads the stack as hard as the window did: kills during it belong
            # to this cell, not to the next one's "before" (nor lost after the last cell).
            after = self.machine.read()
            events = replace(events, oom_kills_profile=memory_events.kills_between(self._mem_last, after))
            readings.cost = replace(readings.cost, memory_events=events)
            self._mem_last = after
        if not self.counter:
            return
        if self.syscall_method == "strace":
            # strace counts from attach to detach: per request = calls / requests completed.
            self.counter.stop()
            counts = self.counter.window(window_start_us, window_end_us)
            seconds = counts.seconds if counts else 0
            count_syscalls(readings, counts, result.requests.completed / seconds if seconds else None, [strace.NOTE])
            self.counter = None
            return
        counts = self.counter.window(window_start_us, window_end_us)
        count_syscalls(readings, counts, result.requests_per_s,
                       [] if counts else ["system calls: the profile pass was shorter than one perf interval"])
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
