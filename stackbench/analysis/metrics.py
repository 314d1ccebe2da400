"""Figures derived from a stored cell, defined once for every report.

None when not computable (nothing measured, zero requests) — never 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from stackbench.model.cell import StoredCell
from stackbench.model.cost import CgroupSample, ProcessMemory


def _per_request(cell: StoredCell, value: float | None) -> float | None:
    """`value` over the requests completed in the measured phase; None when either is
    missing or nothing completed."""
    n = cell.engine.requests.completed if cell.engine is not None else None
    if not n or value is None:
        return None
    return value / n


def cpu_us_per_request(cell: StoredCell) -> float | None:
    """Stack CPU time (user + system, cgroup accounting) over the sampled window, divided
    by the requests completed in the measured phase. The sampled window encloses the
    measured one by a few ms in which the stack is idle."""
    return _per_request(cell, cell.cost.cpu_total_us)


def service_cpu_us_per_request(cell: StoredCell) -> float | None:
    """The workload's services (a database) in their own cgroup: CPU over the same
    window, per request completed (per page request of the web stack, not per query)."""
    return _per_request(cell, cell.cost.service_cpu_us)


def engine_cpu_us_per_request(cell: StoredCell) -> float | None:
    return _per_request(cell, cell.engine.engine_cpu_us if cell.engine is not None else None)


def syscalls_per_request(cell: StoredCell, count: int | None = None) -> float | None:
    """System calls counted over whole perf intervals inside the profile pass's window,
    per request at that pass's mean rate: count / (requests/s × window seconds).
    (The profile pass is separate from the measured run: perf slows system calls.)"""
    count = cell.cost.syscalls_total if count is None else count
    window_us = cell.cost.syscalls_window_us
    rps = cell.cost.syscalls_requests_per_s
    if count is None or not window_us or not rps:
        return None
    return count / (rps * window_us / 1e6)


def memory_peak_bytes(cell: StoredCell) -> int | None:
    """Peak memory of the stack's processes: anonymous + shared (opcache), page cache
    excluded. The cgroup's own peak (page cache included) is cost.peak_mem_bytes."""
    return cell.cost.anon_peak_bytes


@dataclass(frozen=True)
class ProcessGroup:
    """The processes of one command name: how many, their PSS in all and per process, and
    PSS's parts (None: a kernel or store that did not split it)."""

    count: int
    pss_total_bytes: int
    own_total_bytes: int | None = None  # anonymous + shmem PSS: what the stack's cgroup is charged
    file_total_bytes: int | None = None  # file-backed PSS: a share of code the machine shares
    rss_total_bytes: int | None = None

    @property
    def pss_mean_bytes(self) -> float:
        return self.pss_total_bytes / self.count

    @property
    def own_mean_bytes(self) -> float | None:
        """What one more such process adds to the stack's memory (its anon + shmem PSS)."""
        return None if self.own_total_bytes is None else self.own_total_bytes / self.count


def per_process_pss(processes: list[ProcessMemory]) -> dict[str, ProcessGroup]:
    """PSS grouped by command name: count, total and mean per process — 'memory per
    Apache child', 'memory per PHP-FPM worker' — with its parts where they were read."""
    by: dict[str, list[ProcessMemory]] = {}
    for p in processes:
        if p.pss_bytes is not None:
            by.setdefault(p.comm, []).append(p)
    return {comm: ProcessGroup(len(ps), sum(p.pss_bytes or 0 for p in ps), _sum([p.own_bytes for p in ps]),
                               _sum([p.pss_file_bytes for p in ps]), _sum([p.rss_bytes for p in ps]))
            for comm, ps in by.items()}


def _sum(values: list[int | None]) -> int | None:
    """The sum, or None when any is missing (a part not read is not zero)."""
    return None if any(v is None for v in values) else sum(v for v in values if v is not None)


def own_memory_bytes(processes: list[ProcessMemory]) -> int | None:
    """Every process's anon + shmem PSS together: the stack's own memory right after the
    load, which adds up to its cgroup's anon + shmem (cgroup_own_bytes) at that moment.
    None when PSS was not split (or no process was read)."""
    return _sum([p.own_bytes for p in processes]) if processes else None


def cgroup_own_bytes(samples: list[CgroupSample]) -> int | None:
    """The stack's cgroup's own accounting at the window's end (its last sample, taken just
    before the process snapshot): anonymous + shmem, the figure the Memory chart peaks."""
    last = next((x for x in reversed(samples) if x.mem_rss_bytes is not None), None)
    return None if last is None or last.mem_rss_bytes is None else last.mem_rss_bytes + (last.mem_shmem_bytes or 0)


def syscalls_per_request_by_name(cell: StoredCell, calls: dict[str, int]) -> dict[str, float]:
    """Every counted call (and "total", "other") per request of the profile pass."""
    out = {}
    for name, count in calls.items():
        v = syscalls_per_request(cell, count)
        if v is not None:
            out[name] = v
    return out


def syscall_differences(cell_a: StoredCell, calls_a: dict[str, int], cell_b: StoredCell, calls_b: dict[str, int],
                        top: int) -> list[tuple[str, float, float]] | None:
    """The `top` calls whose per-request counts differ most between two cells (ties by
    name), then "total": (name, A, B). A call one cell's profile did not see was counted
    zero times there. None when either cell's calls were not counted."""
    a = syscalls_per_request_by_name(cell_a, calls_a)
    b = syscalls_per_request_by_name(cell_b, calls_b)
    if not a or not b:
        return None
    names = (set(a) | set(b)) - {"total"}
    ranked = sorted(names, key=lambda n: (-abs(b.get(n, 0) - a.get(n, 0)), n))[:top]
    return [(n, a.get(n, 0.0), b.get(n, 0.0)) for n in [*ranked, "total"]]  # the total last


def per_url(cell: StoredCell) -> list[dict[str, Any]]:
    """Per URL of a mix or a page's assets, as the engine measured them: path, requests
    completed / failed / non-2xx, p50 and p99 in µs. [] for one URL."""
    if cell.engine is None:
        return []
    return [{"path": u.path, "weight": u.weight, "completed": u.requests.completed, "failed": u.requests.failed,
             "non_2xx": u.requests.non_2xx, "latency_p50_us": u.latency.p50_us, "latency_p99_us": u.latency.p99_us}
            for u in cell.engine.per_url]
