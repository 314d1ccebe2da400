"""Caveats (hyperfine's warnings.rs): facts about a measurement that change how much it
can be trusted, kept as data ({code, params}) and worded only by the reports
(report/text/caveats.py).

One source per fact: what the load engine saw (failed requests, unserved clients, its
own saturation, …) comes from the engine's `warning_codes` with the engine's thresholds;
this module adds only what the engine cannot know — that a cache answered, that server
and engine shared cores.
"""

from __future__ import annotations

from stackbench.engine.result import Caveat, EngineResult

# Codes the lab adds; the engine's are listed in loadgen/README.md.
CACHE_HITS = "cache_hits"
CORES_SHARED = "cores_shared"

# Caveats that make a repetition unfit for a verdict (the validity gates): the figures
# then describe the generator, the failures or a subset of the clients — not the stack.
INVALIDATING = frozenset({
    "engine_saturated", "requests_failed", "clients_unserved", "no_response_all", "no_requests", "target_down",
})


def for_cell(result: EngineResult, pinning: dict) -> list[Caveat]:
    out = list(result.caveats)
    for header, values in result.header_counts.items():
        answered = sum(values.values())
        hits = values.get("HIT", 0)
        if answered and hits:
            out.append(Caveat(CACHE_HITS, {"header": header, "share": hits / answered}))
    if pinning.get("shared"):
        out.append(Caveat(CORES_SHARED))
    return out
