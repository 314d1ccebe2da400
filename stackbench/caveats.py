"""Caveats (hyperfine's warnings.rs): facts about a measurement that change how much it
can be trusted, kept as data ({code, params}) and worded only by the reports
(report/words/caveats.py).

One source per fact: what the load engine saw (failed requests, unserved clients, its
own saturation, …) comes from the engine's `warning_codes` with the engine's thresholds;
this module adds only what the engine cannot know — that a cache answered, that server
and engine shared cores, that the hypervisor took the server's core away, that a machine
profile's memory limit was reached or its OOM killer took processes.
"""

from __future__ import annotations

from stackbench.engine.result import (CacheHits, Caveat, ClientsUnserved, CoresShared, CpuSteal, EngineResult,
                                       MemoryLimit, NoRequests, NoResponseAll, Non2xx, NotSteady, OomKilled,
                                       RateNotReached, RequestsFailed, ServerLimit, TargetDown)

# Codes the lab adds; the engine's are listed in loadgen/README.md.
CACHE_HITS, CORES_SHARED, CPU_STEAL = CacheHits.CODE, CoresShared.CODE, CpuSteal.CODE
SERVER_LIMIT, MEMORY_LIMIT, OOM_KILLED = ServerLimit.CODE, MemoryLimit.CODE, OomKilled.CODE
NOT_STEADY = NotSteady.CODE
NON_2XX = Non2xx.CODE  # the engine's code for answers outside 2xx (a load failure above NON_2XX_SHARE)
# The engine's codes of a load failure (loadgen/README.md), spelled once for their readers.
NO_RESPONSE_ALL, CLIENTS_UNSERVED = NoResponseAll.CODE, ClientsUnserved.CODE
REQUESTS_FAILED, NO_REQUESTS, TARGET_DOWN = RequestsFailed.CODE, NoRequests.CODE, TargetDown.CODE
RATE_NOT_REACHED = RateNotReached.CODE

# A run whose server cores lost this share of their time to the hypervisor measured the
# host as much as the stack (monitor/steal.py; the share seen per run is in the store).
# Measured here (session 2, default plan): runs with ≥ 10 % steal ran at 0.17–0.94 of
# their stack's median throughput, runs under 5 % at 0.91–1.51 — host noise of its own.
STEAL_SHARE = 0.10

# Non-2xx answers are "completed" requests to the engine; above this share the figures
# describe an error page (a fast 502 is not a fast stack). The engine's own threshold
# for failed requests is the same 1 %.
NON_2XX_SHARE = 0.01

# Two kinds of bad repetitions, never confused (docs/methods.md, "Two kinds of bad runs";
# analysis/outcomes.py decides each repetition's outcome from these):
#
# MEASUREMENT FAILURES: the figures describe the generator or the host, not the stack.
# The repetition is invalid: shown, never in a verdict.
MEASUREMENT_FAILURES: dict[str, str] = {
    # Only while the server had headroom: an engine at its limit beside a server at its
    # limit too measured a lower bound of the stack, which stays valid
    # (analysis/outcomes.py: SERVER_BUSY; a busy share not known counts as headroom).
    "engine_saturated": "an engine thread was busy >= 90 % of the window: the figures measure the load generator",
    CPU_STEAL: "the hypervisor took the server's core: the figures measure the host's other guests",
}
# Neither: cores_shared (one core for server and engine) is said, not a gate — on such a
# machine every run pays the same tax, and the sentence says so; not_steady (a steady
# warm-up that reached its cap: planning/steady.py) is a fact about the stack — it was
# measured still warming up, and its figure is what it served then.
#
# LOAD FAILURES: the stack did not serve the load it was given. A result, not a void:
# the repetition is valid, counts with what it delivered, and the stack loses.
LOAD_FAILURES: dict[str, str] = {
    NO_RESPONSE_ALL: "no connection got a response in the whole window: every client went unserved",
    CLIENTS_UNSERVED: "some connections got no response in the whole window: their clients went unserved "
                        "(prefork children held by keep-alive or by slow visitors, a pool that could not grow)",
    REQUESTS_FAILED: "more than 1 % of requests failed (resets, timeouts: the engine's threshold)",
    NON_2XX: f"more than {NON_2XX_SHARE:.0%} of responses were errors (a fast 502 is not a fast stack)",
    NO_REQUESTS: "nothing completed or failed in the window",
    # With a result from the engine the stack was up when the load began (a stack that
    # never came up has no engine result and is not a load result): it stopped accepting.
    TARGET_DOWN: "no connection to the stack succeeded during the load",
    # Open loop: requests fell due and were never sent because every connection was still
    # waiting on the stack (the engine's threshold: under 95 % of the rate sent).
    RATE_NOT_REACHED: "due requests were never sent: every connection was waiting on the stack",
    OOM_KILLED: "the OOM killer took processes of the stack (in the window or its warm-up) under the machine "
                "profile's memory limit: on that machine the stack does not fit this load",
}


def measurement_failure(caveat: Caveat) -> bool:
    """Is this stored caveat one that makes its repetition an invalid measurement —
    whatever the server's side (engine_saturated is decided with it, in analysis/outcomes.py)?"""
    return caveat.code in MEASUREMENT_FAILURES


def load_failure(caveat: Caveat) -> bool:
    """Does this stored caveat say the stack failed the load it was given?"""
    f = caveat.facts
    if isinstance(f, Non2xx):
        return (1.0 if f.share is None else f.share) > NON_2XX_SHARE
    if isinstance(f, OomKilled):
        # in the window or its warm-up (the same load); kills in the system-call pass
        # after the window did not touch the figures
        return bool((f.count or 0) + (f.before or 0))
    return caveat.code in LOAD_FAILURES


def failure_figures(caveat: Caveat) -> tuple[int | None, int | None, float | None]:
    """A load failure's figures as its caveat carries them: (count, out of, share) —
    connections unserved of those measured, connect errors, requests failed of those
    attempted, non-2xx responses, due requests never sent of those due, processes
    OOM-killed in the window and its warm-up; None where the caveat does not say."""
    match caveat.facts:
        case NoResponseAll(connections=n):
            return n, n, 1.0 if n else None
        case ClientsUnserved(without_response=unserved, connections=n):
            return unserved, n, None
        case TargetDown(connect_errors=n):
            return n, None, None
        case RequestsFailed(failed=failed, attempted=attempted, share=share):
            return failed, attempted, share
        case Non2xx(count=n, share=share):
            return n, None, share
        case RateNotReached(not_sent=not_sent, due=due):
            return not_sent, due, None
        case OomKilled(count=n, before=before):
            return (n or 0) + (before or 0), None, None
    return None, None, None


def invalidates(caveat: Caveat) -> bool:
    """Does this stored caveat keep its repetition out of verdicts? Only a measurement
    failure does (a load failure is a result); engine_saturated only while the server
    had headroom, which analysis/outcomes.py decides with the cell's CPU figures."""
    return measurement_failure(caveat)


def for_cell(result: EngineResult, pinning: dict, steal_share: float | None = None) -> list[Caveat]:
    out = list(result.caveats)
    for header, values in result.header_counts.items():
        answered = sum(values.values())
        hits = values.get("HIT", 0)
        if answered and hits:
            out.append(Caveat.of(CacheHits(header, hits / answered)))
    if pinning.get("shared"):
        out.append(Caveat.of(CoresShared()))
    if steal_share is not None and steal_share >= STEAL_SHARE:
        out.append(Caveat.of(CpuSteal(steal_share)))
    return out


def server_limits(status: list, knobs: dict, connections: int) -> list[Caveat]:
    """A server that reached a limit of its own configuration during the window, read
    from its status page (monitor/status_pages.py): at Apache's MaxRequestWorkers the
    other clients wait in the listen queue; at PHP-FPM's pm.max_children requests wait
    for a worker. Not a measuring error — the finding that at this load the server is
    refusing work, not slow — so it never invalidates a run; the sentence names the knob
    that raises it."""
    out = []
    busy = [s.values["busy_workers"] for s in status if s.server == "apache2" and "busy_workers" in s.values]
    workers = knobs.get("max_request_workers")
    if busy and workers and max(busy) >= workers:
        out.append(Caveat.of(ServerLimit("Apache", "MaxRequestWorkers", "max_request_workers", workers, connections)))
    reached = [s.values["max_children_reached"] for s in status
               if s.server == "php-fpm" and "max_children_reached" in s.values]
    if len(reached) >= 2 and reached[-1] > reached[0] and knobs.get("pm_max_children"):
        out.append(Caveat.of(ServerLimit("PHP-FPM", "pm.max_children", "pm_max_children", knobs["pm_max_children"],
                                          connections)))
    return out


def memory_limit(events: dict | None) -> list[Caveat]:
    """What a machine profile's memory limit did in the window (monitor/memory_events.py).
    A finding about the stack on that small machine, never an invalid measurement: OOM
    kills in the window or just before it (stack start, warm-up: the same load) are a
    load failure (LOAD_FAILURES; the requests the kills broke are the engine's failed
    ones); kills only in the system-call pass after the window are named, not a failure;
    reaching the limit without a kill is neither."""
    if not events:
        return []
    kills, before = events.get("oom_kills") or 0, events.get("oom_kills_before") or 0
    after = events.get("oom_kills_profile") or 0
    if kills or before or after:
        return [Caveat.of(OomKilled(kills, before, after, events.get("limit_bytes")))]
    if events.get("limit_hits"):
        return [Caveat.of(MemoryLimit(events["limit_hits"], events.get("limit_bytes"), events.get("pressure_some_us")))]
    return []


def not_steady(steady: bool | None, seconds: float, cap_s: float | None, tolerance: float | None,
               change: float | None) -> list[Caveat]:
    """A steady warm-up (planning/steady.py) that reached its cap with the throughput still
    moving: the cell was measured anyway, and says so. Neither kind of bad run."""
    if steady is not False:
        return []
    return [Caveat.of(NotSteady(round(seconds, 3), cap_s, tolerance, None if change is None else round(change, 4)))]
