"""Machine profiles: the small VPS the seeds argue about, emulated on this machine.

`machine = { cpus = 1, memory = "512M" }` in a plan confines every stack start to
`cpus` cores and a memory limit covering everything that small machine would run: the
stack's servers *and* the workload's services (MariaDB) together. The limit is the
kernel's (a cgroup: monitor/machine_cgroup.py), so hitting it has the real
consequences — reclaim, then the OOM killer — and those are recorded per cell as
results (monitor/memory_events.py), not as a crash of the lab.

Parsing and the checks against this machine live here; applying the limits and reading
their events is the monitor's.
"""

from __future__ import annotations

import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from stackbench.errors import PlanError
from stackbench.upkeep.pinning import Pinning
from stackbench.units import MiB

KEYS = {"cpus", "memory"}
# Below this nothing of a PHP stack starts (an idle nginx + FPM pool alone takes ~13 MiB,
# bench/RESULTS.md); a smaller limit is a typo ("512" meaning MiB), not a machine.
MIN_MEMORY_BYTES = 16 * MiB
MAX_CPUS = 4096
# Binary multiples, as Docker's --memory and systemd's MemoryMax= read them: "512M" is
# 512 MiB whether written M, MB or MiB (a VPS sold as "512 MB" has 512 MiB).
_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(?:([KMGT])(?:i?B)?|B)?\s*$", re.IGNORECASE)
_POWER = {None: 0, "K": 1, "M": 2, "G": 3, "T": 4}

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class MachineProfile:
    cpus: int | None = None  # cores the stack may run on (None: the lab's usual half)
    memory_bytes: int | None = None  # limit on the stack + its services (None: none)

    def describe(self) -> str:
        """In words, for dry runs, tables and the report: "1 CPU, 512 MiB memory"."""
        parts = []
        if self.cpus is not None:
            parts.append(f"{self.cpus} CPU{'s' if self.cpus != 1 else ''}")
        if self.memory_bytes is not None:
            parts.append(f"{format_size(self.memory_bytes)} memory (stack and its services together, no swap)")
        return ", ".join(parts)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


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
    cpus = value.get("cpus")
    if cpus is not None and (not isinstance(cpus, int) or isinstance(cpus, bool) or not 1 <= cpus <= MAX_CPUS):
        raise fail(f"machine.cpus must be a whole number of cores >= 1, not {cpus!r}")
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


def check(profile: MachineProfile | None, source: str, cpus: list[int] | None = None,
          memory_total: int | None = None) -> None:
    """What this machine can give, before anything starts: the stack's cores must leave
    the load engine one of its own (with two or more cores; on one core they share it
    anyway, and every cell says so), and the limit must be below the memory there is —
    above it the limit never binds and the run would emulate nothing."""
    if profile is None:
        return
    cpus = sorted(cpus if cpus is not None else os.sched_getaffinity(0))
    if profile.cpus is not None and profile.cpus > 1 and profile.cpus >= len(cpus):
        raise PlanError(f"{source}: machine.cpus = {profile.cpus} leaves no core for the load engine: this machine "
                        f"has {len(cpus)} (the engine measuring on the stack's cores would take from its budget)",
                        hint=f"at most cpus = {max(1, len(cpus) - 1)} here")
    total = memory_total if memory_total is not None else mem_total_bytes()
    if profile.memory_bytes is not None and total is not None and profile.memory_bytes >= total:
        raise PlanError(f"{source}: machine.memory = {format_size(profile.memory_bytes)} is not below this "
                        f"machine's {format_size(total)}: the limit would never bind",
                        hint="a smaller memory, or leave it out")


def pinning(profile: MachineProfile | None, pins: Pinning, available: list[int] | None = None) -> Pinning:
    """The cores of a machine profile: the stack gets `cpus` cores — the first of its
    usual ones, so the engine keeps its own — or, when it asks for more than the usual
    half, the first `cpus` of the machine and the engine the rest (`check` made sure a
    core is left). On one core they share it, as without a profile."""
    if profile is None or profile.cpus is None:
        return pins
    every = sorted(available if available is not None else os.sched_getaffinity(0))
    if profile.cpus <= len(pins.server_cpus) and not pins.shared:
        return Pinning(pins.server_cpus[:profile.cpus], pins.engine_cpus)
    if len(every) < 2:
        return Pinning(every, every)
    return Pinning(every[:profile.cpus], every[profile.cpus:])


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
