"""What a cell cost the stack: one type from the monitor (which derives the figures)
through the store (which keeps them) to analysis (which reads them back).

The figures are a StoredCost. What the monitor gathered to derive them — every cgroup
sample, the process snapshot, the status-page samples, the system-call counts — travels
beside it (monitor/session.py's CellReadings) and the store keeps it in tables of its
own, read one cell at a time (Store.samples, .processes, .status_samples, .syscalls) as
the types below.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

# Where a cell's stored OOM kills happened: its measured window, just before it (stack
# start, warm-up), and the system-call pass after it (monitor/memory_events.py).
KILL_FIELDS = ("oom_kills", "oom_kills_before", "oom_kills_profile")


@dataclass(frozen=True)
class MemoryCounters:
    """One reading of a machine cgroup's memory counters (monitor/memory_events.py reads
    them), or the difference of two. None: this kernel does not report it."""

    limit_hits: int | None = None
    oom_kills: int | None = None
    ooms: int | None = None  # times the OOM killer ran (v2)
    under_oom: bool | None = None  # v1: the OOM killer is running (at the window's end)
    pressure_some_us: int | None = None  # PSI: time at least one task waited for memory
    pressure_full_us: int | None = None  # PSI: time every task waited
    refaults: int | None = None
    pgmajfault: int | None = None
    pgscan: int | None = None
    pgsteal: int | None = None


@dataclass(frozen=True)
class MemoryEvents(MemoryCounters):
    """What a machine profile's memory limit did over a cell: the counters' differences
    over its measured window (cells.memory_events_json), and what surrounds them."""

    limit_bytes: int | None = None
    oom_kills_before: int | None = None  # since the last cell's end: stack start, warm-up
    oom_kills_profile: int | None = None  # during the system-call pass after the window
    peak_bytes: int | None = None  # the machine's peak in the window: stack + services

    @property
    def total_kills(self) -> int:
        """OOM kills these events account for: before, in and after the window."""
        return sum(getattr(self, name) or 0 for name in KILL_FIELDS)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "MemoryEvents":
        """Events as stored (cells.memory_events_json) or sent by an agent: keys the
        model does not know are left out, and a key missing (an older store) is None."""
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        """As stored: a key for each figure set, so a profile pass that never ran (its
        kills never counted) stores none, as before the events were typed."""
        out = asdict(self)
        if out["oom_kills_profile"] is None:
            del out["oom_kills_profile"]
        return out


@dataclass(frozen=True)
class CacheCounts:
    """What a cache in front counted itself over a cell's measured window: requests it
    answered from its store, fetched from the back end to store, and passed to the back
    end without storing (a logged-in visitor's; Varnish's varnishstat counters MAIN.cache_hit,
    MAIN.cache_miss and MAIN.s_pass — docs/servers.md, "Caches and cookies")."""

    server: str  # the cache that counted them: "varnishd"
    hits: int
    misses: int
    passes: int

    @property
    def answered(self) -> int:
        return self.hits + self.misses + self.passes

    @property
    def hit_ratio(self) -> float | None:
        """Hits over every request the cache handled (None: it handled none)."""
        return self.hits / self.answered if self.answered else None

    @property
    def pass_share(self) -> float | None:
        """The share it passed to the back end (None: it handled none)."""
        return self.passes / self.answered if self.answered else None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CacheCounts":
        return cls(str(d["server"]), int(d["hits"]), int(d["misses"]), int(d["passes"]))


@dataclass(frozen=True)
class StoredCost:
    """The stack's cost during a cell's measured window (None: not measured), derived by
    the monitor once and stored as it is. Every stored cell has one; a cell measured
    without a cgroup, or never measured, has one of Nones."""

    peak_mem_bytes: int | None = None  # the cgroup's own peak, page cache included
    anon_peak_bytes: int | None = None  # highest sampled anonymous + shared memory
    cpu_user_us: int | None = None  # USER_HZ resolution (10 ms) on cgroup v1
    cpu_system_us: int | None = None
    cpu_total_us: int | None = None  # user + system, exact
    window_us: int | None = None  # wall time the CPU figures cover
    procs_max: int | None = None
    threads_max: int | None = None
    syscalls_total: int | None = None  # over syscalls_window_us of the profile pass
    syscalls_window_us: int | None = None
    syscalls_requests_per_s: float | None = None  # the profile pass's throughput
    notes: tuple[str, ...] = ()  # what could not be measured, and why
    server_steal_share: float | None = None  # server cores' time the hypervisor took
    service_mem_peak_bytes: int | None = None  # the workload's services (a database)
    service_cpu_us: int | None = None
    memory_events: MemoryEvents | None = None  # None: no machine memory limit
    oom_kills: int | None = None  # in the window (None: not read)
    cache: CacheCounts | None = None  # the cache in front's own counts (None: no cache counts)


@dataclass(frozen=True)
class CgroupSample:
    """One sample of the stack's cgroup during a cell: what monitor/cgroup_stats.py reads
    and the samples table keeps. Cumulative CPU since the cgroup was made; None: not read."""

    t_unix_us: int  # the engine's clock (its started_unix_us)
    mem_usage_bytes: int | None  # everything charged: process memory + page cache
    mem_rss_bytes: int | None  # anonymous memory of the processes
    mem_shmem_bytes: int | None  # shared memory (opcache's segment lives here)
    mem_cache_bytes: int | None  # page cache incl. shmem, as the kernel reports it
    cpu_usage_us: int | None  # user + system
    cpu_user_us: int | None
    cpu_system_us: int | None
    procs: int | None
    threads: int | None


@dataclass(frozen=True)
class ProcessMemory:
    """One process of the stack right after a cell's load: what monitor/processes.py
    snapshots and the processes table keeps. PSS is split the kernel's way
    (/proc/PID/smaps_rollup): anonymous, shared memory (shmem: opcache's segment) and
    file-backed pages (the code of the binaries and libraries it maps, shared with every
    process on the machine that maps them). None: not read (a kernel before 5.x, a store
    before v13)."""

    pid: int
    ppid: int
    comm: str
    rss_bytes: int | None
    pss_bytes: int | None
    threads: int | None
    pss_anon_bytes: int | None = None
    pss_shmem_bytes: int | None = None
    pss_file_bytes: int | None = None

    @property
    def own_bytes(self) -> int | None:
        """Its share of the memory the stack's cgroup is charged for: anonymous + shmem
        PSS — the part that adds up to the cgroup's own anon + shmem (docs/methods.md,
        "Memory"). None when the kernel did not split PSS."""
        if self.pss_anon_bytes is None:
            return None
        return self.pss_anon_bytes + (self.pss_shmem_bytes or 0)
