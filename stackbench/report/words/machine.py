"""The machine profile a run emulated, in words (the terminal's header and the HTML
report's "reproduce it")."""

from __future__ import annotations

from stackbench.model.environment import MachineShape
from stackbench.planning.machine import CpuQuota, describe


def machine_words(profile: MachineShape) -> str:
    """A stored machine profile in words (the plan's `machine`, as the run applied it,
    its quota as written)."""
    quota = None
    if profile.cpu_period_us is not None and profile.cpu_quota_us is not None:
        quota = CpuQuota(profile.cpu_period_us, profile.cpu_quota_us)
    words = describe(profile.cpus, profile.memory_bytes, quota)
    cores = profile.server_cpus
    return words + (f"; the stack on cores {cores}" if cores is not None and profile.cpus else "")
