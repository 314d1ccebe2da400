"""What a protocol costs one stack: HTTPS against clear HTTP/1.1 and HTTP/2
against HTTPS (or clear HTTP/1.1 when the plan did not ask HTTPS) on the same stack,
workload and level — "TLS costs nginx 38 % of its throughput at c=16 without
keep-alive" — and what the server spends per new TLS connection.

Protocol verdicts compare each TLS question with the clear-text one its connections
match: a kept-alive TLS cell (one handshake per connection) with clear keep-alive, a
cell with a new connection per request (resumed or full handshakes) with clear text
without keep-alive — so the difference is what TLS adds, not a change of connection
policy. The same statistics as stacks against a baseline (the run is the unit, Holm over
the family; verdicts.decide), along the protocol's axis (axes.PROTOCOL): each stack
against itself, as the way down against the way up is (ramps.py).

Server cost per handshake: the cgroup's CPU per request of a cell with a new connection
per request (resumed or full) minus that of the kept-alive cell of the same stack,
protocol, workload and level, over the new connections per request — 1 in those modes
(a kept-alive cell opens a connection per client once, which is nothing per request) —
on the medians of the valid runs. It is what one more TCP connection and its TLS
handshake cost the server, beside its CPU per request.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median
from typing import Iterable

from stackbench.analysis import axes, figures, questions, stats, verdicts
from stackbench.analysis.axes import HTTP, HTTP2, HTTPS, NEW_CONNECTION, protocol_side as side
from stackbench.model.cell import StoredCell


def decide(cells: Iterable[StoredCell], band: float = stats.DEFAULT_EQUIVALENCE) -> verdicts.Verdicts | None:
    """None when no stack was asked the same question in two protocols it can compare.

    HTTPS is compared with clear HTTP/1.1; HTTP/2 with HTTPS (HTTP/1.1 over the same TLS)
    where the plan asked both — so the line says what HTTP/2 changes, not what TLS's
    encryption costs (a 560 KB page's bytes encrypted dwarf the framing on loopback) —
    else with clear HTTP/1.1, the site a move to HTTP/2 leaves. One Holm family over
    both kinds of comparison; a side compared with nothing (its baseline was not asked
    at that question) is left out, its invalid runs too."""
    cells = questions.levels(cells)
    present: dict[axes.Group, list[str]] = {}
    for c in cells:
        sides = present.setdefault(axes.PROTOCOL.group(c), [])
        if side(c) not in sides:
            sides.append(side(c))
    taking = {g: {x for s in sides if (b := against(s, sides)) for x in (s, b)} for g, sides in present.items()}
    paired = [c for c in cells if side(c) in taking[axes.PROTOCOL.group(c)]]
    if not paired:
        return None
    return verdicts.decide(paired, HTTP, axis=axes.PROTOCOL, band=band, against=against)


def against(label: str, sides: list[str]) -> str | None:
    """What a protocol side is compared with at one question: HTTP/2 with HTTPS when that
    was asked there, every other side with clear HTTP/1.1; None when that was not asked
    (or the side is clear HTTP/1.1 itself)."""
    if label == HTTP:
        return None
    base = HTTPS if label.startswith(HTTP2) and HTTPS in sides else HTTP
    return base if base in sides else None


@dataclass(frozen=True)
class HandshakeCost:
    """One stack's CPU per new connection in one handshake mode, at one question."""

    stack_label: str
    workload: str
    level: str  # questions.Question.level(): "c=16", "500/s"
    protocol: str  # https | h2
    handshake: str  # resumed | full
    cpu_us_per_request: float | None  # median over the valid runs with a new connection per request
    keepalive_cpu_us_per_request: float | None  # … and of the kept-alive cell's
    handshake_p50_us: float | None  # the client's TLS handshake time, median over those runs
    handshake_p99_us: float | None
    runs: int  # valid runs with a new connection per request
    keepalive_runs: int

    @property
    def cpu_us_per_connection(self) -> float | None:
        """What one more connection and its handshake cost the server (new connections per
        request = 1 in these modes); None when a side has no CPU figure."""
        if self.cpu_us_per_request is None or self.keepalive_cpu_us_per_request is None:
            return None
        return self.cpu_us_per_request - self.keepalive_cpu_us_per_request


def handshake_costs(cells: Iterable[StoredCell]) -> list[HandshakeCost]:
    """Per stack, protocol, workload and level: each new-connection mode against keep-alive."""
    Where = tuple[str, str, int, float | None, str | None, str, str, str]
    by: dict[tuple[Where, str], list[figures.CellFigures]] = {}
    for c in questions.levels(cells):
        q = questions.of(c)
        if not q.tls or q.handshake is None:
            continue
        f = figures.of(c)
        if f.outcome is not None and not f.outcome.valid:
            continue
        key = (c.stack_label, q.workload, q.concurrency, q.rate, q.leg, q.network, q.background, q.protocol)
        by.setdefault((key, q.handshake), []).append(f)
    out = []
    for (where, handshake), fs in by.items():
        if handshake not in NEW_CONNECTION:
            continue
        kept = by.get((where, "keep-alive"), [])
        if not kept:
            continue
        label, workload, protocol = where[0], where[1], where[7]
        out.append(HandshakeCost(
            label, workload, fs[0].question.level(), protocol, handshake,
            _median(f.cpu_us_per_request for f in fs), _median(f.cpu_us_per_request for f in kept),
            _median(f.handshake_p50_us for f in fs), _median(f.handshake_p99_us for f in fs), len(fs), len(kept)))
    out.sort(key=lambda h: (h.workload, h.stack_label, h.level, h.protocol, NEW_CONNECTION.index(h.handshake)))
    return out


def _median(values: Iterable[float | None]) -> float | None:
    known = [float(v) for v in values if v is not None]
    return median(known) if known else None
