"""One stored cell's figures, typed, computed once: what the table, explain and the HTML
report show, and the repetition's outcome (outcomes.py: invalid, served, or failed the
load, and how). None when not computable, never 0."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from stackbench.analysis import bottleneck as bottleneck_mod, metrics, outcomes, questions
from stackbench.engine.result import Caveat
from stackbench.model.cell import StoredCell
from stackbench.states import CellStatus


@dataclass(frozen=True)
class Unserved:
    """Connections of the measured phase that never got a response. Their clients'
    latency is in no column, so a row that served 11 of 32 clients must say so. The
    denominator is the engine's own count of connections (a page-mode visitor opens
    several), not the plan's concurrency."""

    without_response: int
    connections: int


@dataclass(frozen=True)
class CellFigures:
    run_id: int
    seq: int
    repetition: int
    stack_label: str
    question: questions.Question
    status: CellStatus
    error: str | None
    measured: bool  # the engine ran (a failed cell may still have what the engine saw)
    requests_per_s: float | None
    latency_mean_us: float | None
    latency_p50_us: int | None
    latency_p99_us: int | None
    requests_failed: int | None
    non_2xx: int | None
    unserved: Unserved | None
    memory_peak_bytes: int | None  # anonymous + shared memory of the stack's processes
    cgroup_peak_bytes: int | None  # the cgroup's own peak, page cache included
    cpu_us_per_request: float | None
    engine_cpu_us_per_request: float | None
    syscalls_per_request: float | None
    procs_max: int | None
    threads_max: int | None
    caveats: tuple[Caveat, ...]
    # Page mode (a page and its assets, fetched like a browser): page views per second
    # and page load time; None for other workloads.
    pages_per_s: float | None = None
    page_load_p50_us: int | None = None
    page_load_p99_us: int | None = None
    # Visits (a plan's [visit]): complete visits a second, a visit's duration (its start to
    # its last page's last byte, think times included) and pages a visit; None otherwise.
    # Throughput and latency are then the visits' page views (pages/s, page load time).
    visits_per_s: float | None = None
    visit_p50_us: int | None = None
    visit_p99_us: int | None = None
    pages_per_visit: float | None = None
    # PHP's state in force, read back while verifying (None: not read, or no PHP).
    php_opcache: bool | None = None
    # The workload's services (a database), measured in their own cgroup.
    service_memory_peak_bytes: int | None = None
    service_cpu_us_per_request: float | None = None
    # A machine profile's memory limit (None: no limit): processes the OOM killer took in
    # the window and just before it (start, warm-up), and the limit.
    oom_kills: int | None = None
    memory_limit_bytes: int | None = None
    # Invalid, served or failed the load, and how; what verdicts take of this repetition.
    outcome: outcomes.Outcome | None = None
    # Which side limited the load — the engine, the server, both, neither — with each
    # side's busy share and CPU per request (bottleneck.py); None: the engine never ran.
    bottleneck: bottleneck_mod.Bottleneck | None = None
    # Protocols: the protocol as asked, or "h2 → http/1.1" when a stack asked for HTTP/2
    # answered in HTTP/1.1 (questions.spoken_label); over TLS the engine's handshakes
    # (full, resumed) and its handshake time per connection (None: clear text).
    protocol: str = questions.CLEAR
    handshakes_full: int | None = None
    handshakes_resumed: int | None = None
    handshake_p50_us: int | None = None
    handshake_p99_us: int | None = None
    connect_p50_us: int | None = None
    # What was negotiated, most connections first: (alpn, version, cipher, group) as the
    # engine saw it, else as the stack read back when verified; None: clear text.
    negotiated: tuple[str | None, str | None, str | None, str | None] | None = None

    @property
    def page_mode(self) -> bool:
        return self.pages_per_s is not None

    @property
    def throughput(self) -> float | None:
        """What a user of this workload waits for: page views/s in page mode, else requests/s."""
        return self.pages_per_s if self.page_mode else self.requests_per_s

    @property
    def p50_us(self) -> int | None:
        """p50 of what a user waits for: a whole page's load in page mode, else a request."""
        return self.page_load_p50_us if self.page_mode else self.latency_p50_us

    @property
    def p99_us(self) -> int | None:
        return self.page_load_p99_us if self.page_mode else self.latency_p99_us


def of(cell: StoredCell) -> CellFigures:
    e, cost = cell.engine, cell.cost
    unserved = None
    if e is not None and e.clients.without_response is not None:
        measured = e.clients.measured
        unserved = Unserved(e.clients.without_response, cell.concurrency if measured is None else measured)
    pages = e.pages if e is not None else None
    events = cost.memory_events
    outcome = outcomes.of(cell)
    cpu, engine_cpu = metrics.cpu_us_per_request(cell), metrics.engine_cpu_us_per_request(cell)
    return CellFigures(
        run_id=cell.run_id, seq=cell.seq, repetition=cell.repetition, stack_label=cell.stack_label,
        question=questions.of(cell), status=cell.status, error=cell.error, measured=e is not None,
        requests_per_s=e.requests_per_s if e else None, latency_mean_us=e.latency.mean_us if e else None,
        latency_p50_us=e.latency.p50_us if e else None, latency_p99_us=e.latency.p99_us if e else None,
        requests_failed=e.requests.failed if e else None, non_2xx=e.requests.non_2xx if e else None,
        unserved=unserved,
        memory_peak_bytes=metrics.memory_peak_bytes(cell), cgroup_peak_bytes=cost.peak_mem_bytes,
        cpu_us_per_request=cpu, engine_cpu_us_per_request=engine_cpu,
        syscalls_per_request=metrics.syscalls_per_request(cell),
        procs_max=cost.procs_max, threads_max=cost.threads_max, caveats=cell.caveats,
        pages_per_s=pages.per_s if pages else None, page_load_p50_us=pages.load_p50_us if pages else None,
        page_load_p99_us=pages.load_p99_us if pages else None,
        **_visits(cell),
        php_opcache=cell.php.opcache if cell.php else None,
        service_memory_peak_bytes=cost.service_mem_peak_bytes,
        service_cpu_us_per_request=metrics.service_cpu_us_per_request(cell),
        oom_kills=None if events is None else events.total_kills,
        memory_limit_bytes=events.limit_bytes if events else None,
        outcome=outcome,
        bottleneck=bottleneck_mod.of(e, outcome.server_busy, cpu, engine_cpu, bottleneck_mod.machine_of(cell)),
        protocol=questions.spoken_label(cell),
        **_tls(cell),
    )


def _visits(cell: StoredCell) -> dict[str, Any]:
    v = cell.engine.visits if cell.engine is not None else None
    if v is None:
        return {}
    # No visit ended in the window (every one still in flight: a window shorter than a
    # visit): its rate is not computable, not 0.
    return {"visits_per_s": v.per_s if v.completed or v.failed else None, "visit_p50_us": v.duration.p50_us, "visit_p99_us": v.duration.p99_us,
            "pages_per_visit": v.pages_per_visit}


def _tls(cell: StoredCell) -> dict[str, Any]:
    """The TLS figures of a cell; what was negotiated as the engine saw it (by most
    connections), else as the stack read back when verified."""
    tls = cell.engine.tls if cell.engine is not None else None
    out: dict[str, Any] = {}
    if tls is not None:
        out = {"handshakes_full": tls.full, "handshakes_resumed": tls.resumed,
               "handshake_p50_us": tls.handshake.p50_us, "handshake_p99_us": tls.handshake.p99_us,
               "connect_p50_us": tls.connect.p50_us}
    seen = tls.negotiated[0] if tls is not None and tls.negotiated else cell.negotiated
    if seen is not None:
        out |= {"negotiated": (seen.alpn, seen.version, seen.cipher, seen.group)}
    return out
