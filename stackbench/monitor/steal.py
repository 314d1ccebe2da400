"""CPU time the hypervisor took from the server's cores ("steal", /proc/stat, proc(5)):
time a virtual CPU was ready to run but the host ran something else. On this kind of VM
it reaches 5–10 % in bursts, and a run that lost a tenth of its server core to the host
measures the host, not the stack (bench/RESULTS.md, session 2)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

PROC_STAT = Path("/proc/stat")


@dataclass(frozen=True)
class CpuTimes:
    total: int  # jiffies, every state
    steal: int


def read(cpus: list[int], path: Path = PROC_STAT) -> CpuTimes | None:
    """Summed times of `cpus`; None when /proc/stat cannot say (no such CPU lines)."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return None
    wanted = {f"cpu{c}" for c in cpus}
    total = steal = 0
    found = 0
    for line in lines:
        fields = line.split()
        if fields and fields[0] in wanted:
            values = [int(v) for v in fields[1:]]
            # user nice system idle iowait irq softirq steal guest guest_nice: guest time
            # is already counted in user, so the first eight are the whole.
            total += sum(values[:8])
            steal += values[7] if len(values) > 7 else 0
            found += 1
    return CpuTimes(total, steal) if found == len(wanted) and found else None


def share(before: CpuTimes | None, after: CpuTimes | None) -> float | None:
    """Steal over all time of those cores between two readings; None if not computable."""
    if before is None or after is None:
        return None
    total = after.total - before.total
    return (after.steal - before.steal) / total if total > 0 else None
