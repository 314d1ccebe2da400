"""The protocols a plan can ask a stack for, and its TLS keys.

`protocol = ["http/1.1", "https", "h2"]` is a sweep axis like `keepalive`: "http/1.1" is
clear text (the default, "http" is read as it), "https" HTTP/1.1 over TLS, "h2" HTTP/2
over TLS (the engine offers ALPN h2 and http/1.1: a server that picks http/1.1 — Apache
prefork — is a result, not an error). A table, not ifs: HTTP/3 will be a row (QUIC).

`tls = { handshake = [...], certificate = "ecdsa" | "rsa", tickets = true }`: for a
TLS cell the handshake mode takes the place of `keepalive` — keep-alive is one handshake
per connection, kept; resumed and full open a new connection per request (resuming with
a session ticket, or not at all). So a TLS cell is asked once per handshake mode and a
clear-text cell once per keep-alive mode, and no cell is asked twice.

`streams = N`: concurrent HTTP/2 streams per connection (h2load's -m); requests in
flight are connections × streams. Parsing only: the runner turns it into the engine's
flags and the stack's TlsOptions.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

Fail = Callable[[str], Exception]


@dataclass(frozen=True)
class Protocol:
    name: str  # as a plan writes it, and as the store keeps it
    tls: bool  # over TLS: the stack's TLS port, the run's certificate, a handshake mode
    http2: bool  # the engine offers ALPN h2 (speaking HTTP/1.1 where the server picks it)
    # HTTP/2 keeps its connections (its streams are the concurrency): asked only with the
    # keep-alive handshake, never with a new connection per request.
    keeps_connections: bool
    words: str  # in a sentence


CLEAR = "http/1.1"
PROTOCOLS: dict[str, Protocol] = {p.name: p for p in (
    Protocol(CLEAR, False, False, False, "HTTP/1.1 in clear text"),
    Protocol("https", True, False, False, "HTTP/1.1 over TLS"),
    Protocol("h2", True, True, True, "HTTP/2 over TLS"),
)}
ALIASES = {"http": CLEAR}  # a plan that writes protocol = ["http", "https"] means clear text
# Named by the issue, not measured yet: refused with why, not as an unknown word.
LATER = {"h3": "HTTP/3 (QUIC) is not measured yet (the next step after HTTPS and HTTP/2)"}

HANDSHAKES = ("keep-alive", "resumed", "full")
KEEP_ALIVE = "keep-alive"
CERTIFICATES = ("ecdsa", "rsa")  # ECDSA P-256 by default; RSA 2048, whose signature is a full handshake's cost
TLS_KEYS = {"handshake", "certificate", "tickets"}
MAX_STREAMS = 1000  # far above the 100-128 streams servers allow by default (nginx, h2o)


@dataclass(frozen=True)
class TlsPlan:
    """The plan's `tls` table, defaults resolved."""

    handshake: tuple[str, ...] = (KEEP_ALIVE,)
    certificate: str = "ecdsa"
    tickets: bool = True


@dataclass(frozen=True)
class Protocols:
    """What the plan asks for: the protocols in the order written, the TLS table (None:
    no TLS cell), HTTP/2 streams per connection."""

    names: tuple[str, ...] = (CLEAR,)
    tls: TlsPlan | None = None
    streams: int = 1

    @property
    def uses_tls(self) -> bool:
        return any(PROTOCOLS[p].tls for p in self.names)

    def modes(self, keepalive: list[bool]) -> list[tuple[str, str | None, bool]]:
        """Every (protocol, handshake, keep-alive) a question is asked in, protocols in
        the plan's order: clear text once per keep-alive mode (no handshake), TLS once per
        handshake mode (keep-alive on only with the keep-alive handshake; HTTP/2 with that
        one alone)."""
        out: list[tuple[str, str | None, bool]] = []
        for name in self.names:
            p = PROTOCOLS[name]
            if p.tls:
                out += [(name, h, h == KEEP_ALIVE) for h in (self.tls or TlsPlan()).handshake
                        if h == KEEP_ALIVE or not p.keeps_connections]
            else:
                out += [(name, None, ka) for ka in keepalive]
        return out


def mode_words(protocol: str, handshake: str | None, keepalive: bool) -> str:
    """"keep-alive", "no keep-alive", "https keep-alive", "h2 full handshakes"."""
    if protocol == CLEAR or not handshake:
        return "keep-alive" if keepalive else "no keep-alive"
    return f"{protocol} {handshake}" + (" handshakes" if handshake != KEEP_ALIVE else "")


def parse(data: dict[str, Any], fail: Fail) -> Protocols:
    """The plan's `protocol`, `tls` and `streams` keys, each checked with one line."""
    raw = data.get("protocol", [CLEAR])
    raw = raw if isinstance(raw, list) else [raw]
    if not raw:
        raise fail("protocol must not be empty (e.g. protocol = [\"http/1.1\", \"https\", \"h2\"])")
    names: list[str] = []
    for p in raw:
        if not isinstance(p, str):
            raise fail(f"protocol takes names such as \"https\", not {p!r}")
        name = ALIASES.get(p.lower(), p.lower())
        if name in LATER:
            raise fail(f"protocol {p!r}: {LATER[name]}; use {', '.join(PROTOCOLS)}")
        if name not in PROTOCOLS:
            close = difflib.get_close_matches(name, list(PROTOCOLS) + list(ALIASES), n=1)
            raise fail(f"unknown protocol {p!r}" + (f" (did you mean {close[0]!r}?)" if close else "")
                       + f"; one of {', '.join(PROTOCOLS)}")
        if name in names:
            raise fail(f"protocol {p!r} is listed twice")
        names.append(name)
    uses_tls = any(PROTOCOLS[n].tls for n in names)
    # keepalive = [true] says nothing a TLS cell's handshake does not (a scenario's quick
    # form may keep its full form's clear-text key); turning it off would.
    if "keepalive" in data and CLEAR not in names and data["keepalive"] not in (True, [True]):
        raise fail("keepalive is for clear-text cells and this plan has none: a TLS cell's connections follow "
                   "tls.handshake (keep-alive, resumed, full)")
    tls = _tls(data, uses_tls, fail)
    if tls is not None and KEEP_ALIVE not in tls.handshake and any(PROTOCOLS[n].keeps_connections for n in names):
        raise fail("HTTP/2 keeps its connections, so \"h2\" cells are asked with the keep-alive handshake only: "
                   "add \"keep-alive\" to tls.handshake (resumed and full are asked of \"https\")")
    unasked = [h for h in (tls.handshake if tls else ()) if h != KEEP_ALIVE]
    if unasked and not any(PROTOCOLS[n].tls and not PROTOCOLS[n].keeps_connections for n in names):
        raise fail(f"tls.handshake {unasked[0]!r} opens a connection per request, which only \"https\" cells do "
                   "(HTTP/2 keeps its connections): add \"https\" to protocol, or leave it out")
    streams = data.get("streams", 1)
    if "streams" in data:
        if "h2" not in names:
            raise fail("streams is read only for HTTP/2: add \"h2\" to protocol, or leave streams out")
        if not isinstance(streams, int) or isinstance(streams, bool) or not 1 <= streams <= MAX_STREAMS:
            raise fail(f"streams must be a whole number from 1 to {MAX_STREAMS}, not {streams!r}")
    return Protocols(tuple(names), tls, streams)


def _tls(data: dict[str, Any], uses_tls: bool, fail: Fail) -> TlsPlan | None:
    table = data.get("tls")
    if table is None:
        return TlsPlan() if uses_tls else None
    if not isinstance(table, dict):
        raise fail("tls must be a table, e.g. tls = { handshake = [\"keep-alive\", \"full\"] }")
    if not uses_tls:
        raise fail("a tls table is given but protocol asks for no TLS: add \"https\" or \"h2\" to protocol")
    for key in table:
        if key not in TLS_KEYS:
            close = difflib.get_close_matches(key, sorted(TLS_KEYS), n=1)
            raise fail(f"unknown key tls.{key!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
    hs = table.get("handshake", [KEEP_ALIVE])
    hs = hs if isinstance(hs, list) else [hs]
    if not hs:
        raise fail("tls.handshake must not be empty")
    for h in hs:
        if h not in HANDSHAKES:
            raise fail(f"tls.handshake takes {', '.join(HANDSHAKES)}, not {h!r}")
    if len(set(hs)) < len(hs):
        raise fail("tls.handshake lists a mode twice")
    cert = table.get("certificate", "ecdsa")
    if cert not in CERTIFICATES:
        raise fail(f"tls.certificate must be one of {', '.join(CERTIFICATES)}, not {cert!r}")
    tickets = table.get("tickets", True)
    if not isinstance(tickets, bool):
        raise fail(f"tls.tickets takes true or false, not {tickets!r}")
    if "resumed" in hs and not tickets:
        raise fail("tls.handshake \"resumed\" resumes with a session ticket: it needs tls.tickets = true")
    return TlsPlan(tuple(hs), cert, tickets)
