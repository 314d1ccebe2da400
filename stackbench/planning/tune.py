"""What `stackbench tune` asks: one stack, one workload, N clients, on a machine, within an
SLO — and the plans that measure it (the memory probe, then the candidates). Each is an
ordinary plan, checked like a plan file and stored as a run, so `show`, `report` and
`export` read a tuning's runs like any other (docs/methods/tuning.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackbench import units
from stackbench.errors import PlanError, UsageError
from stackbench.planning import machine, plan as plan_mod, window
from stackbench.stacks import registry
from stackbench.stacks.base import Pool

# The pool the memory probe runs: small enough to fit any machine the lab accepts, large
# enough that a worker's share of what the pool shares is not the whole of it.
PROBE_SIZE = 4


@dataclass(frozen=True)
class TuneQuestion:
    stack_id: str
    workload: str
    concurrency: int
    machine: dict[str, Any] | None = None  # as a plan's `machine` table
    slo: dict[str, Any] | None = None  # as a plan's `slo` table (latency, errors)
    keepalive: bool = True
    duration: str = "4s"
    warmup: str = "0s"
    timeout: str = "30s"
    repetitions: int = 3
    knobs: dict[str, Any] = field(default_factory=dict)  # fixed beside the pool (the plan's own)

    def key(self) -> dict[str, Any]:
        """What a stored tuning must match to be reused: the stack, the page, the load,
        the machine and the SLO (not how long it was measured)."""
        return {"stack": self.stack_id, "workload": self.workload, "concurrency": self.concurrency,
                "keepalive": self.keepalive, "machine": machine.normal_table(self.machine or {}),
                "slo": self.slo or {}, "knobs": self.knobs}

    def as_dict(self) -> dict[str, Any]:
        return {**self.key(), "duration": self.duration, "warmup": self.warmup, "timeout": self.timeout,
                "repetitions": self.repetitions}


def pool_of(stack_id: str) -> Pool:
    stack = registry.get(stack_id)
    if stack.pool is None:
        raise UsageError(f"stack {stack_id!r} has no pool of PHP workers to size")
    return stack.pool


def label(pool: Pool, size: int) -> str:
    """A candidate's label: "8 workers" (the same word for every pool, so a table reads)."""
    return f"{size} worker{'s' if size != 1 else ''}"


def probe_plan(q: TuneQuestion, size: int) -> plan_mod.Plan:
    """One run of a small pool under the question's load: what a worker holds."""
    return _plan(q, f"tune {q.stack_id}: memory probe", [size], repetitions=1)


def candidates_plan(q: TuneQuestion, sizes: list[int], label: str | None = None) -> plan_mod.Plan:
    """Every candidate, `q.repetitions` times (the repetitions interleave the candidates,
    so a drift of the machine falls on all of them). `label`: one candidate's own name."""
    return _plan(q, f"tune {q.stack_id}: candidates", sizes, repetitions=q.repetitions, named=label)


def machine_profile(q: TuneQuestion) -> machine.MachineProfile | None:
    return machine.parse(q.machine, lambda msg: PlanError(f"--machine: {msg}")) if q.machine else None


def _plan(q: TuneQuestion, name: str, sizes: list[int], repetitions: int, named: str | None = None) -> plan_mod.Plan:
    pool = pool_of(q.stack_id)
    data: dict[str, Any] = {
        "name": name, "workloads": [q.workload], "concurrency": [q.concurrency], "keepalive": [q.keepalive],
        "duration": q.duration, "warmup": q.warmup, "timeout": q.timeout, "repetitions": repetitions,
        "syscalls": False,
        "stacks": [{"id": q.stack_id, "label": named or label(pool, n), "knobs": {**q.knobs, **pool.knobs(n)}}
                   for n in sizes],
    }
    if q.machine:
        data["machine"] = q.machine
    return plan_mod.parse(data, "stackbench tune")


def most_runs(q: TuneQuestion, holds_connections: bool) -> int:
    """The runs a tuning makes at most (the memory bound can only take candidates away):
    the probe, every doubling up to the clients, and the second stage."""
    n, sizes = 1, 1
    while n < q.concurrency:
        n, sizes = n * 2, sizes + 1
    return 1 + sizes * q.repetitions + (q.repetitions if holds_connections and q.keepalive else 0)


def run_seconds(q: TuneQuestion, longest: bool = False) -> float:
    """One run's time: a stack start and stop, the warm-up, the window — or, `longest`, the
    longest window a slow stack gets (planning/window.py cap_s: a count, or the long fixed
    window of a stack that left clients waiting)."""
    d = units.parse_duration_s(q.duration)
    window_s = window.cap_s(d, units.parse_duration_s(q.timeout)) if longest else d
    return plan_mod.START_STOP_S + units.parse_duration_s(q.warmup) + window_s
