"""Warnings with advice (hyperfine's warnings.rs): facts about a measurement that change
how much it can be trusted. Returned as data and stored with the cell; shown by the report."""

from __future__ import annotations

FAILED_SHARE = 0.01


def for_cell(doc: dict, pinning: dict) -> list[str]:
    out = list(doc.get("warnings") or [])  # the engine's own (e.g. its threads saturated)
    req = doc.get("requests") or {}
    total = (req.get("completed") or 0) + (req.get("failed") or 0)
    if total and req.get("failed", 0) / total >= FAILED_SHARE:
        out.append(f"{req['failed'] / total:.1%} of requests failed: the figure describes a stack that was "
                   "overloaded or broken, not its speed")
    if total and req.get("non_2xx"):
        out.append(f"{req['non_2xx']} responses were not 2xx")
    if total == 0:
        out.append("no request completed")
    for header, values in (doc.get("header_counts") or {}).items():
        answered = sum(values.values())
        hits = values.get("HIT", 0)
        if answered and hits:
            out.append(f"{header}: {hits / answered:.0%} of responses were cache hits — this measures the cache, "
                       "not PHP (varnish_mode = \"pass-php\" or cache_ttl = 0 measure PHP behind the cache)")
    if pinning.get("shared"):
        out.append("server and load engine share CPU cores: the engine's work is taken from the server's budget")
    return out
