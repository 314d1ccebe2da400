"""What `stackbench tune` asks: one stack, one workload, N clients, on a machine, within an
SLO — and the plans that measure it (the memory probe, then the candidates). Each is an
ordinary plan, checked like a plan file and stored as a run, so `show`, `report` and
`export` read a tuning's runs like any other (docs/methods/tuning.md)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackbench import units, workloads
from stackbench.analysis import capacity
from stackbench.errors import PlanError, UsageError
from stackbench.planning import machine, plan as plan_mod, window
from stackbench.stacks import registry
from stackbench.model.tuning import ONE_REQUEST_SUFFIX, Candidate
from stackbench.stacks.base import Pool

# The pool the memory probe runs: small enough to fit any machine the lab accepts, large
# enough that a worker's share of what the pool shares is not the whole of it.
PROBE_SIZE = 4
# What a one-request candidate sets: the server closes every connection after one
# response, so a client waiting in the listen queue gets a worker at the next response,
# not when a kept-alive client leaves.
ONE_REQUEST_A_CONNECTION = {"keepalive_requests": 1}
# At a rate on a mix with deliberately slow requests, a candidate's window holds this many
# of them on average: a window that met none did not test the pool (analysis/tuning.py
# counts it neither way), and with 3 expected one in 20 meets none (e^-3), where the
# capacity probe's 100 responses (2 expected at 1 in 50) left one in 7.
SLOW_EXPECTED = 3


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
    # An open loop at this many requests a second instead of `concurrency` clients; then
    # `concurrency` is the engine's connections for it (planning/loads.py connections_for)
    rate: float | None = None

    def key(self) -> dict[str, Any]:
        """What a stored tuning must match to be reused: the stack, the page, the load,
        the machine and the SLO (not how long it was measured)."""
        key = {"stack": self.stack_id, "workload": self.workload, "concurrency": self.concurrency,
               "keepalive": self.keepalive, "machine": machine.normal_table(self.machine or {}),
               "slo": self.slo or {}, "knobs": self.knobs}
        return key if self.rate is None else {**key, "rate": self.rate}

    def load(self) -> str:
        """"64 clients", "20 requests/s"."""
        return f"{self.concurrency} clients" if self.rate is None else f"{self.rate:.3g} requests/s"

    def as_dict(self) -> dict[str, Any]:
        return {**self.key(), "duration": self.duration, "warmup": self.warmup, "timeout": self.timeout,
                "repetitions": self.repetitions}


def pool_of(stack_id: str) -> Pool:
    stack = registry.get(stack_id)
    if stack.pool is None:
        raise UsageError(f"stack {stack_id!r} has no pool of PHP workers to size")
    return stack.pool


def label(pool: Pool, size: int) -> str:
    """A pool size's label: "8 workers" (the same word for every pool, so a table reads)."""
    return f"{size} worker{'s' if size != 1 else ''}"


def candidate_label(pool: Pool, c: Candidate) -> str:
    """"8 workers", "8 workers, one request a connection"."""
    return label(pool, c.size) + (ONE_REQUEST_SUFFIX if c.one_request else "")


def tuned_label(label: str, stack_id: str, chosen_size: int, one_request: bool) -> str:
    """A tuned stack's label as its runs carry it: "nginx + FPM (tuned: 2 PHP-FPM children)"."""
    extra = ONE_REQUEST_SUFFIX if one_request else ""
    return f"{label} (tuned: {pool_of(stack_id).describe(chosen_size)}{extra})"


def candidate_knobs(q: TuneQuestion, pool: Pool, c: Candidate) -> dict[str, Any]:
    """The question's fixed knobs, the pool's for the size, and one request a connection."""
    return {**q.knobs, **pool.knobs(c.size), **(ONE_REQUEST_A_CONNECTION if c.one_request else {})}


def probe_plan(q: TuneQuestion, size: int) -> plan_mod.Plan:
    """One run of a small pool under the question's load: what a worker holds, and how busy
    it kept the CPUs."""
    return _plan(q, f"tune {q.stack_id}: memory probe", [Candidate(size)], repetitions=1)


def candidates_plan(q: TuneQuestion, candidates: list[Candidate]) -> plan_mod.Plan:
    """Every candidate, `q.repetitions` times (the repetitions interleave the candidates,
    so a drift of the machine falls on all of them)."""
    return _plan(q, f"tune {q.stack_id}: candidates", candidates, repetitions=q.repetitions)


def machine_profile(q: TuneQuestion) -> machine.MachineProfile | None:
    return machine.parse(q.machine, lambda msg: PlanError(f"--machine: {msg}")) if q.machine else None


def slow_share(workload_id: str) -> float:
    """The share of a workload's requests that are deliberately slow (0 for most)."""
    if workload_id not in workloads.IDS:
        return 0.0
    urls = workloads.get(workload_id).urls
    total = sum(u.weight for u in urls)
    return sum(u.weight for u in urls if u.slow_ms) / total if total else 0.0


def _duration(q: TuneQuestion) -> str:
    """A candidate's window: the question's, and at a rate as long as a capacity probe
    (judged as one: analysis/capacity.py probe_seconds, ~100 responses) — on a mix with
    slow requests long enough to hold SLOW_EXPECTED of them."""
    if q.rate is None:
        return q.duration
    at_least = units.parse_duration_s(q.duration)
    share = slow_share(q.workload)
    if share > 0:
        at_least = max(at_least, SLOW_EXPECTED / (share * q.rate))
    return f"{capacity.probe_seconds(q.rate, at_least):g}s"


def _plan(q: TuneQuestion, name: str, candidates: list[Candidate], repetitions: int) -> plan_mod.Plan:
    pool = pool_of(q.stack_id)
    data: dict[str, Any] = {
        "name": name, "workloads": [q.workload], "keepalive": [q.keepalive],
        "duration": _duration(q), "warmup": q.warmup, "timeout": q.timeout, "repetitions": repetitions,
        "syscalls": False,
        "stacks": [{"id": q.stack_id, "label": candidate_label(pool, c), "knobs": candidate_knobs(q, pool, c)}
                   for c in candidates],
    }
    if q.rate is None:
        data["concurrency"] = [q.concurrency]
    else:
        data.update(load="rate", rate=[q.rate], connections=q.concurrency)
    if q.machine:
        data["machine"] = q.machine
    return plan_mod.parse(data, "stackbench tune")


def most_runs(q: TuneQuestion, holds_connections: bool) -> int:
    """The runs a tuning makes at most (the memory bound and a saturated CPU can only take
    candidates away): the probe, every doubling up to the clients, and for a pool that
    holds connections the largest kept alive."""
    n, sizes = 1, 1
    while n < q.concurrency:
        n, sizes = n * 2, sizes + 1
    return 1 + (sizes + (1 if holds_connections and q.keepalive else 0)) * q.repetitions


def run_seconds(q: TuneQuestion, longest: bool = False) -> float:
    """One run's time: a stack start and stop, the warm-up, the window — or, `longest`, the
    longest window a slow stack gets (planning/window.py cap_s: a count, or the long fixed
    window of a stack that left clients waiting)."""
    d = units.parse_duration_s(_duration(q))
    window_s = window.cap_s(d, units.parse_duration_s(q.timeout)) if longest else d
    return plan_mod.START_STOP_S + units.parse_duration_s(q.warmup) + window_s
