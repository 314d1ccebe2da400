"""What TLS costs each stack, in words — the rows of the terminal's and the HTML report's
tables: the server's CPU per new connection beside its CPU per request, the client's
handshake time, and each stack's throughput and CPU by protocol and handshake mode
(analysis/protocols.py and summary.py compute; this only formats)."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis import verdicts
from stackbench.analysis.protocols import HandshakeCost
from stackbench.analysis.summary import CellSummary
from stackbench.units import format_num as _num, format_rate, format_us

HEAD = ("stack", "workload", "load", "protocol", "handshakes", "runs", "CPU µs/req", "kept-alive µs/req",
        "CPU µs/new conn", "handshake p50 ms", "p99 ms")


def cost_rows(costs: Sequence[HandshakeCost]) -> list[tuple[str, ...]]:
    return [(h.stack_label, h.workload, h.level, h.protocol, h.handshake, f"{h.runs} vs {h.keepalive_runs}",
             _num(h.cpu_us_per_request, 1, 0), _num(h.keepalive_cpu_us_per_request, 1, 0),
             _num(h.cpu_us_per_connection, 1, 0), format_us(h.handshake_p50_us), format_us(h.handshake_p99_us))
            for h in costs]


COST_NOTE = ("CPU µs/new conn = the stack's CPU per request with a new connection per request (resumed or full "
             "handshakes) minus its CPU per request kept alive, same protocol, workload and level: what one TCP "
             "connection and its TLS handshake cost the server; handshake = the client's TLS handshake time per "
             "connection")


BY_PROTOCOL_HEAD = ("stack", "workload", "load", "protocol", "connections", "runs", "req/s median", "CPU µs/req",
                    "handshake p50 ms", "handshake p99 ms", "negotiated")


def by_protocol_rows(rows: Sequence[CellSummary]) -> list[tuple[str, ...]]:
    """Each stack's throughput and CPU by protocol and handshake mode (medians of valid
    runs), with the client's handshake time and what was negotiated; [] when the run
    asked for clear HTTP/1.1 alone."""
    if not any(r.question.tls for r in rows):
        return []
    ordered = sorted(rows, key=lambda r: (r.stack_label, r.question.workload, r.question.sort_key()))
    out: list[tuple[str, ...]] = []
    for r in ordered:
        q, hs = r.question, r.handshake
        conns = (q.handshake or "keep-alive") if q.tls else ("keep-alive" if q.keepalive else "no keep-alive")
        out.append((r.stack_label, q.workload, q.level(), r.protocol, conns, f"{r.valid}/{r.runs}",
                    format_rate(r.metrics[verdicts.THROUGHPUT.key].median),
                    _num(r.metrics[verdicts.CPU_PER_REQUEST.key].median, 1, 0),
                    format_us(hs.p50.median) if hs else "-", format_us(hs.p99.median) if hs else "-",
                    " ".join(x for x in (r.negotiated or ()) if x) or "-"))
    return out
