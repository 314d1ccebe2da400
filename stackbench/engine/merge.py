"""Several engines' results as one (pure): the load of one cell spread over clients.

Counts add. Latency percentiles are recomputed from the engines' HdrHistogram buckets
(`--histogram`): every engine's histogram has the same bounds and precision, so adding
the counts bucket by bucket is the histogram one engine would have recorded, and the
percentile rule below is the engine's own (HdrHistogram's value_at_quantile, capped at
the exact maximum) — not an average of percentiles, which has no meaning. Count, min
and max merge exactly; the mean and the standard deviation from each engine's (pooled:
exact up to the engines' floating-point rounding). Per-URL rows merge the same way, and
so do a journey's visits (their durations, and each page's load times); the phase
summaries (connect, waiting, …) merge their moments, and their medians, which no bucket
backs, become None.

Throughput is the sum of the engines' own rates, each over its own measured window: the
windows differ by the start's spread (microseconds to milliseconds), and a rate over the
union of the windows would count that spread as idle time.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any, Iterable

PERCENTILES = ("50", "66", "75", "80", "90", "95", "98", "99", "99.9", "99.99", "100")


def percentile(buckets: list[tuple[int, int]], p: float, max_us: int) -> int:
    """The engine's rule over buckets in value order: the smallest bucket whose
    cumulative count reaches ceil(q × n) (at least 1), capped at the exact maximum."""
    if p >= 100.0:
        return max_us
    total = sum(c for _, c in buckets)
    want = max(1, math.ceil(p / 100.0 * total))
    seen = 0
    for value, count in buckets:
        seen += count
        if seen >= want:
            return min(value, max_us)
    raise ValueError("the buckets' counts do not reach their total")


def latency(parts: list[dict[str, Any] | None]) -> dict[str, Any] | None:
    """Latency documents (schema `latency`, each with `histogram`) merged exactly."""
    parts = [p for p in parts if p is not None]
    if not parts:
        return None
    missing = [p for p in parts if p.get("count") and p.get("histogram") is None]
    if missing:
        raise ValueError("an engine result has no histogram buckets (run it with --histogram)")
    buckets: Counter[int] = Counter()
    for p in parts:
        for value, count in p.get("histogram") or []:
            buckets[int(value)] += int(count)
    merged = sorted(buckets.items())
    counted = [p for p in parts if p.get("count")]
    n = sum(p["count"] for p in counted)
    out: dict[str, Any] = {"count": n, "min": None, "mean": None, "stdev": None, "max": None,
                           "percentiles": {k: None for k in PERCENTILES},
                           "histogram_max_us": parts[0].get("histogram_max_us"),
                           "over_range": sum(p.get("over_range") or 0 for p in parts), "histogram": merged}
    if not n:
        return out
    out.update(_moments(counted))
    out["percentiles"] = {k: percentile(merged, float(k), out["max"]) for k in PERCENTILES}
    return out


def _moments(parts: list[dict[str, Any]]) -> dict[str, Any]:
    """count, min, max, mean and sample stdev of the union, from each part's (Chan et
    al.'s pooled form: Σ (nᵢ−1)sᵢ² + nᵢ(mᵢ−m)², stable where Σx² − n·m² is not)."""
    parts = [p for p in parts if p.get("count")]
    n = sum(p["count"] for p in parts)
    if not n:
        return {"count": 0, "min": None, "mean": None, "stdev": None, "max": None}
    mean = sum(p["mean"] * p["count"] for p in parts) / n
    m2 = sum((p["count"] - 1) * (p["stdev"] or 0.0) ** 2 + p["count"] * (p["mean"] - mean) ** 2 for p in parts)
    return {"count": n, "min": min(p["min"] for p in parts), "max": max(p["max"] for p in parts), "mean": mean,
            "stdev": math.sqrt(m2 / (n - 1)) if n > 1 else None}


def _summary(parts: list[dict[str, Any] | None]) -> dict[str, Any]:
    """An ab-style phase summary (count, min, mean, stdev, median, max) of several
    engines: the moments merge; a median of medians would be made up, so it is None."""
    return {**_moments([p for p in parts if p]), "median": None}


def _per_url(docs: list[dict]) -> list[dict]:
    """The URL mix's rows, path by path (a visit's by method and path: a login posts to a
    path it also gets): counts add, latencies merge from buckets."""
    rows: dict[tuple[str | None, str], list[dict]] = {}
    for doc in docs:
        for row in doc.get("per_url") or []:
            rows.setdefault((row.get("method"), row["path"]), []).append(row)
    return [{"path": path, **({"method": method} if method else {}), "weight": same[0].get("weight"),
             "requests": _add_maps(r.get("requests") for r in same),
             "latency_us": latency([r.get("latency_us") for r in same])} for (method, path), same in rows.items()]


def _visits(docs: list[dict]) -> dict | None:
    """Visits (--journey): counts add; the rates add as the requests' do (each engine's
    over its own window); pages and requests a visit come from the added counts."""
    parts = [d["visits"] for d in docs if d.get("visits")]
    if not parts:
        return None
    out = {k: sum(p[k] for p in parts) for k in ("completed", "failed", "in_flight_at_end", "pages", "requests")}
    out["per_s"] = _sum(p.get("per_s") for p in parts)
    for per, key in (("pages_per_visit", "pages"), ("requests_per_visit", "requests")):
        out[per] = out[key] / out["completed"] if out["completed"] else None
    for key in ("due", "not_started", "started_late"):
        out[key] = _sum(p.get(key) for p in parts)
    return out


def _visit_pages(docs: list[dict]) -> list[dict]:
    """A journey's pages (and login), name by name: counts and rates add, load times merge
    from buckets."""
    rows: dict[str, list[dict]] = {}
    for doc in docs:
        for row in doc.get("visit_pages") or []:
            rows.setdefault(row["name"], []).append(row)
    return [{"name": name, "path": same[0]["path"], "login": same[0]["login"],
             "completed": sum(r["completed"] for r in same), "failed": sum(r["failed"] for r in same),
             "per_s": _sum(r.get("per_s") for r in same), "load_us": latency([r.get("load_us") for r in same])}
            for name, same in rows.items()]


def _sum(values: Iterable[Any]) -> Any:
    values = list(values)
    if all(v is None for v in values):
        return None
    return sum(v or 0 for v in values)


def _add_maps(maps: Iterable[dict | None]) -> dict:
    out: dict = {}
    for m in maps:
        for k, v in (m or {}).items():
            out[k] = _add_maps([out.get(k), v]) if isinstance(v, dict) else (out.get(k) or 0) + (v or 0)
    return out


def _timeline(docs: list[dict], shifts_s: list[int]) -> list[dict]:
    """Per second, counts added (from the earliest start, to the second); the
    per-second percentiles of several engines cannot be merged, so they are left out."""
    rows: dict[int, dict] = {}
    for doc, shift in zip(docs, shifts_s):
        for row in doc.get("timeline") or []:
            t = row["t_s"] + shift
            acc = rows.setdefault(t, {"t_s": t, "requests": 0, "errors": 0, "p50_us": None, "p99_us": None})
            acc["requests"] += row.get("requests") or 0
            acc["errors"] += row.get("errors") or 0
    return [rows[t] for t in sorted(rows)]


def _caveats(docs: list[dict]) -> tuple[list[str], list[dict]]:
    """Every engine's warnings, each once (the same code and figures from two engines
    is one fact)."""
    sentences, codes, seen = [], [], set()
    for doc in docs:
        for sentence, code in zip(doc.get("warnings") or [], doc.get("warning_codes") or []):
            key = (code["code"], repr(sorted((code.get("params") or {}).items())))
            if key not in seen:
                seen.add(key)
                sentences.append(sentence)
                codes.append(code)
    return sentences, codes


def merge(docs: list[dict[str, Any]], clients: list[dict[str, Any]]) -> dict[str, Any]:
    """One result document (schema 1's fields, merged) from the engines' documents, with
    `clients`: what each client was and did (its host, connections, clock offset, when
    it began), and `start_sync`: how far apart they began. `clients[i]["offset_us"]` is
    that client's clock minus the lab's."""
    if len(docs) == 1:  # one client (e.g. only an SSH host): its own document, told where it ran
        doc = dict(docs[0])
        start = doc.pop("start", None) or {}
        doc["clients"] = [_client(clients[0], docs[0])] if clients else []
        doc["start_sync"] = {"spread_us": 0 if start else None,
                             "clock_uncertainty_us": (clients[0].get("offset_uncertainty_us") or 0) if clients else 0}
        return doc
    began = [d["start"]["began_unix_us"] - c.get("offset_us", 0) for d, c in zip(docs, clients) if d.get("start")]
    starts = [d["started_unix_us"] - c.get("offset_us", 0) for d, c in zip(docs, clients)]
    first = docs[0]
    requests = _add_maps(d.get("requests") for d in docs)
    requests["in_flight_oldest_us"] = max((d["requests"].get("in_flight_oldest_us") or 0 for d in docs), default=0) or None
    for key in ("due", "not_sent", "sent_late"):
        requests[key] = _sum(d["requests"].get(key) for d in docs)
    pages = [d.get("pages") for d in docs]
    cpu = [d.get("engine_cpu") or {} for d in docs]
    sentences, codes = _caveats(docs)
    merged = {
        **first,
        "config": {**first["config"], "connections": sum(d["config"]["connections"] for d in docs),
                   "threads": sum(d["config"].get("threads") or 0 for d in docs),
                   "requests": _sum(d["config"].get("requests") for d in docs),
                   "rate": _sum(d["config"].get("rate") for d in docs)},
        "started_unix_us": min(starts),
        "requests": requests,
        "errors": _add_maps(d.get("errors") for d in docs),
        "status_codes": _add_maps(d.get("status_codes") for d in docs),
        "bytes": _add_maps(d.get("bytes") for d in docs),
        "connections_opened": sum(d.get("connections_opened") or 0 for d in docs),
        "duration_us": max(s + d["duration_us"] for s, d in zip(starts, docs)) - min(starts),
        "requests_per_s": _sum(d.get("requests_per_s") for d in docs),
        "bytes_per_s": _sum(d.get("bytes_per_s") for d in docs),
        "latency_us": latency([d.get("latency_us") for d in docs]),
        "latency_uncorrected_us": latency([d.get("latency_uncorrected_us") for d in docs]),
        "phases_us": {k: _summary([(d.get("phases_us") or {}).get(k) for d in docs])
                      for k in ("connect", "waiting", "processing", "total")},
        "connections_measured": sum(d.get("connections_measured") or 0 for d in docs),
        "connections_without_response": sum(d.get("connections_without_response") or 0 for d in docs),
        "header_counts": _add_maps(d.get("header_counts") for d in docs),
        "per_url": _per_url(docs),
        "pages": None if all(p is None for p in pages) else {
            "completed": sum(p["completed"] for p in pages if p), "failed": sum(p["failed"] for p in pages if p),
            "per_s": _sum(p.get("per_s") for p in pages if p)},
        "page_load_us": latency([d.get("page_load_us") for d in docs]),
        "visits": _visits(docs),
        "visit_duration_us": latency([d.get("visit_duration_us") for d in docs]),
        "visit_pages": _visit_pages(docs),
        "timeline": _timeline(docs, [round((s - min(starts)) / 1e6) for s in starts]),
        "engine_cpu": {"user_us": _sum(c.get("user_us") for c in cpu), "system_us": _sum(c.get("system_us") for c in cpu),
                       "max_thread_busy": max((c["max_thread_busy"] for c in cpu if c.get("max_thread_busy") is not None),
                                              default=None),
                       "saturated": any(c.get("saturated") for c in cpu)},
        "warnings": sentences,
        "warning_codes": codes,
        "clients": [_client(c, d) for c, d in zip(clients, docs)],
        "start_sync": {"spread_us": max(began) - min(began) if began else None,
                       "clock_uncertainty_us": max((c.get("offset_uncertainty_us") or 0 for c in clients), default=0)},
    }
    merged.pop("start", None)
    return merged


def _client(client: dict[str, Any], doc: dict[str, Any]) -> dict[str, Any]:
    lat = doc.get("latency_us") or {}
    pct = lat.get("percentiles") or {}
    start = doc.get("start") or {}
    return {**client, "connections": doc["config"]["connections"], "requests_per_s": doc.get("requests_per_s"),
            "completed": doc["requests"]["completed"], "failed": doc["requests"]["failed"],
            "latency_p50_us": pct.get("50"), "latency_p99_us": pct.get("99"),
            "late_us": start["began_unix_us"] - start["asked_unix_us"] if start else None,
            "engine_cpu": doc.get("engine_cpu"), "phases_us": doc.get("phases_us"),
            "warning_codes": doc.get("warning_codes") or []}
