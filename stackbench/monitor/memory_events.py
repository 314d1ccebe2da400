"""What a machine profile's memory limit did: limit hits, OOM kills, reclaim pressure —
read from the machine's cgroup (machine_cgroup.py) at a cell's start and end, stored as
the differences.

Where each figure comes from (what this kernel, 6.18 with memory on cgroup v1, shows):
- limit hits: v1 `memory.failcnt` of the machine (the counter that refused a charge is
  the machine's, where the limit is; + `memory.memsw.failcnt`); v2 `memory.events` max.
- OOM kills: v1 `memory.oom_control` oom_kill — counted in the cgroup of the process
  killed, not where the limit is, and v1 does not add it up the tree (tried here: the
  machine read 0 while its child read 1), so the machine and every cgroup below it are
  summed; v2 `memory.events` oom_kill is hierarchical already. v2 also counts the
  times the OOM killer ran (`oom`); v1 says only whether it is running now (under_oom).
- reclaim pressure without swap: what the kernel reports — v1 `memory.stat`
  total_workingset_refault_* (pages evicted and needed again: thrashing) and
  total_pgmajfault; v2 adds pgscan/pgsteal. And the pressure stall information (PSI,
  `memory.pressure` of the machine's cgroup in the v2 tree, which exists here beside
  v1's memory controller): the time some / all of its tasks waited for memory.
Counters of a new cgroup start at 0, so a reading is also "since the machine started".
"""

from __future__ import annotations

from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from stackbench.model.cost import MemoryCounters, MemoryEvents
from stackbench.monitor.cgroup import subdirs
from stackbench.monitor.cgroup_stats import read_int, read_kv


COUNTERS = tuple(f.name for f in fields(MemoryCounters) if f.name != "under_oom")


def read(memory_dir: Path | None, unified_dir: Path | None = None) -> MemoryCounters:
    """The counters of the machine cgroup whose memory files are in `memory_dir` (v1's
    memory hierarchy, or the v2 cgroup) and whose PSI is in `unified_dir` (v1 machines:
    the v2 tree; None on v2, where it is `memory_dir`)."""
    if memory_dir is None:
        return MemoryCounters()
    psi = _pressure((unified_dir or memory_dir) / "memory.pressure")
    if (memory_dir / "memory.events").exists():  # v2
        events = read_kv(memory_dir / "memory.events") or {}
        stat = read_kv(memory_dir / "memory.stat") or {}
        return MemoryCounters(
            limit_hits=events.get("max"), oom_kills=events.get("oom_kill"), ooms=events.get("oom"),
            pressure_some_us=psi.get("some"), pressure_full_us=psi.get("full"),
            refaults=_sum(stat, "workingset_refault_anon", "workingset_refault_file"),
            pgmajfault=stat.get("pgmajfault"), pgscan=stat.get("pgscan"), pgsteal=stat.get("pgsteal"))
    stat = read_kv(memory_dir / "memory.stat") or {}
    control = read_kv(memory_dir / "memory.oom_control") or {}
    hits = [read_int(memory_dir / f) for f in ("memory.failcnt", "memory.memsw.failcnt")]
    kills = [(read_kv(d / "memory.oom_control") or {}).get("oom_kill") for d in _tree(memory_dir)]
    return MemoryCounters(
        limit_hits=None if hits[0] is None else sum(h or 0 for h in hits),
        oom_kills=None if kills[0] is None else sum(k or 0 for k in kills),
        under_oom=bool(control["under_oom"]) if "under_oom" in control else None,
        pressure_some_us=psi.get("some"), pressure_full_us=psi.get("full"),
        refaults=_sum(stat, "total_workingset_refault_anon", "total_workingset_refault_file"),
        pgmajfault=stat.get("total_pgmajfault"))


def difference(before: MemoryCounters, after: MemoryCounters, *, limit_bytes: int | None,
               previous: MemoryCounters | None = None, peak_bytes: int | None = None) -> MemoryEvents:
    """What a cell stores (cells.memory_events_json): each counter over the cell's
    window (None when either reading lacks it), the OOM state at its end, and the OOM
    kills between `previous` (the last cell's end, or the machine's start: all zero)
    and this cell's start — a warm-up or the stack's start can meet the limit too, and
    those kills belong to no measured window but must not vanish."""
    counters: dict[str, int | None] = {}
    for name in COUNTERS:
        a, b = getattr(before, name), getattr(after, name)
        counters[name] = None if a is None or b is None else b - a
    return MemoryEvents(
        **counters, under_oom=after.under_oom, limit_bytes=limit_bytes,
        oom_kills_before=(None if before.oom_kills is None
                          else before.oom_kills - ((previous.oom_kills or 0) if previous else 0)),
        peak_bytes=peak_bytes)  # the machine's peak in the window: stack + services


_ZEROS: dict[str, Any] = {name: 0 for name in COUNTERS}
ZERO = MemoryCounters(**_ZEROS)  # a new cgroup's counters


def kills_between(earlier: MemoryCounters, later: MemoryCounters) -> int | None:
    """OOM kills from one reading to a later one (None when either lacks the counter)."""
    if earlier.oom_kills is None or later.oom_kills is None:
        return None
    return later.oom_kills - earlier.oom_kills


def as_dict(counters: MemoryCounters) -> dict[str, Any]:
    return asdict(counters)


def _tree(root: Path) -> list[Path]:
    """The cgroup and every cgroup below it, the cgroup first."""
    return [root] + [d for sub in subdirs(root) for d in _tree(sub)]


def _pressure(path: Path) -> dict[str, int]:
    """PSI's cumulative stall time per line: {"some": µs, "full": µs} (empty when the
    file is missing: a kernel without PSI, or psi=0)."""
    out: dict[str, int] = {}
    try:
        text = path.read_text()
    except OSError:
        return out
    for line in text.splitlines():
        kind, *pairs = line.split()
        for pair in pairs:
            key, _, value = pair.partition("=")
            if key == "total" and value.isdigit():
                out[kind] = int(value)
    return out


def _sum(stat: dict[str, int], *keys: str) -> int | None:
    values = [stat[k] for k in keys if k in stat]
    return sum(values) if values else None
