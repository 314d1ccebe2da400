"""Deliberately slow requests in a tuning (docs/methods/tuning.md, "Slow requests"). A mix
such as wordpress-mix-slow holds a PHP worker for a second on 1 request in 50, as a slow
query does. Pure, from a candidate's cells and the workload's slow URLs ({path: hold, ms}):

1. **The SLO is the other pages'.** A slow request's own second is the page's doing, not
   the pool's — at 1 in 50, a p99 of 500 ms is out of reach of every pool — so a pool is
   judged on what that second does to the others: the SLO's latency on every other page,
   each page on its own percentile (the engine's per-URL tables: when each page's p99 is
   within a limit, the other pages together are too, so page by page is the stricter
   test), and a request still out when the window ends may be a slow one, its hold
   allowed on top (`judged`). Errors, unsent requests and clients unserved count as
   they do for any mix.
2. **What one slow request costs everyone** (`cost`): a pool of one process serves nobody
   else while a slow request holds it. Measured on the tuning's own runs of the mix: the
   one-process candidate's figure, the other pages' p99, a slow request's own latency and
   the share of the time slow requests held the worker — beside the same of the chosen
   pool when that is larger. How many visitors wait behind one such hold is the question's
   own arithmetic (`behind`): in a closed loop every other client has a request queued;
   at a rate, those that arrive during the hold.
3. **One worker ruled out at a rate, by construction** (`one_worker_bound`): each slow
   request holds the only worker for its hold S, and the holds cannot overlap; a page
   arriving in the first S − L of one waits past the SLO's limit L before it even starts.
   Slow requests arrive at rate × share a second, so that is true of rate × share × (S − L)
   of the time — and of the other pages, which arrive independently of them. When that
   share is at least MARGIN times what the SLO's percentile allows (1 − p), the pool of
   one cannot meet the SLO and is not measured.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Mapping, Sequence

from stackbench.engine.result import EngineResult, Latency, UrlResult
from stackbench.model.tuning import OneWorkerBound, SlowPool

# A one-worker pool is ruled out without a run when the other pages that must wait past the
# SLO are at least this many times what its percentile allows: then a window's count of slow
# requests, random as it is, cannot bring it under (one slow request in a 24 s window at
# 6.25/s already makes ~3 of 150 pages late where the p99 allows 1.5), and the measured
# one-worker runs at that rate all missed it (bench/RESULTS.md, "One worker ruled out").
MARGIN = 2.0


@dataclass(frozen=True)
class SlowRun:
    """One valid repetition of a candidate on a mix with slow requests."""

    responses: int  # answered requests, every URL
    slow_responses: int  # of them, the slow ones
    window_us: int
    others_p99_us: int | None  # the worst other page's p99 (None: none completed)
    slow_p50_us: int | None  # the slow requests' own p50 (None: none completed)


def _slow(u: UrlResult, slow: Mapping[str, int]) -> bool:
    return u.path is not None and u.path in slow


def others_latency(e: EngineResult, slow: Mapping[str, int]) -> Latency:
    """The other pages' latency as the SLO judges it: each percentile the worst page's."""
    rest = [u for u in e.per_url if not _slow(u, slow) and u.requests.completed]
    keys = sorted({k for u in rest for k in u.latency.percentiles_us}, key=float)
    table = {k: max((v for u in rest if (v := u.latency.percentiles_us.get(k)) is not None), default=None)
             for k in keys}
    means = [(u.latency.mean_us, u.requests.completed) for u in rest if u.latency.mean_us is not None]
    mean = sum(m * n for m, n in means) / sum(n for _, n in means) if means else None
    return Latency.from_doc({"mean": mean, "percentiles": table})  # the engine's table, read where it always is


def judged(e: EngineResult, slow: Mapping[str, int]) -> EngineResult:
    """The engine's result as an SLO judges a mix with slow requests (the module's rule 1);
    `e` itself when the mix has none, or the engine kept no per-URL table."""
    if not slow or not any(_slow(u, slow) for u in e.per_url):
        return e
    req = e.requests
    oldest = req.in_flight_oldest_us
    if oldest is not None:
        oldest = max(0, oldest - max(slow.values()) * 1000)
    return replace(e, latency=others_latency(e, slow), requests=replace(req, in_flight_oldest_us=oldest))


def run_of(e: EngineResult, slow: Mapping[str, int]) -> SlowRun | None:
    """One repetition's figures; None when the mix has no slow URL."""
    held = [u for u in e.per_url if _slow(u, slow)]
    if not held:
        return None
    answered = sum(u.requests.completed - u.requests.non_2xx for u in e.per_url)
    p50s = [u.latency.p50_us for u in held if u.latency.p50_us is not None]
    return SlowRun(answered, sum(u.requests.completed - u.requests.non_2xx for u in held), e.duration_us,
                   others_latency(e, slow).p99_us, max(p50s) if p50s else None)


def behind(concurrency: int, rate: float | None, hold_ms: int) -> float:
    """The visitors behind one held worker of a one-process pool: the other clients in a
    closed loop (each has a request queued for the one worker), or the arrivals during the
    hold at a rate."""
    return rate * hold_ms / 1000 if rate is not None else float(max(0, concurrency - 1))


def pool(size: int, one_request: bool, responses_per_s: float | None, runs: Sequence[SlowRun],
         hold_ms: int) -> SlowPool:
    """A candidate's figures over its runs: the worst run's latencies (what a visitor may
    meet), the held share over all of them."""
    p99s = [r.others_p99_us for r in runs if r.others_p99_us is not None]
    p50s = [r.slow_p50_us for r in runs if r.slow_p50_us is not None]
    window_us = sum(r.window_us for r in runs)
    held = (sum(r.slow_responses for r in runs) * hold_ms * 1000 / (window_us * size)) if window_us else None
    return SlowPool(size, one_request, responses_per_s, max(p99s) if p99s else None, max(p50s) if p50s else None,
                    min(1.0, held) if held is not None else None)


def share(weights: Mapping[str, int], slow: Mapping[str, int]) -> float:
    """The slow URLs' share of a mix's requests, from its weights ({path: weight})."""
    total = sum(weights.values())
    return sum(w for p, w in weights.items() if p in slow) / total if total else 0.0



def one_worker_bound(rate: float, share: float, hold_ms: int, latency_us: Mapping[str, int]) -> OneWorkerBound | None:
    """The module's rule 3: why one worker cannot meet `latency_us` (the SLO's {percentile:
    limit}) at `rate` requests a second of which `share` are held `hold_ms`; None when
    it might (no limit the holds break by MARGIN)."""
    for p, limit_us in sorted(latency_us.items(), key=lambda kv: float(kv[0])):
        late = min(1.0, rate * share * max(0.0, hold_ms / 1000 - limit_us / 1e6))
        allowed = 1 - float(p) / 100
        if late > 0 and late >= MARGIN * allowed:
            return OneWorkerBound(rate, p, limit_us, late, allowed)
    return None
