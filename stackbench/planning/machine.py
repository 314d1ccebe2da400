"""Machine profiles: the small VPS the seeds argue about, emulated on this machine.

`machine = { cpus = 1, memory = "512M" }` in a plan confines every stack start to
`cpus` cores and a memory limit covering everything that small machine would run: the
stack's servers *and* the workload's services (MariaDB) together. A fractional `cpus`
(0.5, 1.5) is a CPU quota on ceil(cpus) cores: 0.5 is one core with half its time. The
limits are the kernel's (a cgroup: monitor/machine_cgroup.py), so hitting the memory
limit has the real consequences — reclaim, then the OOM killer — and those are
recorded per cell as results (monitor/memory_events.py), not as a crash of the lab.

Parsing and the checks against this machine live here; applying the limits and reading
their events is the monitor's.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from stackbench.errors import PlanError
from stackbench.upkeep.pinning import Pinning
from stackbench.units import MiB, format_cpus

KEYS = {"cpus", "memory"}
# Below this nothing of a PHP stack starts (an idle nginx + FPM pool alone takes ~13 MiB,
# bench/RESULTS.md); a smaller limit is a typo ("512" meaning MiB), not a machine.
MIN_MEMORY_BYTES = 16 * MiB
MAX_CPUS = 4096
# A fractional `cpus` is a CFS quota of CPU time in every period (monitor/cpu_quota.py).
# 100 ms: the kernel's default period, and the one Docker's --cpus and Kubernetes' CPU
# limits write, so a figure measured here reads as it would under a container's limit.
CPU_PERIOD_US = 100_000
# The kernel takes no quota under 1 ms a period (0.01 CPU at 100 ms). The floor is 0.05,
# as low as a burstable cloud instance's baseline goes (5 % of a vCPU): below it a stack
# crawls without emulating any machine — at 0.01 nginx + FPM took 4.2 s to start
# and 69 ms for a hello world, at 0.05 0.6 s and 18 ms (bench/RESULTS.md, "Fractional
# CPUs"); a smaller share is more likely a typo.
MIN_CPUS = 0.05
# Binary multiples, as Docker's --memory and systemd's MemoryMax= read them: "512M" is
# 512 MiB whether written M, MB or MiB (a VPS sold as "512 MB" has 512 MiB).
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])(?:i?B)?|B)?\s*$", re.IGNORECASE)
_POWER = {None: 0, "K": 1, "M": 2, "G": 3, "T": 4}

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class CpuQuota:
    """A fractional CPU as the kernel takes it: `quota_us` of CPU time in every
    `period_us`, shared by every process of the machine, over its whole cores."""

    period_us: int
    quota_us: int

    @classmethod
    def of(cls, cpus: float, period_us: int = CPU_PERIOD_US) -> "CpuQuota":
        return cls(period_us, round(cpus * period_us))

    def describe(self, cores: int) -> str:
        """"a 50 ms in 100 ms quota on 1 core"."""
        return (f"a {self.quota_us / 1000:g} ms in {self.period_us / 1000:g} ms quota on {cores} "
                f"core{'s' if cores != 1 else ''}")

    def as_dict(self) -> dict[str, int]:
        return {"cpu_period_us": self.period_us, "cpu_quota_us": self.quota_us}


@dataclass(frozen=True)
class MachineProfile:
    # CPUs the stack may use (None: the lab's usual half): whole cores, or a share of
    # ceil(cpus) cores' time (0.5: one core, half of its time)
    cpus: float | None = None
    memory_bytes: int | None = None  # limit on the stack + its services (None: none)

    @property
    def cores(self) -> int | None:
        """The cores the stack is pinned to: ceil(cpus)."""
        return math.ceil(self.cpus) if self.cpus is not None else None

    @property
    def cpu_quota(self) -> CpuQuota | None:
        """The quota a fractional `cpus` is; None for whole cores (pinning alone)."""
        if self.cpus is None or float(self.cpus).is_integer():
            return None
        return CpuQuota.of(self.cpus)

    def describe(self) -> str:
        """In words, for dry runs, tables and the report: "1 CPU, 512 MiB memory"."""
        return describe(self.cpus, self.memory_bytes, self.cpu_quota)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def recorded(self, server_cpus: list[int]) -> dict[str, Any]:
        """As a run's environment keeps it: the profile, the quota written (period and
        quota, when `cpus` is fractional) and the stack's cores."""
        quota = self.cpu_quota
        return self.as_dict() | (quota.as_dict() if quota else {}) | {"server_cpus": server_cpus}


def describe(cpus: float | None, memory_bytes: int | None, quota: CpuQuota | None) -> str:
    """"0.5 CPU (a 50 ms in 100 ms quota on 1 core), 512 MiB memory (…)"."""
    parts = []
    if cpus is not None:
        parts.append(format_cpus(cpus) + (f" ({quota.describe(math.ceil(cpus))})" if quota else ""))
    if memory_bytes is not None:
        parts.append(f"{format_size(memory_bytes)} memory (stack and its services together, no swap)")
    return ", ".join(parts)


def parse_size(value: Any) -> int:
    """'512M', '1.5G', '64MiB', 536870912 → bytes. Raises ValueError on anything else."""
    if isinstance(value, bool):
        raise ValueError(f"not a size: {value!r}")
    if isinstance(value, int):
        return value
    m = _SIZE.match(str(value)) if isinstance(value, str) else None
    if not m:
        raise ValueError(f"not a size: {value!r} (use e.g. \"512M\", \"1G\")")
    unit = m.group(2).upper() if m.group(2) else None
    return int(float(m.group(1)) * 1024 ** _POWER[unit])


def format_size(n: int) -> str:
    if n % 2**30 == 0:
        return f"{n // 2**30} GiB"
    return f"{n / MiB:g} MiB" if n >= MiB else f"{n} bytes"


def parse(value: Any, fail: Fail) -> MachineProfile | None:
    """The plan's `machine` table → a MachineProfile (None when the plan has none).
    Checks what can be checked anywhere (plan.py rejects unknown keys); what this
    machine can give is `check`'s."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise fail('machine must be a table, e.g. machine = { cpus = 1, memory = "512M" }')
    if not value:
        raise fail('machine needs cpus or memory, e.g. machine = { cpus = 1, memory = "512M" }')
    cpus = parse_cpus(value.get("cpus"), fail)
    memory = None
    if "memory" in value:
        try:
            memory = parse_size(value["memory"])
        except ValueError as e:
            raise fail(f"machine.memory: {e}") from None
        if memory < MIN_MEMORY_BYTES:
            raise fail(f"machine.memory must be at least {format_size(MIN_MEMORY_BYTES)} (a size without a "
                       f"unit is bytes), not {value['memory']!r}")
    return MachineProfile(cpus, memory)


def parse_cpus(cpus: Any, fail: Fail) -> float | None:
    """A number of CPUs: whole (1, 2: cores) or fractional (0.5, 1.5: a quota), from
    MIN_CPUS up; a whole float (1.0) is the whole number it is."""
    if cpus is None:
        return None
    if isinstance(cpus, bool) or not isinstance(cpus, (int, float)) or not math.isfinite(cpus):
        raise fail(f"machine.cpus must be a number of CPUs (1, 2, or a share of a core such as 0.5), not {cpus!r}")
    if cpus <= 0:
        raise fail(f"machine.cpus must be more than 0 (a machine with no CPU runs nothing), not {cpus!r}")
    if cpus < MIN_CPUS:
        raise fail(f"machine.cpus = {cpus!r} is below the smallest share emulated, {MIN_CPUS:g} "
                   f"({CpuQuota.of(MIN_CPUS).quota_us / 1000:g} ms of CPU time in every {CPU_PERIOD_US / 1000:g} ms)")
    if cpus > MAX_CPUS:
        raise fail(f"machine.cpus must be at most {MAX_CPUS}, not {cpus!r}")
    return int(cpus) if float(cpus).is_integer() else float(cpus)


def normal_table(table: dict[str, Any]) -> dict[str, Any]:
    """A `machine` table as a tuning's key holds it: a whole `cpus` as the whole number
    (`cpus = 1.0` in a plan is `--machine cpus=1`), so one stored tuning answers both."""
    cpus = table.get("cpus")
    if isinstance(cpus, float) and cpus.is_integer():
        return {**table, "cpus": int(cpus)}
    return dict(table)


def check(profile: MachineProfile | None, source: str, cpus: list[int] | None = None,
          memory_total: int | None = None) -> None:
    """What this machine can give, before anything starts: the stack's cores must leave
    the load engine one of its own (with two or more cores; on one core they share it
    anyway, and every cell says so), and the limit must be below the memory there is —
    above it the limit never binds and the run would emulate nothing."""
    if profile is None:
        return
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    cores = profile.cores
    if cores is not None and cores > 1 and cores >= len(cpus):
        over = f" (a quota over {cores} cores)" if profile.cpu_quota else ""
        raise PlanError(f"{source}: machine.cpus = {profile.cpus:g}{over} leaves no core for the load engine: this "
                        f"machine has {len(cpus)} (the engine measuring on the stack's cores would take from its "
                        "budget)", hint=f"at most cpus = {max(1, len(cpus) - 1)} here")
    total = memory_total if memory_total is not None else mem_total_bytes()
    if profile.memory_bytes is not None and total is not None and profile.memory_bytes >= total:
        raise PlanError(f"{source}: machine.memory = {format_size(profile.memory_bytes)} is not below this "
                        f"machine's {format_size(total)}: the limit would never bind",
                        hint="a smaller memory, or leave it out")


def pinning(profile: MachineProfile | None, pins: Pinning, available: list[int] | None = None) -> Pinning:
    """The cores of a machine profile: the stack gets ceil(`cpus`) cores — the first of
    its usual ones, so the engine keeps its own — or, when it asks for more than the
    usual half, the first of the machine and the engine the rest (`check` made sure a
    core is left). On one core they share it, as without a profile. A fractional `cpus`
    rides along (server_cpu_quota): the analysis takes it as what the stack could use."""
    if profile is None or profile.cores is None:
        return pins
    n, quota = profile.cores, profile.cpus if profile.cpu_quota else None
    every = sorted(available if available is not None else os.sched_getaffinity(0))
    if n <= len(pins.server_cpus) and not pins.shared:
        return Pinning(pins.server_cpus[:n], pins.engine_cpus, server_cpu_quota=quota)
    if len(every) < 2:
        return Pinning(every, every, server_cpu_quota=quota)
    return Pinning(every[:n], every[n:], server_cpu_quota=quota)


def oom_reason(kills: int, profile: MachineProfile | None) -> str | None:
    """The OOM killer as the reason of a failure, in words: "3 processes OOM-killed under
    the 512 MiB limit" (None when it took nothing, or there was no limit)."""
    if not kills or profile is None or profile.memory_bytes is None:
        return None
    return (f"{kills} process{'es' if kills != 1 else ''} OOM-killed under the "
            f"{format_size(profile.memory_bytes)} limit")


def mem_total_bytes() -> int | None:
    return _meminfo("MemTotal")


def swap_total_bytes() -> int | None:
    return _meminfo("SwapTotal")


def _meminfo(key: str) -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return None
