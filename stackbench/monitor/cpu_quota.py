"""A machine profile's fractional CPU (planning/machine.py CpuQuota) in the kernel: CFS
bandwidth control on the machine's cgroup, on top of the cores it is pinned to.

- v2: `cpu.max` = "QUOTA PERIOD" on the machine's cgroup (the cpu controller enabled
  down to it, as memory is).
- v1: the `cpu` controller is a hierarchy of its own (/sys/fs/cgroup/cpu, another mount
  than memory's). The machine gets a directory there with `cpu.cfs_period_us` and
  `cpu.cfs_quota_us`, and the stack's and its services' cgroups each one below it, which
  their processes join with the rest (Cgroup.join): a parent's quota bounds the time of
  everything below it, as the memory limit does. Where cpu shares a mount with a
  controller the lab uses already (`cpu,cpuacct`), the quota is written into that one.
- `cpu.cfs_burst_us` (v1) / `cpu.max.burst` (v2) stay 0, the kernel's default: a period's
  unused quota is not carried over. A burstable VPS (credits to run above its share for a
  while) is a different machine, with its own question; this one is the steady share.

The quota covers everything the small machine runs, the web stack and its database
(MariaDB) together, as a VPS's share covers every process on it.
"""

from __future__ import annotations

from pathlib import Path

from stackbench.monitor.cgroup import ROOT
from stackbench.planning.machine import CpuQuota

V1 = ROOT / "cpu"  # the v1 cpu hierarchy, where mounted
V1_FILES = ("cpu.cfs_period_us", "cpu.cfs_quota_us")


def unavailable_reason() -> str | None:
    """Why a quota cannot be set here (None: it can)."""
    if (ROOT / "cgroup.controllers").exists():
        if "cpu" not in (ROOT / "cgroup.controllers").read_text().split():
            return "the cgroup v2 tree has no cpu controller, and a fractional CPU is a quota of it"
        return None
    if not (V1 / "cpu.cfs_quota_us").exists():
        return f"no cgroup cpu controller is mounted ({V1}), and a fractional CPU is a quota of it"
    return None


def probe_file() -> Path:
    """A file only root may write, where the quota goes: cgroups writable or not."""
    return ROOT / "cgroup.procs" if (ROOT / "cgroup.controllers").exists() else V1 / "cgroup.procs"


def write_v2(path: Path, quota: CpuQuota) -> str:
    (path / "cpu.max").write_text(f"{quota.quota_us} {quota.period_us}")
    return "cpu.max"


def write_v1(path: Path, quota: CpuQuota) -> str:
    """The period first: the kernel checks a quota against the period in force."""
    (path / "cpu.cfs_period_us").write_text(str(quota.period_us))
    (path / "cpu.cfs_quota_us").write_text(str(quota.quota_us))
    return "cpu.cfs_period_us, cpu.cfs_quota_us"


def in_force(path: Path | None, quota: CpuQuota) -> bool:
    """Whether the quota is still in the machine's cgroup (v1 or v2 files)."""
    if path is None:
        return False
    try:
        if (path / "cpu.max").exists():
            return (path / "cpu.max").read_text().split() == [str(quota.quota_us), str(quota.period_us)]
        return [int((path / f).read_text()) for f in V1_FILES] == [quota.period_us, quota.quota_us]
    except (OSError, ValueError):
        return False
