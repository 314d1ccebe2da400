"""A caveat's figures, typed by its code: one frozen class per code, parsed once when a
Caveat is made (engine/result.py), so every reader takes them by attribute."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any, ClassVar, TypeAlias, Union, get_args


# -- a caveat's figures, typed by its code --------------------------------------------------
# One class per code, its fields named as the code's params: the engine's codes are the
# schema's warning_codes (loadgen/README.md), the lab's own are made in caveats.py — here
# too, beside the engine's, because a stored caveat of either is read back through this one
# parser (store/rows.py). A param its writer left out (an older engine, a caveat stored
# before the param was added) is None.

# -- from the load engine
@dataclass(frozen=True)
class NoResponseAll:
    CODE: ClassVar[str] = "no_response_all"
    connections: int | None = None


@dataclass(frozen=True)
class ClientsUnserved:
    CODE: ClassVar[str] = "clients_unserved"
    without_response: int | None = None
    connections: int | None = None


@dataclass(frozen=True)
class InFlightOld:
    CODE: ClassVar[str] = "in_flight_old"
    count: int | None = None
    threshold_us: int | None = None
    oldest_us: int | None = None
    slowest_us: int | None = None


@dataclass(frozen=True)
class TargetDown:
    CODE: ClassVar[str] = "target_down"
    connect_errors: int | None = None


@dataclass(frozen=True)
class EngineSaturated:
    CODE: ClassVar[str] = "engine_saturated"
    thread: int | None = None
    busy: float | None = None


@dataclass(frozen=True)
class NoRequests:
    CODE: ClassVar[str] = "no_requests"


@dataclass(frozen=True)
class RequestsFailed:
    CODE: ClassVar[str] = "requests_failed"
    share: float | None = None
    failed: int | None = None
    attempted: int | None = None
    errors: dict[str, int] | None = None  # by error class


@dataclass(frozen=True)
class ServerClosedKeepalive:
    CODE: ClassVar[str] = "server_closed_keepalive"
    connections_opened: int | None = None
    responses: int | None = None


@dataclass(frozen=True)
class Non2xx:
    CODE: ClassVar[str] = "non_2xx"
    count: int | None = None
    share: float | None = None


@dataclass(frozen=True)
class LatencyOverRange:
    CODE: ClassVar[str] = "latency_over_range"
    count: int | None = None
    range_s: int | None = None


@dataclass(frozen=True)
class RateTimerResolution:
    CODE: ClassVar[str] = "rate_timer_resolution"
    connections: int | None = None
    rate: float | None = None
    min_connections: int | None = None


@dataclass(frozen=True)
class RateNotReached:
    CODE: ClassVar[str] = "rate_not_reached"
    sent_per_s: float | None = None
    rate: float | None = None
    connections: int | None = None
    due: int | None = None  # engine >= 0.4
    not_sent: int | None = None  # engine >= 0.4
    # Engine >= 0.13: "visits" when the open loop was of visits (--journey): the rates are
    # visits begun a second, `due` and `not_sent` visits, `connections` visitor slots.
    of: str | None = None


@dataclass(frozen=True)
class ShortRun:
    CODE: ClassVar[str] = "short_run"
    duration_us: int | None = None


@dataclass(frozen=True)
class IoFallback:
    CODE: ClassVar[str] = "io_fallback"
    asked: str | None = None
    used: str | None = None
    reason: str | None = None


# -- from the lab (caveats.py)
@dataclass(frozen=True)
class CacheHits:
    CODE: ClassVar[str] = "cache_hits"
    header: str | None = None
    share: float | None = None


@dataclass(frozen=True)
class CoresShared:
    CODE: ClassVar[str] = "cores_shared"


@dataclass(frozen=True)
class CpuSteal:
    CODE: ClassVar[str] = "cpu_steal"
    share: float | None = None


@dataclass(frozen=True)
class ServerLimit:
    CODE: ClassVar[str] = "server_limit"
    server: str | None = None
    setting: str | None = None
    knob: str | None = None
    value: int | None = None
    connections: int | None = None


@dataclass(frozen=True)
class OomKilled:
    CODE: ClassVar[str] = "oom_killed"
    count: int | None = None  # processes killed in the measured window
    before: int | None = None  # … before it (stack start, warm-up)
    after: int | None = None  # … after it (the system-call pass)
    limit_bytes: int | None = None


@dataclass(frozen=True)
class MemoryLimit:
    CODE: ClassVar[str] = "memory_limit"
    hits: int | None = None
    limit_bytes: int | None = None
    stall_us: int | None = None


@dataclass(frozen=True)
class NotSteady:
    CODE: ClassVar[str] = "not_steady"
    seconds: float | None = None  # the warm-up's load, up to its cap
    cap_s: float | None = None
    tolerance: float | None = None
    change: float | None = None  # its last windows' throughput against the ones before (+0.2: 20 % higher)


# -- sentences without a code: stored before caveats had codes (store v3), and an older
# engine's (before warning_codes)
@dataclass(frozen=True)
class Text:
    CODE: ClassVar[str] = "text"
    text: str | None = None


@dataclass(frozen=True)
class EngineText(Text):
    CODE: ClassVar[str] = "engine_text"


CaveatFacts: TypeAlias = Union[
    NoResponseAll, ClientsUnserved, InFlightOld, TargetDown, EngineSaturated, NoRequests, RequestsFailed,
    ServerClosedKeepalive, Non2xx, LatencyOverRange, RateTimerResolution, RateNotReached, ShortRun, IoFallback,
    CacheHits, CoresShared, CpuSteal, ServerLimit, OomKilled, MemoryLimit, NotSteady, Text, EngineText]

# Each known code's facts class.
CAVEAT_FACTS: dict[str, type[CaveatFacts]] = {kind.CODE: kind for kind in get_args(CaveatFacts)}


def facts_of(code: str, params: dict[str, Any]) -> CaveatFacts | None:
    """The typed facts of a caveat's params; None for a code this version does not know."""
    kind = CAVEAT_FACTS.get(code)
    if kind is None:
        return None
    return kind(**{f.name: params.get(f.name) for f in fields(kind)})
