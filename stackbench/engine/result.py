"""The engine's result document, parsed once into frozen, typed values named like the
schema (loadgen/schema/result-v1.schema.json) — on both sides of the store: when the
engine answers (engine/process.py, hosts/clients.py) and when a stored cell is read back
(store/rows.py). Everything downstream takes an EngineResult; nothing else reads the
JSON's keys (engine/merge.py, which adds several engines' documents into one, aside).
A figure older engines did not report is None (or empty) here, so old stores read.

Not computable is None, never 0 (hyperfine's Option for a standard deviation): a run with no completed request has no
latency, and says so.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

# A caveat's typed figures (caveat_facts.py), re-exported: readers take them from here.
from stackbench.engine.caveat_facts import (
    CAVEAT_FACTS, CaveatFacts, CacheHits, ClientsUnserved, CoresShared, CpuSteal, EngineSaturated, EngineText,
    InFlightOld, IoFallback, LatencyOverRange, MemoryLimit, Non2xx, NoRequests, NoResponseAll, NotSteady, OomKilled,
    RateNotReached, RateTimerResolution, RequestsFailed, ServerClosedKeepalive, ServerLimit, ShortRun,
    TargetDown, Text, facts_of)


__all__ = ['CAVEAT_FACTS', 'CaveatFacts', 'CacheHits', 'ClientsUnserved', 'CoresShared', 'CpuSteal', 'EngineSaturated', 'EngineText', 'InFlightOld', 'IoFallback', 'LatencyOverRange', 'MemoryLimit', 'Non2xx', 'NoRequests', 'NoResponseAll', 'NotSteady', 'OomKilled', 'RateNotReached', 'RateTimerResolution', 'RequestsFailed', 'ServerClosedKeepalive', 'ServerLimit', 'ShortRun', 'TargetDown', 'Text',
           'Caveat', 'EngineResult', 'Progress', 'Visits', 'VisitPage']

@dataclass(frozen=True)
class Caveat:
    """A warning as data: a stable code and the figures it is about. Sentences are made
    only by reports (report/words/caveats.py), so each fact is worded in one place.

    `params` is the caveat as stored (the store and export write it as it came); `facts`
    the same figures typed by the code (CAVEAT_FACTS), parsed here once, which every reader
    takes by attribute. A code this version does not know has facts None."""

    code: str
    params: dict[str, Any] = field(default_factory=dict)
    facts: CaveatFacts | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "facts", facts_of(self.code, self.params))

    @classmethod
    def of(cls, facts: CaveatFacts) -> "Caveat":
        """A caveat made from its figures (the lab's own, caveats.py): its params are the
        facts' fields by name, as the parser reads them back."""
        return cls(facts.CODE, {f.name: getattr(facts, f.name) for f in fields(facts)})

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "params": self.params}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Caveat":
        return cls(str(d["code"]), dict(d.get("params") or {}))


@dataclass(frozen=True)
class Progress:
    """The engine's live figures (`--progress`: a JSON line on stderr about once a second,
    loadgen/README.md "Progress"), parsed as engine/process.py reads each line and never
    stored: the phase ("warmup", "measure"; the lab's "profile" for the system-call pass,
    runner/cell.py) and its counts so far."""

    phase: str = ""
    elapsed_s: float = 0.0
    completed: int = 0
    failed: int = 0
    non_2xx: int = 0
    per_s: float = 0.0

    @classmethod
    def from_line(cls, d: dict[str, Any]) -> "Progress":
        """One line's `progress` object; a count it lacks is 0."""
        return cls(str(d.get("phase") or ""), float(d.get("elapsed_s") or 0), int(d.get("completed") or 0),
                   int(d.get("failed") or 0), int(d.get("non_2xx") or 0), float(d.get("per_s") or 0))


@dataclass(frozen=True)
class Requests:
    completed: int
    failed: int
    non_2xx: int
    # Open loop (engine >= 0.4): requests due in the measured phase, and how many of them
    # were never sent because every connection was busy. None in closed loop.
    due: int | None = None
    not_sent: int | None = None
    # Whole run only (engine >= 0.2): requests still unanswered when the measured phase
    # ended, and the age of the oldest of them (None: nothing in flight, or not reported).
    in_flight_at_end: int | None = None
    in_flight_oldest_us: int | None = None

    @property
    def attempted(self) -> int:
        return self.completed + self.failed

    @classmethod
    def from_doc(cls, req: dict[str, Any]) -> "Requests":
        return cls(int(req.get("completed") or 0), int(req.get("failed") or 0), int(req.get("non_2xx") or 0),
                   req.get("due"), req.get("not_sent"), req.get("in_flight_at_end"), req.get("in_flight_oldest_us"))


@dataclass(frozen=True)
class Errors:
    """Failed requests by class; a request counts in exactly one. The classes added after
    the first engine are None when an older one did not report them."""

    connect: int = 0
    timeout: int = 0
    reset: int = 0
    read: int = 0
    write: int = 0
    parse: int = 0
    length_mismatch: int = 0
    too_large: int | None = None  # engine >= 0.5: a response over one of the engine's bounds
    rejected: int | None = None
    # Over TLS and HTTP/2 (None from engines without them): the handshake failed
    # (the alert in the details), the server's certificate was not the one trusted or
    # pinned, the server sent GOAWAY, or reset a stream (by error code in the details).
    tls_handshake: int | None = None
    tls_untrusted: int | None = None
    h2_goaway: int | None = None
    h2_rst_stream: int | None = None
    # What the engine says of a class beyond its count (`error_details`: a TLS alert, why a
    # certificate was refused, an HTTP/2 error code): {class: {detail: requests}}. Not a
    # count of its own.
    details: dict[str, dict[str, int]] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return sum(getattr(self, f) or 0 for f in self.__dataclass_fields__ if f != "details")

    @classmethod
    def from_doc(cls, d: dict[str, Any], details: dict[str, Any] | None = None) -> "Errors":
        counts = {k: v for k, v in d.items() if k in cls.__dataclass_fields__ and k != "details"}
        return cls(**counts, details={k: dict(v) for k, v in (details or {}).items()})


@dataclass(frozen=True)
class Latency:
    """An HdrHistogram's distribution, µs. `percentiles_us` is the engine's whole table,
    by the percentile as it names it ("50", "99.9", "100"); None: nothing completed."""

    mean_us: float | None
    p50_us: int | None
    p99_us: int | None
    percentiles_us: dict[str, int | None]

    def percentile_us(self, percentile: str) -> int | None:
        value = self.percentiles_us.get(percentile)
        return None if value is None else int(value)

    @classmethod
    def from_doc(cls, lat: dict[str, Any] | None) -> "Latency":
        lat = lat or {}
        pct = lat.get("percentiles") or {}
        return cls(_real(lat.get("mean")), pct.get("50"), pct.get("99"), dict(pct))


@dataclass(frozen=True)
class Pages:
    """Page mode: page views (the page and every asset answered) and their load time,
    from the page request's start to the last byte of the last asset."""

    completed: int
    failed: int
    per_s: float | None
    load_p50_us: int | None
    load_p99_us: int | None
    load: Latency | None = None  # the whole distribution of page load times


@dataclass(frozen=True)
class VisitPage:
    """One page of a journey (or its login), every view of it: views complete and failed,
    and the load time of the complete ones (the login: from its first request to its last
    response, redirects included)."""

    name: str
    path: str
    login: bool
    completed: int
    failed: int
    per_s: float | None
    load: Latency


@dataclass(frozen=True)
class Visits:
    """Visits (`--journey`, engine >= 0.13): a visitor's pages, assets, think times, cookie
    jar and login. A visit counts if it was due (begun) in the measured phase; complete when
    every request of it got a full response, failed when one did not (the visitor left),
    in flight when the run ended during it. `pages` and `requests` are those of the
    complete visits, so `requests_per_visit` is the hits a visit costs. Open loop (`rate`
    visits a second): `due`, `not_started` (no visitor slot free before the end) and
    `started_late`; None in closed loop. `duration`: from each complete visit's intended
    start to its last byte, think times included."""

    completed: int
    failed: int
    in_flight_at_end: int
    per_s: float | None
    pages: int
    requests: int
    pages_per_visit: float | None
    requests_per_visit: float | None
    due: int | None
    not_started: int | None
    started_late: int | None
    duration: Latency
    per_page: tuple[VisitPage, ...] = ()
    # The pages a visit of the journey asked is expected to view (`_expected_pages`): what
    # an open loop's visits are due to ask of the server, whatever the server does (None:
    # no journey in the document's config)
    expected_pages: float | None = None

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "Visits | None":
        v = doc.get("visits")
        if not v:
            return None
        per_page = tuple(VisitPage(str(p["name"]), str(p["path"]), bool(p.get("login")), int(p.get("completed") or 0),
                                   int(p.get("failed") or 0), _real(p.get("per_s")), Latency.from_doc(p.get("load_us")))
                         for p in doc.get("visit_pages") or ())
        return cls(int(v.get("completed") or 0), int(v.get("failed") or 0), int(v.get("in_flight_at_end") or 0),
                   _real(v.get("per_s")), int(v.get("pages") or 0), int(v.get("requests") or 0),
                   _real(v.get("pages_per_visit")), _real(v.get("requests_per_visit")), v.get("due"),
                   v.get("not_started"), v.get("started_late"), Latency.from_doc(doc.get("visit_duration_us")),
                   per_page, _expected_pages((doc.get("config") or {}).get("journey")))


def _expected_pages(journey: Any) -> float | None:
    """Pages a visit of `journey` (the engine's config, loadgen/README.md "Visits") is
    expected to view: each step's share of page options by weight (a choice's exit ends
    the visit), times the share of visits still there."""
    if not isinstance(journey, dict) or not journey.get("steps"):
        return None
    still, pages = 1.0, 0.0
    for step in journey["steps"]:
        options = step.get("choice") or [step]
        total = sum(int(o.get("weight") or 1) for o in options)
        share = sum(int(o.get("weight") or 1) for o in options if not o.get("exit")) / total
        pages += still * share
        still *= share
    return pages


@dataclass(frozen=True)
class Clients:
    """Connections of the measured phase, and how many never got a response."""

    measured: int | None
    without_response: int | None


@dataclass(frozen=True)
class UrlResult:
    """One URL of a mix (weight) or of a page (the page, then its assets; no weight)."""

    path: str | None
    weight: int | None
    requests: Requests
    latency: Latency


@dataclass(frozen=True)
class Second:
    """One whole or partial second of the measured phase, from its start. A merged
    result (several clients) adds the counts and has no percentiles (None)."""

    t_s: int
    requests: int
    errors: int
    p50_us: int | None
    p99_us: int | None


@dataclass(frozen=True)
class ClientShare:
    """One client's share of a load spread over several (engine/merge.py): where it ran,
    its clock against the lab's, and what it did."""

    host: str
    completed: int
    failed: int
    offset_us: int | None  # its clock minus the lab's (SSH hosts)
    offset_uncertainty_us: int | None
    cpus: int | None


@dataclass(frozen=True)
class StartSync:
    """How far apart the clients of a merged result began, on the lab's clock."""

    spread_us: int | None
    clock_uncertainty_us: int  # ± this on the spread (the offsets' uncertainty)


@dataclass(frozen=True)
class Negotiated:
    """What a set of the engine's TLS connections agreed with the server: the protocol
    ALPN chose (None: the server chose none), TLS version, cipher suite, key-exchange
    group — and how many connections agreed on exactly that."""

    alpn: str | None
    version: str | None
    cipher: str | None
    group: str | None
    connections: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "Negotiated":
        """One tuple as the engine writes it, or as a stack read it back when verified
        (stacks/lifecycle.py: no connection count there)."""
        return cls(d.get("alpn"), d.get("version"), d.get("cipher"), d.get("group"), int(d.get("connections") or 0))


@dataclass(frozen=True)
class Tls:
    """The TLS side of a run (https targets): handshakes done in full and resumed (with a
    session ticket), each connection's TCP connect and TLS handshake times, and what was
    negotiated, by distinct tuple (most connections first)."""

    full: int
    resumed: int
    connect: Latency
    handshake: Latency
    negotiated: tuple[Negotiated, ...]

    @property
    def handshakes(self) -> int:
        return self.full + self.resumed

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> "Tls":
        hs = d.get("handshakes") or {}
        found = [Negotiated.from_dict(n) for n in d.get("negotiated") or ()]
        return cls(int(hs.get("full") or 0), int(hs.get("resumed") or 0), Latency.from_doc(d.get("connect_us")),
                   Latency.from_doc(d.get("handshake_us")), tuple(sorted(found, key=lambda n: -n.connections)))


@dataclass(frozen=True)
class Asked:
    """What the engine was asked to do (its document's `config`): the window, a request
    count, and the deadline after which a request fails (timeout). None where the engine
    was not asked for it, or did not say."""

    duration_us: int | None = None
    requests: int | None = None
    timeout_us: int | None = None

    @classmethod
    def from_doc(cls, config: dict[str, Any] | None) -> "Asked":
        c = config or {}
        return cls(c.get("duration_us"), c.get("requests"), c.get("timeout_us"))


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
    pages: Pages | None = None  # page mode, and every page view of a run of visits
    visits: Visits | None = None  # visits (--journey) only
    # An engine thread was busy >= 90 % of the time: the result may measure the client.
    # None: not reported.
    engine_saturated: bool | None = None
    # The busiest engine thread's CPU over the measured phase as a share of one core
    # (0..1; several clients: the busiest of all) — how close the generator came to its
    # limit. None: not reported (an engine that could not sample its threads).
    engine_busy: float | None = None
    per_url: tuple[UrlResult, ...] = ()  # a URL mix or a page's URLs; () for one URL
    timeline: tuple[Second, ...] = ()
    # A load spread over clients (engine/merge.py): each one's share, and how far apart
    # they began. () and None for a result of one local engine.
    client_shares: tuple[ClientShare, ...] = ()
    start_sync: StartSync | None = None
    errors: Errors | None = None  # failed requests by class (None: not reported)
    # What was spoken: "http/1.1", "h2", or "mixed" (some connections each); None from an
    # engine without TLS and HTTP/2, which spoke HTTP/1.1 only.
    protocol: str | None = None
    tls: Tls | None = None  # https targets only
    asked: Asked = field(default_factory=Asked)

    @property
    def ended_unix_us(self) -> int:
        return self.started_unix_us + self.duration_us

    @property
    def count_ended(self) -> bool:
        """The window ended when the last of the requests asked (`-n`) ended — at a
        response or a failure, so its length moves with the stack's speed — not at a
        fixed time: its throughput (count / length) moves in no step of one response."""
        asked = self.asked.requests
        if asked is None:
            return False
        if self.visits is not None:  # visits count visits (-n)
            return self.visits.completed + self.visits.failed >= asked
        if self.pages is not None:  # page mode counts pages (a page and its assets)
            return self.pages.completed + self.pages.failed >= asked
        return self.requests.attempted >= asked

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> "EngineResult":
        """The document, parsed once. A visit's login is answered with a redirect its
        journey follows, as a browser does; the engine counts those answers among the
        non-2xx ones, and here they are taken out of `requests.non_2xx` and the non_2xx
        caveat (`_login_redirects`): expected answers, not errors (the document is kept
        as it came)."""
        cpu = doc.get("engine_cpu") or {}
        redirects = _login_redirects(doc)
        engine_cpu = None
        if cpu.get("user_us") is not None:
            engine_cpu = int(cpu["user_us"]) + int(cpu.get("system_us") or 0)
        return cls(
            started_unix_us=int(doc.get("started_unix_us") or 0),
            duration_us=int(doc.get("duration_us") or 0),
            requests_per_s=_real(doc.get("requests_per_s")),
            requests=_less_non_2xx(Requests.from_doc(doc.get("requests") or {}), redirects),
            latency=Latency.from_doc(doc.get("latency_us")),
            clients=Clients(doc.get("connections_measured"), doc.get("connections_without_response")),
            engine_cpu_us=engine_cpu,
            header_counts={h: dict(v) for h, v in (doc.get("header_counts") or {}).items()},
            caveats=_less_redirects(_caveats(doc), redirects, int((doc.get("requests") or {}).get("completed") or 0)),
            raw=doc,
            pages=_pages(doc),
            visits=Visits.from_doc(doc),
            engine_saturated=None if cpu.get("saturated") is None else bool(cpu["saturated"]),
            engine_busy=_real(cpu.get("max_thread_busy")),
            per_url=tuple(UrlResult(u.get("path"), u.get("weight"), Requests.from_doc(u.get("requests") or {}),
                                    Latency.from_doc(u.get("latency_us")))
                          for u in doc.get("per_url") or ()),
            timeline=tuple(Second(s["t_s"], s["requests"], s["errors"], s["p50_us"], s["p99_us"])
                           for s in doc.get("timeline") or ()),
            client_shares=tuple(_client(c) for c in doc.get("clients") or ()),
            start_sync=_start_sync(doc.get("start_sync")),
            errors=Errors.from_doc(doc["errors"], doc.get("error_details")) if doc.get("errors") is not None else None,
            protocol=doc.get("protocol"),
            tls=Tls.from_doc(doc["tls"]) if doc.get("tls") else None,
            asked=Asked.from_doc(doc.get("config")),
        )


def _pages(doc: dict[str, Any]) -> Pages | None:
    pages = doc.get("pages")
    if not pages:
        return None
    load = Latency.from_doc(doc.get("page_load_us"))
    return Pages(int(pages.get("completed") or 0), int(pages.get("failed") or 0), _real(pages.get("per_s")),
                 load.p50_us, load.p99_us, load)


def _real(value: float | None) -> float | None:
    """A rate or a mean as a float whatever the JSON wrote (1234 or 1234.0): the same
    value the store's REAL column gives back."""
    return None if value is None else float(value)


def _client(c: dict[str, Any]) -> ClientShare:
    return ClientShare(c["host"], c.get("completed") or 0, c.get("failed") or 0, c.get("offset_us"),
                       c.get("offset_uncertainty_us"), c.get("cpus"))


def _start_sync(sync: dict[str, Any] | None) -> StartSync | None:
    if sync is None:
        return None
    return StartSync(sync.get("spread_us"), sync.get("clock_uncertainty_us") or 0)


def _login_redirects(doc: dict[str, Any]) -> int:
    """The measured answers that were a visit's login redirecting its visitor (a 3xx to
    the login's post, which the journey follows): the posts to a login's path answered
    outside 2xx, at most the document's 3xx answers and its non-2xx ones; 0 without a
    login."""
    logins = {r.get("path") for r in doc.get("visit_pages") or () if r.get("login")}
    if not logins:
        return 0
    posted = sum(int((u.get("requests") or {}).get("non_2xx") or 0) for u in doc.get("per_url") or ()
                 if u.get("method") == "POST" and u.get("path") in logins)
    redirects = sum(int(n or 0) for status, n in (doc.get("status_codes") or {}).items() if str(status)[:1] == "3")
    return max(0, min(posted, redirects, int((doc.get("requests") or {}).get("non_2xx") or 0)))


def _less_non_2xx(requests: Requests, redirects: int) -> Requests:
    return replace(requests, non_2xx=requests.non_2xx - redirects) if redirects else requests


def _less_redirects(found: tuple[Caveat, ...], redirects: int, completed: int) -> tuple[Caveat, ...]:
    """The engine's non_2xx caveat without a visit's login redirects: gone when they were
    all of it, else with the rest's count and share."""
    if not redirects:
        return found
    out = []
    for c in found:
        if c.code == Non2xx.CODE and isinstance(c.params.get("count"), int):
            rest = c.params["count"] - redirects
            if rest <= 0:
                continue
            c = Caveat(c.code, {**c.params, "count": rest, "share": rest / completed if completed else None})
        out.append(c)
    return tuple(out)


def _caveats(doc: dict[str, Any]) -> tuple[Caveat, ...]:
    """The engine's warnings as codes. An engine older than `warning_codes` gave only
    sentences: those are kept verbatim under the code `engine_text`."""
    coded = doc.get("warning_codes")
    if coded is not None:
        return tuple(Caveat.from_dict(c) for c in coded)
    return tuple(Caveat.of(EngineText(t)) for t in doc.get("warnings") or [])
