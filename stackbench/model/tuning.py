"""A stored tuning (`stackbench tune`): which pool a stack was given for one question,
with the runs that measured it. The candidates' figures are those runs' cells."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# A one-request candidate's label is its size's ("8 workers") + this (planning/tune.py).
ONE_REQUEST_SUFFIX = ", one request a connection"


@dataclass(frozen=True)
class Candidate:
    """A pool to measure: its size, and whether the server closes each connection after one
    response (keepalive_requests = 1: planning/tune.py)."""

    size: int
    one_request: bool = False


@dataclass(frozen=True)
class TuningMemory:
    """What the memory probe measured, and the bound it gave."""

    worker_bytes: int  # the largest worker's PSS
    base_bytes: int  # the stack's other processes and its services
    workers: int  # workers the probe found
    limit_bytes: int  # the machine's memory (the profile's, else this host's)
    bound: int  # the largest pool that fits
    headroom: float  # the share of the limit a pool may plan to fill
    # The share of the machine's CPUs the probe's pool kept busy, and the size the
    # candidates stopped at because of it (None: not measured, or not saturated)
    cpu_busy: float | None = None
    cpu_top: int | None = None


@dataclass(frozen=True)
class SlowPool:
    """One candidate pool on a mix with deliberately slow requests, as its runs measured it
    (analysis/slow_requests.py)."""

    size: int
    one_request: bool
    responses_per_s: float | None  # its figure on the mix (geometric mean of its runs)
    others_p99_us: int | None  # the other pages' p99: the worst page's, in the worst run
    slow_p50_us: int | None  # a slow request's own latency (its hold and its wait), the worst run's p50
    # The share of its workers' time the slow requests held them: slow responses × the hold
    # over the windows × the workers. With one worker, the share of the time nobody else was
    # served.
    held_share: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"size": self.size, "one_request": self.one_request, "responses_per_s": self.responses_per_s,
                "others_p99_us": self.others_p99_us, "slow_p50_us": self.slow_p50_us,
                "held_share": self.held_share}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SlowPool":
        return cls(int(d["size"]), bool(d.get("one_request")), d.get("responses_per_s"),
                   d.get("others_p99_us"), d.get("slow_p50_us"), d.get("held_share"))


@dataclass(frozen=True)
class OneWorkerBound:
    """Why a pool of one worker cannot meet a rate's SLO on a mix with slow requests, by
    construction and so not measured (analysis/slow_requests.py `one_worker_bound`): every
    slow request holds the only worker `hold_ms`, and the other pages that arrive in its
    first hold − limit wait past the SLO's limit — `late_share` of them, where the SLO's
    percentile allows `allowed_share`."""

    rate: float  # requests a second
    percentile: str  # the SLO's ("99")
    limit_us: int  # its latency limit
    late_share: float  # the other pages that must wait past it
    allowed_share: float  # 1 − the percentile

    def as_dict(self) -> dict[str, Any]:
        return {"rate": self.rate, "percentile": self.percentile, "limit_us": self.limit_us,
                "late_share": self.late_share, "allowed_share": self.allowed_share}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "OneWorkerBound":
        return cls(float(d["rate"]), str(d["percentile"]), int(d["limit_us"]), float(d["late_share"]),
                   float(d["allowed_share"]))


@dataclass(frozen=True)
class SlowCost:
    """What one slow request costs the other visitors, from a tuning's own runs on a mix with
    deliberately slow requests: the one-process pool, and the chosen pool when it is larger
    (analysis/slow_requests.py cost)."""

    hold_ms: int  # how long a slow request holds its worker
    share: float  # the slow requests' share of the mix's requests (its weights)
    # The visitors behind one held worker of a one-process pool: the other clients (a closed
    # loop: each has a request queued), or those arriving during the hold (at a rate)
    behind: float
    one: SlowPool | None  # the one-process candidate (None: the tuning measured none)
    chosen: SlowPool | None  # the chosen pool, when it is not that one
    # One worker ruled out at the rate without a run (None: it was measured, or not at a rate)
    one_ruled_out: OneWorkerBound | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"hold_ms": self.hold_ms, "share": self.share, "behind": self.behind,
                "one": self.one.as_dict() if self.one else None,
                "chosen": self.chosen.as_dict() if self.chosen else None,
                "one_ruled_out": self.one_ruled_out.as_dict() if self.one_ruled_out else None}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "SlowCost":
        one, chosen, ruled = d.get("one"), d.get("chosen"), d.get("one_ruled_out")
        return cls(int(d["hold_ms"]), float(d["share"]), float(d["behind"]),
                   SlowPool.from_dict(one) if one else None, SlowPool.from_dict(chosen) if chosen else None,
                   OneWorkerBound.from_dict(ruled) if ruled else None)


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
    # What one slow request cost the other visitors, when the workload has deliberately slow
    # requests (None: it has none, or the tuning was stored before v17)
    slow_cost: SlowCost | None = None

    # The question, typed (the key holds them as the tuner asked):
    @property
    def concurrency(self) -> int:
        return int(self.key["concurrency"])

    @property
    def rate(self) -> float | None:
        """An open loop's requests a second (None: `concurrency` clients in a closed loop)."""
        rate = self.key.get("rate")
        return float(rate) if rate is not None else None

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
    def one_request(self) -> bool:
        """The chosen pool closes each connection after one response."""
        return self.knobs.get("keepalive_requests") == 1

    @property
    def candidate_run_ids(self) -> list[int]:
        """The runs whose cells are the candidates: at a rate, the smallest pool's own run
        first when the others were measured after it, then the pool of 2's when it was
        measured on its own before the probe (runner/tune.py)."""
        earlier = [self.question.get(k) for k in ("first_run_id", "second_run_id")]
        return [int(r) for r in earlier if r is not None] + [self.run_id]

    @property
    def slow_paths(self) -> dict[str, int]:
        """The workload's deliberately slow URLs and each one's hold, ms, as the tuner stored
        them ({} for an ordinary workload)."""
        return {str(p): int(ms) for p, ms in (self.question.get("slow") or {}).items()}

    @property
    def keepalive_run_id(self) -> int | None:
        """The second stage's run (a pool whose workers hold connections), if one ran."""
        run = self.question.get("keepalive_run_id")
        return int(run) if run is not None else None
