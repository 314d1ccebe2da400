"""System calls per request, stack beside stack: which calls to show (the ones some
stack makes most of) and which pairs of stacks to difference — each stack against the
baseline, and stacks of the same family against each other, since their difference is
a knob's (AllowOverride All against None: the .htaccess lookups)."""

from __future__ import annotations

from stackbench.analysis import metrics
from stackbench.model.cell import StoredCell

SUMS = ("total", "other")  # rows the store keeps beside the named calls


def per_request(cell: StoredCell, calls: dict[str, int]) -> dict[str, float]:
    """Each named call per request of the profile pass; {} when none were counted."""
    return {n: v for n, v in metrics.syscalls_per_request_by_name(cell, calls).items() if n not in SUMS}


def top_names(profiles: dict[str, dict[str, float]], n: int) -> list[str]:
    """The `n` calls with the highest per-request count in any stack (ties by name)."""
    names = {name for p in profiles.values() for name in p}
    return sorted(names, key=lambda name: (-max(p.get(name, 0.0) for p in profiles.values()), name))[:n]


def pairs(stacks: list[tuple[str, str]], baseline: str | None) -> list[tuple[str, str]]:
    """(A, B) pairs to difference, from [(label, stack id)] in run order: every stack
    against the baseline (the first stack when there is none), then stacks of one family
    against each other."""
    if not stacks:
        return []
    labels = [label for label, _ in stacks]
    base = baseline if baseline in labels else labels[0]
    out = [(base, label) for label in labels if label != base]
    for i, (a, family) in enumerate(stacks):
        for b, other in stacks[i + 1:]:
            if family == other and base not in (a, b):
                out.append((a, b))
    return out
