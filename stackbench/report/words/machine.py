"""The machine profile a run emulated, in words (the terminal's header and the HTML
report's "reproduce it")."""

from __future__ import annotations

from stackbench.model.environment import MachineShape
from stackbench.planning.machine import MachineProfile


def machine_words(profile: MachineShape) -> str:
    """A stored machine profile in words (the plan's `machine`, as the run applied it)."""
    words = MachineProfile(profile.cpus, profile.memory_bytes).describe()
    cores = profile.server_cpus
    return words + (f"; the stack on cores {cores}" if cores is not None and profile.cpus else "")
