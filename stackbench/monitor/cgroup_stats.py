"""Reading a stack cgroup's own accounting: memory, CPU time, process and thread counts.

v1 (this machine): memory.usage_in_bytes, memory.max_usage_in_bytes (write 0 to reset),
memory.stat total_*; cpuacct.usage (ns) and cpuacct.stat (USER_HZ ticks); pids.current
counts tasks, i.e. threads. v2: memory.current, memory.peak, memory.stat, cpu.stat (µs).
Each read is ~40 µs (docs/servers.md, "Memory: PSS, not summed RSS"); a whole sample
well under 1 ms.
"""

from __future__ import annotations

import os
from pathlib import Path

from stackbench.model.cost import CgroupSample
from stackbench.monitor.cgroup import Cgroup

USER_HZ = os.sysconf("SC_CLK_TCK")


class CgroupReader:
    def __init__(self, cg: Cgroup):
        self.cg = cg
        self.v2 = cg.path("v2")
        self.memory = self.v2 or cg.path("memory")
        self.cpu = self.v2 or cg.path("cpuacct")
        self.pids = self.v2 or cg.path("pids")

    def reset_peak(self) -> bool:
        """Start a new peak window (v1 only: writing 0 resets max_usage)."""
        if self.memory and not self.v2:
            try:
                (self.memory / "memory.max_usage_in_bytes").write_text("0")
                return True
            except OSError:
                return False
        return False

    def peak_bytes(self) -> int | None:
        if not self.memory:
            return None
        return read_int(self.memory / ("memory.peak" if self.v2 else "memory.max_usage_in_bytes"))

    def sample(self, t_unix_us: int) -> CgroupSample:
        mem = stat = None
        if self.memory:
            mem = read_int(self.memory / ("memory.current" if self.v2 else "memory.usage_in_bytes"))
            stat = read_kv(self.memory / "memory.stat")
        user = system = usage = None
        if self.cpu:
            if self.v2:
                cs = read_kv(self.cpu / "cpu.stat") or {}
                user, system, usage = cs.get("user_usec"), cs.get("system_usec"), cs.get("usage_usec")
            else:
                ticks = read_kv(self.cpu / "cpuacct.stat") or {}
                to_us = 1_000_000 // USER_HZ
                user = ticks["user"] * to_us if "user" in ticks else None
                system = ticks["system"] * to_us if "system" in ticks else None
                ns = read_int(self.cpu / "cpuacct.usage")
                usage = ns // 1000 if ns is not None else None
        procs = len(self.cg.pids())
        threads = read_int(self.pids / "pids.current") if self.pids else None
        prefix = "" if self.v2 else "total_"
        stat = stat or {}
        return CgroupSample(
            t_unix_us, mem,
            stat.get(prefix + ("anon" if self.v2 else "rss")),
            stat.get(prefix + "shmem"),
            stat.get(prefix + ("file" if self.v2 else "cache")),
            usage, user, system, procs, threads,
        )


def read_int(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def read_kv(path: Path) -> dict[str, int] | None:
    try:
        text = path.read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].lstrip("-").isdigit():
            out[parts[0]] = int(parts[1])
    return out
