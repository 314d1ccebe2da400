"""Caveats (hyperfine's warnings.rs): facts about a measurement that change how much it
can be trusted, kept as data ({code, params}) and worded only by the reports
(report/text/caveats.py).

One source per fact: what the load engine saw (failed requests, unserved clients, its
own saturation, …) comes from the engine's `warning_codes` with the engine's thresholds;
this module adds only what the engine cannot know — that a cache answered, that server
and engine shared cores, that the hypervisor took the server's core away, that a machine
profile's memory limit was reached or its OOM killer took processes.
"""

from __future__ import annotations

from stackbench.engine.result import Caveat, EngineResult

# Codes the lab adds; the engine's are listed in loadgen/README.md.
CACHE_HITS = "cache_hits"
CORES_SHARED = "cores_shared"
CPU_STEAL = "cpu_steal"
SERVER_LIMIT = "server_limit"
MEMORY_LIMIT = "memory_limit"
OOM_KILLED = "oom_killed"

# A run whose server cores lost this share of their time to the hypervisor measured the
# host as much as the stack (monitor/steal.py; the share seen per run is in the store).
# Measured here (session 2, default plan): runs with ≥ 10 % steal ran at 0.17–0.94 of
# their stack's median throughput, runs under 5 % at 0.91–1.51 — host noise of its own.
STEAL_SHARE = 0.10

# Caveats that make a repetition unfit for a verdict (the validity gates): the figures
# then describe the generator, the failures or a subset of the clients — not the stack.
INVALIDATING = frozenset({
    "engine_saturated", "requests_failed", "clients_unserved", "no_response_all", "no_requests", "target_down",
    CPU_STEAL,
})


# Non-2xx answers are "completed" requests to the engine; above this share the figures
# describe an error page (a fast 502 is not a fast stack). The engine's own threshold
# for failed requests is the same 1 %.
NON_2XX_SHARE = 0.01


def invalidates(caveat: Caveat) -> bool:
    """Does this stored caveat keep its repetition out of verdicts?"""
    if caveat.code == "non_2xx":
        return caveat.params.get("share", 1.0) > NON_2XX_SHARE
    return caveat.code in INVALIDATING


def for_cell(result: EngineResult, pinning: dict, steal_share: float | None = None) -> list[Caveat]:
    out = list(result.caveats)
    for header, values in result.header_counts.items():
        answered = sum(values.values())
        hits = values.get("HIT", 0)
        if answered and hits:
            out.append(Caveat(CACHE_HITS, {"header": header, "share": hits / answered}))
    if pinning.get("shared"):
        out.append(Caveat(CORES_SHARED))
    if steal_share is not None and steal_share >= STEAL_SHARE:
        out.append(Caveat(CPU_STEAL, {"share": steal_share}))
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
        out.append(Caveat(SERVER_LIMIT, {"server": "Apache", "setting": "MaxRequestWorkers",
                                         "knob": "max_request_workers", "value": workers, "connections": connections}))
    reached = [s.values["max_children_reached"] for s in status
               if s.server == "php-fpm" and "max_children_reached" in s.values]
    if len(reached) >= 2 and reached[-1] > reached[0] and knobs.get("pm_max_children"):
        out.append(Caveat(SERVER_LIMIT, {"server": "PHP-FPM", "setting": "pm.max_children",
                                         "knob": "pm_max_children", "value": knobs["pm_max_children"],
                                         "connections": connections}))
    return out


def memory_limit(events: dict | None) -> list[Caveat]:
    """What a machine profile's memory limit did in the window (monitor/memory_events.py).
    Like a server limit, a finding about the stack on that small machine, so it never
    invalidates a run by itself: the requests the kills broke are the engine's failed
    requests, which have their own gate. OOM kills before the window (stack start,
    warm-up) are named too — the window then measured a stack that had lost processes."""
    if not events:
        return []
    kills, before = events.get("oom_kills") or 0, events.get("oom_kills_before") or 0
    after = events.get("oom_kills_profile") or 0
    if kills or before or after:
        return [Caveat(OOM_KILLED, {"count": kills, "before": before, "after": after,
                                    "limit_bytes": events.get("limit_bytes")})]
    if events.get("limit_hits"):
        return [Caveat(MEMORY_LIMIT, {"hits": events["limit_hits"], "limit_bytes": events.get("limit_bytes"),
                                      "stall_us": events.get("pressure_some_us")})]
    return []
