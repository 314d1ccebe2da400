"""The engine's result document, parsed once into frozen, typed values named like the
schema (loadgen/schema/result-v1.schema.json). Everything downstream takes an
EngineResult; nothing else reads the JSON's keys.

Not computable is None, never 0 (STYLE.md): a run with no completed request has no
latency, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Caveat:
    """A warning as data: a stable code and the figures it is about. Sentences are made
    only by reports (report/text/caveats.py), so each fact is worded in one place."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Caveat":
        return cls(str(d["code"]), dict(d.get("params") or {}))


@dataclass(frozen=True)
class Requests:
    completed: int
    failed: int
    non_2xx: int
    # Open loop (engine >= 0.4): requests due in the measured phase, and how many of them
    # were never sent because every connection was busy. None in closed loop.
    due: int | None = None
    not_sent: int | None = None

    @property
    def attempted(self) -> int:
        return self.completed + self.failed


@dataclass(frozen=True)
class Latency:
    mean_us: float | None
    p50_us: int | None
    p99_us: int | None
    percentiles_us: dict[str, int | None]


@dataclass(frozen=True)
class Pages:
    """Page mode: page views (the page and every asset answered) and their load time,
    from the page request's start to the last byte of the last asset."""

    completed: int
    failed: int
    per_s: float | None
    load_p50_us: int | None
    load_p99_us: int | None


@dataclass(frozen=True)
class Clients:
    """Connections of the measured phase, and how many never got a response."""

    measured: int | None
    without_response: int | None


@dataclass(frozen=True)
class EngineResult:
    started_unix_us: int
    duration_us: int
    requests_per_s: float | None
    requests: Requests
    latency: Latency
    clients: Clients
    engine_cpu_us: int | None  # the engine's own user + system time
    header_counts: dict[str, dict[str, int]]
    caveats: tuple[Caveat, ...]
    raw: dict[str, Any]  # the whole document, stored as it came
    pages: Pages | None = None  # page mode only

    @property
    def ended_unix_us(self) -> int:
        return self.started_unix_us + self.duration_us

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "EngineResult":
        req = doc.get("requests") or {}
        lat = doc.get("latency_us") or {}
        pct = lat.get("percentiles") or {}
        cpu = doc.get("engine_cpu") or {}
        engine_cpu = None
        if cpu.get("user_us") is not None:
            engine_cpu = int(cpu["user_us"]) + int(cpu.get("system_us") or 0)
        return cls(
            started_unix_us=int(doc.get("started_unix_us") or 0),
            duration_us=int(doc.get("duration_us") or 0),
            requests_per_s=doc.get("requests_per_s"),
            requests=Requests(int(req.get("completed") or 0), int(req.get("failed") or 0),
                              int(req.get("non_2xx") or 0), req.get("due"), req.get("not_sent")),
            latency=Latency(lat.get("mean"), pct.get("50"), pct.get("99"), dict(pct)),
            clients=Clients(doc.get("connections_measured"), doc.get("connections_without_response")),
            engine_cpu_us=engine_cpu,
            header_counts={h: dict(v) for h, v in (doc.get("header_counts") or {}).items()},
            caveats=_caveats(doc),
            raw=doc,
            pages=_pages(doc),
        )


def _pages(doc: dict[str, Any]) -> Pages | None:
    pages = doc.get("pages")
    if not pages:
        return None
    pct = (doc.get("page_load_us") or {}).get("percentiles") or {}
    return Pages(int(pages.get("completed") or 0), int(pages.get("failed") or 0), pages.get("per_s"),
                 pct.get("50"), pct.get("99"))


def _caveats(doc: dict[str, Any]) -> tuple[Caveat, ...]:
    """The engine's warnings as codes. An engine older than `warning_codes` gave only
    sentences: those are kept verbatim under the code `engine_text`."""
    coded = doc.get("warning_codes")
    if coded is not None:
        return tuple(Caveat.from_dict(c) for c in coded)
    return tuple(Caveat("engine_text", {"text": t}) for t in doc.get("warnings") or [])
