"""What a protocol costs one stack: HTTPS against clear HTTP/1.1 and HTTP/2
against HTTPS (or clear HTTP/1.1 when the plan did not ask HTTPS) on the same stack,
workload and level — "TLS costs nginx 38 % of its throughput at c=16 without
keep-alive" — and what the server spends per new TLS connection.

Protocol verdicts compare each TLS question with the clear-text one its connections
match: a kept-alive TLS cell (one handshake per connection) with clear keep-alive, a
cell with a new connection per request (resumed or full handshakes) with clear text
without keep-alive — so the difference is what TLS adds, not a change of connection
policy. The same statistics as stacks against a baseline (the run is the unit, Holm over
the family; verdicts.decide), each stack against itself, as the way down against the
way up is (ramps.py).

Server cost per handshake: the cgroup's CPU per request of a cell with a new connection
per request (resumed or full) minus that of the kept-alive cell of the same stack,
protocol, workload and level, over the new connections per request — 1 in those modes
(a kept-alive cell opens a connection per client once, which is nothing per request) —
on the medians of the valid runs. It is what one more TCP connection and its TLS
handshake cost the server, beside its CPU per request.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median
from typing import Iterable

from stackbench.analysis import figures, questions, stats, verdicts
from stackbench.model.cell import StoredCell

HTTP = "HTTP"  # the baseline side: clear HTTP/1.1
NAMES = {"https": "HTTPS", "h2": "HTTP/2"}
NEW_CONNECTION = ("resumed", "full")  # handshake modes that open a connection per request


def side(cell: StoredCell) -> str:
    """A cell's side in words: "HTTP", "HTTPS", "HTTPS full handshakes", "HTTP/2",
    "HTTP/2 → http/1.1" (asked HTTP/2, spoke HTTP/1.1: a result, shown as such)."""
    if not questions.of(cell).tls:
        return HTTP
    label = questions.spoken_label(cell)
    name = NAMES.get(cell.protocol, cell.protocol) + (label[label.index(" →"):] if "→" in label else "")
    if cell.handshake in NEW_CONNECTION:
        name += f" {cell.handshake} handshakes"
    return name


def decide(cells: Iterable[StoredCell], band: float = stats.DEFAULT_EQUIVALENCE) -> verdicts.Verdicts | None:
    """None when no stack was asked the same question in two protocols it can compare.

    HTTPS is compared with clear HTTP/1.1; HTTP/2 with HTTPS (HTTP/1.1 over the same TLS)
    where the plan asked both — so the line says what HTTP/2 changes, not what TLS's
    encryption costs (a 560 KB page's bytes encrypted dwarf the framing on loopback) —
    else with clear HTTP/1.1, the site a move to HTTP/2 leaves. One Holm family over
    both kinds of comparison."""
    cells = questions.levels(cells)
    as_sides = [replace(c, stack_label=side(c), protocol=questions.CLEAR, handshake=None, negotiated=None,
                        workload=f"{c.stack_label} · {c.workload}") for c in cells]
    https = {questions.of(c) for c in as_sides if c.stack_label == NAMES["https"]}
    h2_vs_https = [c for c in as_sides if questions.of(c) in https
                   and (c.stack_label == NAMES["https"] or c.stack_label.startswith(NAMES["h2"]))]
    rest = [c for c in as_sides if not (questions.of(c) in https and c.stack_label.startswith(NAMES["h2"]))]
    parts = [v for v in (_against(rest, HTTP, band), _against(h2_vs_https, NAMES["https"], band)) if v]
    if not parts:
        return None
    if len(parts) == 1:
        return parts[0]
    return _one_family(parts, band)


def _against(sides: list[StoredCell], baseline: str, band: float) -> verdicts.Verdicts | None:
    """Every other side against `baseline` where both answered the question; None when none did."""
    base = {questions.of(c) for c in sides if c.stack_label == baseline}
    paired = [c for c in sides if questions.of(c) in base]
    # A baseline question no other side matches is no comparison: leave it out.
    others = {questions.of(c) for c in paired if c.stack_label != baseline}
    if not others:
        return None
    return verdicts.decide([c for c in paired if questions.of(c) in others], baseline, band=band,
                           self_comparison=True)


def _one_family(parts: list[verdicts.Verdicts], band: float) -> verdicts.Verdicts:
    """Several baselines' verdicts as one Holm family per metric (stats.adjust uses the
    raw p-values, so adjusting again over the union is the family's own adjustment)."""
    out: list[verdicts.Verdict] = []
    sizes: dict[str, int] = {}
    for metric in verdicts.METRICS:
        family = [v for p in parts for v in p.for_metric(metric.key)]
        tested = [i for i, v in enumerate(family) if v.decided not in verdicts.FAILURE_KINDS]
        adjusted = dict(zip(tested, stats.adjust([family[i].comparison for i in tested])))
        for i, v in enumerate(family):
            c = adjusted.get(i, v.comparison)
            out.append(replace(v, comparison=c, decided=verdicts.decided(metric, c, v.baseline_side, v.candidate_side,
                                                                       band)))
        sizes[metric.key] = sum(1 for i in tested if family[i].comparison.p_value is not None)
    excluded = tuple(dict.fromkeys(e for p in parts for e in p.excluded))
    return verdicts.Verdicts(HTTP, tuple(out), excluded, sizes, band, True)


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
