"""A stored tuning (`stackbench tune`): which pool a stack was given for one question,
with the runs that measured it. The candidates' figures are those runs' cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class TuningMemory:
    """What the memory probe measured, and the bound it gave."""

    worker_bytes: int  # the largest worker's PSS
    base_bytes: int  # the stack's other processes and its services
    workers: int  # workers the probe found
    limit_bytes: int  # the machine's memory (the profile's, else this host's)
    bound: int  # the largest pool that fits
    headroom: float  # the share of the limit a pool may plan to fill


@dataclass(frozen=True)
class StoredTuning:
    id: int
    probe_run_id: int | None  # the memory probe's run
    run_id: int  # the candidates' run
    stack_id: str
    workload: str
    key: dict[str, Any]  # what a reuse must match (planning/tune.py TuneQuestion.key)
    question: dict[str, Any]  # the key and how it was measured
    memory: TuningMemory | None
    sizes: dict[str, int]  # candidate's label -> pool size
    chosen_size: int
    knobs: dict[str, Any]  # the chosen candidate's knobs
    reason: str  # analysis/tuning.py Reason's value
    created_at: str

    # The question, typed (the key holds them as the tuner asked):
    @property
    def concurrency(self) -> int:
        return int(self.key["concurrency"])

    @property
    def keepalive(self) -> bool:
        return bool(self.key.get("keepalive", True))

    @property
    def machine(self) -> dict[str, Any]:
        """As a plan's machine table (cpus, memory as written)."""
        return dict(self.key.get("machine") or {})

    @property
    def slo_table(self) -> dict[str, Any] | None:
        """The SLO as the tuner stored it (analysis/capacity.py SLO.as_dict), or None."""
        slo = self.key.get("slo")
        return dict(slo) if slo else None

    @property
    def keepalive_run_id(self) -> int | None:
        """The second stage's run (a pool whose workers hold connections), if one ran."""
        run = self.question.get("keepalive_run_id")
        return int(run) if run is not None else None
