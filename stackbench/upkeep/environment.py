"""The environment a run was measured in: kernel, CPU, memory, pinning, tool versions.

Recorded with every run so a result can be judged (and reproduced) later.
"""

from __future__ import annotations

import os
import platform
from pathlib import Path

from stackbench import __version__, engine, yardstick
from stackbench.monitor import cpu_noise
from stackbench.upkeep.pinning import Pinning


def collect(pinning: Pinning, engine_version: bool = True) -> dict:
    """`engine_version`: False on a server's host (hosts/agent.py), which has no engine."""
    return {
        "stackbench": __version__,
        "engine": engine.version() if engine_version else None,
        "kernel": platform.release(),
        "os": _os_release(),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_bytes": _mem_total(),
        "python": platform.python_version(),
        "pinning": pinning.as_dict(),
        "cpu_governor": _governor(),
        # CV of a fixed CPU loop on the server's core just before the run (cpu_noise.py)
        "cpu_noise_cv": cpu_noise.measure(pinning.server_cpus),
        # How fast the server's core runs PHP, before the run (stackbench/yardstick/): the
        # unit a sizing's "0.5 CPU" is said in (docs/methods/sizing.md)
        "yardstick": _as_dict(yardstick.for_run(pinning.server_cpus)),
    }


def _as_dict(found: yardstick.Yardstick | None) -> dict | None:
    return found.as_dict() if found is not None else None


def cpu_model() -> str | None:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return None


def _mem_total() -> int | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return None


def _os_release() -> str | None:
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            if line.startswith("PRETTY_NAME="):
                return line.split("=", 1)[1].strip('"')
    except OSError:
        pass
    return None


def _governor() -> str | None:
    # None on VMs without cpufreq; "performance" is what benchmarks want.
    try:
        return Path("/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor").read_text().strip()
    except OSError:
        return None
