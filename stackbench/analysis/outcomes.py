"""Each repetition's outcome (pure): an invalid measurement, or a valid one that served
the load or failed it — and how, as data the reports word.

The method keeps two kinds of bad runs apart (docs/methods.md, "Two kinds of bad runs"),
and so does this module:
- INVALID: the measurement cannot be trusted — the generator was the bottleneck while the
  server had headroom (engine_saturated with the server under SERVER_BUSY, or its busy
  share unknown), the hypervisor took the server's core (cpu_steal), or nothing was
  measured (the stack never came up: no engine result). Shown, never in a verdict.
- FAILED: the stack did not serve the load (caveats.LOAD_FAILURES) — clients unserved past
  the deadline, requests failed or answered with errors beyond the tolerance, the server
  died under the load, the OOM killer took processes, due requests never sent, nothing
  completed by the deadline, the target went down. A result, not a void: the repetition
  counts in verdicts with what it actually delivered, and the stack loses.
- SLOW is not failed: a client whose request was still pending when a window shorter than
  the deadline (the engine's timeout, the plan's `timeout`) ended has not been refused —
  it waited less than it was allowed to — while the stack served others in that window,
  unless it served them so fast that this client's turn should have come several times
  over (HELD_BACK: then it was held back). Its latency is at least its wait (the window: a
  floor in the quantiles, `_latency`), and the repetition is served. A window with no
  response in it is never served: a stack that completed nothing was measured on, to the
  deadline, before it was judged (runner/cell.py), unless alone it answered so fast that
  its clients' turns came HELD_BACK times over in that window — so 0 responses fails the
  load, and the sentence says in how long a window (docs/methods.md, "Slow is not failed").
- SERVED: all clients served, errors within the tolerance. Possibly *engine-bound*: the
  generator at its limit while the server's cores were busy too — its throughput is then
  a lower bound of the stack's (the stack served at least that), and its latency is left
  out of latency verdicts (it holds the generator's own queueing).

Which caveat is which kind is caveats.py's (MEASUREMENT_FAILURES, LOAD_FAILURES); the
sentences are report/words/'s.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from statistics import median
from typing import Iterable, Sequence

from stackbench import caveats
from stackbench.engine.result import EngineResult
from stackbench.model.cell import StoredCell
from stackbench.states import CellStatus

SERVED, FAILED, INVALID = "served", "failed", "invalid"

# The share of the server's cores its cgroup used over the window (cost.cpu_total_us over
# cost.window_us × the cell's server cores, pinning.server_cpus — a machine profile's
# `cpus` already narrowed them; a fractional one's quota, pinning.server_capacity, is the
# whole) at or above which the server is at its limit: an engine at its limit beside it
# measured a lower bound of the stack, not the generator alone.
# Chosen from a store of the 14 scenarios' `--quick` runs (session 9, 382 measured cells;
# bench/RESULTS.md): the busy shares have a sharp mode at 0.94–0.98 —
# server-bound cells (static files, cache hits, PHP at c=16–100) — whose shoulder starts
# at 0.90 (0.90–0.92: 11 cells, 0.92–0.94: 14, 0.94–0.96: 28, 0.96–0.98: 75, max 0.985);
# below it the shares spread thinly over 0.30–0.90 (pools, slow clients, sleeping PHP:
# the server waited, it was not at its limit). The cgroup never shows 1.0 — softirq time
# and the few idle ms of the sampled window around the measured one are not charged to
# it. The 4 engine-saturated cells (h2o and lighttpd, static-12b, 123,000–154,000 req/s)
# had the server at 0.948–0.969, inside that mode. 0.90 is also the engine's own rule
# for itself (a thread busy ≥ 90 %: loadgen/README.md), so both sides are judged alike.
SERVER_BUSY = 0.90

# The process the runner names when a server dies under load (runner/cell.py:
# "mariadbd exited with status -9 during the load (…)").
_DIED = re.compile(r"^(\S+) exited with status (-?\d+) during the load")


@dataclass(frozen=True)
class Failure:
    """One way a repetition failed the load. `count` of `of`: clients unserved of the
    connections measured, requests failed of those attempted, non-2xx of the completed,
    due requests never sent of those due, processes OOM-killed; None when not reported."""

    code: str  # one of FAILURE_CODES
    count: int | None = None
    of: int | None = None
    share: float | None = None  # count / of, or the engine's own share
    process: str | None = None  # server_died: the process that exited (from the runner's error)
    exit_status: int | None = None
    # unserved: the window the clients waited through, and the engine's deadline (its
    # timeout) — a window at least that long waited past it; None when not reported.
    window_us: int | None = None
    deadline_us: int | None = None


# The ways a repetition fails the load: named as the engine's caveat where there is one.
UNSERVED, NOT_SENT, SERVER_DIED = "unserved", "not_sent", "server_died"
TARGET_DOWN, NO_REQUESTS, REQUESTS_FAILED = caveats.TARGET_DOWN, caveats.NO_REQUESTS, caveats.REQUESTS_FAILED
NON_2XX, OOM_KILLED = caveats.NON_2XX, caveats.OOM_KILLED
# In the order a sentence names them: who went unserved first, then what broke.
FAILURE_CODES = (UNSERVED, TARGET_DOWN, NO_REQUESTS, REQUESTS_FAILED, NON_2XX, NOT_SENT, SERVER_DIED, OOM_KILLED)


@dataclass(frozen=True)
class Outcome:
    kind: str  # SERVED | FAILED | INVALID
    invalid_reasons: tuple[str, ...]  # INVALID: why (caveat codes, "not_measured"); () otherwise
    failures: tuple[Failure, ...]  # how the stack failed the load (even when invalid: what it saw); () if none
    engine_bound: bool  # the engine at its limit while the server was busy: throughput a lower bound
    server_busy: float | None  # the server cores' busy share over the window; None: not measured
    window_us: int | None  # the measured window (the engine's duration); None: no engine result
    # What verdicts take of this repetition (None: not computable, or not trustworthy):
    throughput: float | None  # what it delivered (failed: successful answers over the window, 0 if none)
    p50_us: float | None  # a failed run's quantile that falls among unserved clients: the window (a floor)
    p99_us: float | None
    p50_floor: bool = False  # p50_us is at least this (the window), not the value itself
    p99_floor: bool = False
    # Other visitor classes beside the measured ones (class name, its connections), and
    # the most workers the servers had busy at once (their status pages) — what held them.
    beside: tuple[tuple[str, int], ...] = ()
    busy_workers: int | None = None
    # Served, but this many connections were still waiting for their first response when
    # a window shorter than the deadline ended: slow, not refused (their wait is a floor
    # in p50_us / p99_us).
    pending: int = 0
    # How finely its throughput was counted: one response a window (1 / its length, per
    # second; pages in page mode) when the window was a fixed time; None when it ended at
    # a response (a count asked: no step) or nothing was measured. And the responses a
    # client (a visitor in page mode) completed in the window.
    step_per_s: float | None = None
    per_client: float | None = None

    @property
    def valid(self) -> bool:
        return self.kind != INVALID

    @property
    def failed(self) -> bool:
        return self.kind == FAILED

    def failure(self, code: str) -> Failure | None:
        return next((f for f in self.failures if f.code == code), None)


def server_busy(cell: StoredCell) -> float | None:
    """The share of its cores the stack's cgroup kept busy over the sampled window — of
    its CPU quota under a fractional machine profile (0.5 CPU busy is 1.0: at its limit);
    None when the CPU, the window or the cores were not recorded (older stores, no cgroup)."""
    cores = cell.pinning.server_capacity
    cpu, window = cell.cost.cpu_total_us, cell.cost.window_us
    if not cores or cpu is None or not window:
        return None
    return cpu / (window * cores)


def of(cell: StoredCell) -> Outcome:
    o = _of(cell)
    if cell.engine is None or cell.load != "closed":  # an open loop's rate is asked, not counted
        return o
    step_per_s, per_client = resolution(cell.engine, cell.concurrency)
    return replace(o, step_per_s=step_per_s, per_client=per_client)


def resolution(e: EngineResult, clients: int) -> tuple[float | None, float | None]:
    """How finely a window counted its throughput, as (step_per_s, per_client): the step, one response over the
    window's length when it was a fixed time (its throughput moves in those steps), None
    when it ended at a response — a count asked of the engine (`-n`) ended it, so its
    length moved with the stack and count / length moves in no step; and `per_client`,
    the responses (pages in page mode) each of `clients` completed in it."""
    n = e.pages.completed if e.pages is not None else e.requests.completed
    seconds = e.duration_us / 1e6
    step = None if e.count_ended or seconds <= 0 else 1.0 / seconds
    return step, n / clients if clients else None


def _of(cell: StoredCell) -> Outcome:
    e = cell.engine
    busy = server_busy(cell)
    if e is None:
        # The engine never ran: the stack failed to come up (or to be verified) — no load
        # result, whatever the status says.
        return Outcome(INVALID, ("not_measured",), (), False, busy, None, None, None, None)
    invalid: list[str] = []
    bound = False
    for c in cell.caveats:
        if c.code == "engine_saturated":
            if busy is not None and busy >= SERVER_BUSY:
                bound = True  # both at their limit: a lower bound, valid
            elif c.code not in invalid:
                invalid.append(c.code)  # the server had headroom (or nobody knows): the generator's figure
        elif caveats.measurement_failure(c) and c.code not in invalid:
            invalid.append(c.code)
    failures = _failures(cell, e)
    pending = 0 if _refused(e) else _unserved(cell, e)
    kind = INVALID if invalid else FAILED if failures else SERVED
    classes = cell.classes
    beside = tuple((name, int(v.connections or 0)) for name, v in classes.others.items()) if classes else ()
    held = classes.server.busy_max if classes and classes.server else {}
    busy_workers = sum(held.values()) if held else None
    window = e.duration_us or None
    if kind == FAILED:
        p50, f50 = _latency(e, "50", 0.50, failures, window)
        p99, f99 = _latency(e, "99", 0.99, failures, window)
        return Outcome(kind, (), failures, bound, busy, window, _delivered(e, window), p50, p99, f50, f99,
                       beside, busy_workers)
    pages = e.pages
    throughput = pages.per_s if pages else e.requests_per_s
    if pending and not bound:
        # Clients still waiting when the window ended: slower, with their wait as a floor.
        slow = (Failure("unserved", pending, e.clients.measured),)
        (p50, f50), (p99, f99) = (_latency(e, key, q, slow, window) for key, q in (("50", 0.50), ("99", 0.99)))
        return Outcome(kind, tuple(invalid), failures, bound, busy, window, throughput, p50, p99, f50, f99,
                       beside=beside, busy_workers=busy_workers, pending=pending)
    p50 = None if bound else (pages.load_p50_us if pages else e.latency.p50_us)
    p99 = None if bound else (pages.load_p99_us if pages else e.latency.p99_us)
    return Outcome(kind, tuple(invalid), failures, bound, busy, window, throughput, p50, p99,
                   beside=beside, busy_workers=busy_workers)


# A client unserved for this many of the response times the stack's own pace gave each
# client (connections / throughput, Little's law for a closed loop) was held back while
# others were served — prefork's children held by kept-alive clients — not slow.
HELD_BACK = 3.0


def _refused(e: EngineResult) -> bool:
    """Does a client that got no response in the window prove the stack refused it? When
    it waited past the deadline (the window at least the engine's timeout); when the stack
    served nobody in the window (no response in it is never service: a stack that completed
    nothing was measured on before it was judged — runner/cell.py); or when the stack
    served the others so fast that its turn should have come several times over
    (HELD_BACK × connections / throughput ≤ the window): the wait is not the stack's speed
    but its unfairness. Otherwise — others served, at a pace at which a client's turn takes
    most of the window — the client is slow, not refused. An engine that did not say its
    timeout: as before, the window."""
    deadline, window_s = e.asked.timeout_us, (e.duration_us or 0) / 1e6
    if deadline is None or (e.duration_us or 0) >= deadline or not served(e):
        return True
    return held_back(e.requests_per_s or 0.0, e.clients.measured or 0, window_s)


def served(e: EngineResult) -> int:
    """Responses that were service in the window: page views in page mode, else the 2xx
    answers (an error page is its own failure, NON_2XX)."""
    if e.pages is not None:
        return e.pages.completed
    return max(0, e.requests.completed - e.requests.non_2xx)


def held_back(per_s: float, clients: int, window_s: float) -> bool:
    """At `per_s` responses a second to `clients` connections, would each client's turn
    (clients / per_s, Little's law for a closed loop) have come HELD_BACK times over in a
    window of `window_s`? Then a client without a response in it was held back, not slow.
    The runner asks it too, of a stack's pace alone, before measuring on a window that
    served nothing (runner/cell.py)."""
    turn_s = clients / per_s if per_s > 0 else float("inf")
    return HELD_BACK * turn_s <= window_s


def _unserved(cell: StoredCell, e: EngineResult) -> int:
    """Connections that got no response in the window (the engine's caveat, else its count)."""
    for c in cell.caveats:
        if c.code in ("no_response_all", "clients_unserved"):
            count = caveats.failure_figures(c)[0]
            return int(e.clients.without_response or 0 if count is None else count)
    return 0


def _failures(cell: StoredCell, e: EngineResult) -> tuple[Failure, ...]:
    """The ways this repetition failed the load: from its load-failure caveats
    (caveats.LOAD_FAILURES, their figures from caveats.failure_figures — the engine's
    typed counts where a caveat does not carry them) and from its status (the server
    died under the load)."""
    found: list[Failure] = []
    codes = {c.code: c for c in cell.caveats if caveats.load_failure(c)}
    if not _refused(e):
        # Nobody waited past the deadline, nor was held back while others were served: a
        # client without a response, or a window with nothing completed, is slow, not refused.
        slow = (caveats.NO_RESPONSE_ALL, caveats.CLIENTS_UNSERVED, caveats.NO_REQUESTS)
        codes = {k: v for k, v in codes.items() if k not in slow}
    unserved = codes.get(caveats.NO_RESPONSE_ALL) or codes.get(caveats.CLIENTS_UNSERVED)
    window, deadline = e.duration_us or None, e.asked.timeout_us
    if unserved is not None:
        count, total, _ = caveats.failure_figures(unserved)  # the figures the engine warned with
        count = e.clients.without_response if count is None else count
        total = e.clients.measured if total is None else total
        found.append(Failure(UNSERVED, count, total, _share(count, total), window_us=window, deadline_us=deadline))
    elif not served(e) and not codes and e.clients.measured and e.clients.without_response != 0:
        # Nothing served, and the engine named no way it failed (an engine that did not
        # warn of it): every client went unserved.
        n = e.clients.measured
        found.append(Failure(UNSERVED, n, n, 1.0, window_us=window, deadline_us=deadline))
    if caveats.TARGET_DOWN in codes:
        found.append(Failure(TARGET_DOWN, caveats.failure_figures(codes[caveats.TARGET_DOWN])[0]))
    if caveats.NO_REQUESTS in codes:
        u = found[0] if found and found[0].code == UNSERVED else None
        if not (u and u.count is not None and u.count == u.of):  # every client unserved says it already
            found.append(Failure(NO_REQUESTS, 0, None))
    if caveats.REQUESTS_FAILED in codes:
        count, attempted, share = caveats.failure_figures(codes[caveats.REQUESTS_FAILED])
        count = e.requests.failed if count is None else count
        attempted = e.requests.attempted if attempted is None else attempted
        found.append(Failure(REQUESTS_FAILED, count, attempted, _share(count, attempted) if share is None else share))
    if caveats.NON_2XX in codes:  # the caveat's code (the document's key of the same name is not read here)
        count, _, share = caveats.failure_figures(codes[caveats.NON_2XX])
        found.append(Failure(NON_2XX, e.requests.non_2xx if count is None else count,
                             e.requests.completed or None, share))
    if caveats.RATE_NOT_REACHED in codes:
        not_sent, due, _ = caveats.failure_figures(codes[caveats.RATE_NOT_REACHED])
        not_sent = e.requests.not_sent if not_sent is None else not_sent
        due = e.requests.due if due is None else due
        if not_sent is None or not_sent > 0:  # all sent, only late: their latency counts from when due
            found.append(Failure(NOT_SENT, not_sent, due, _share(not_sent, due)))
    if cell.status != CellStatus.OK:
        died = _DIED.match(cell.error or "")
        found.append(Failure(SERVER_DIED, process=died.group(1) if died else None,
                             exit_status=int(died.group(2)) if died else None))
    if caveats.OOM_KILLED in codes:
        found.append(Failure(OOM_KILLED, caveats.failure_figures(codes[caveats.OOM_KILLED])[0]))
    return tuple(found)  # in FAILURE_CODES' order


def _share(count: int | None, total: int | None) -> float | None:
    return count / total if count is not None and total else None


def _delivered(e: EngineResult, window_us: int | None) -> float:
    """What a failed repetition served per second: page views in page mode, else the
    requests answered 2xx over the window (an error page is not service); 0 when nothing."""
    if e.pages is not None:
        return e.pages.per_s or 0.0
    if not window_us:
        return e.requests_per_s or 0.0
    return max(0, e.requests.completed - e.requests.non_2xx) / (window_us / 1e6)


def _latency(e: EngineResult, key: str, q: float, failures: tuple[Failure, ...],
             window_us: int | None) -> tuple[float | None, bool]:
    """A failed repetition's latency quantile q, counting its unserved clients: each one's
    request waited the whole window at least (it got no response in it). With n requests
    completed and u clients unserved, the quantile's rank q·(n + u) falling past n lies
    among the unserved: the value is at least the window (a floor). Otherwise it is the
    completed requests' quantile at q' = q·(n + u)/n, slightly above q; the engine reports
    a table of percentiles (50 … 99, 99.9, 99.99, 100), not the histogram, so the value is
    the table's at the highest listed percentile ≤ q' — at least the engine's own p_q,
    and a floor of the true value when q' is not itself listed (between 99 and 99.9 the
    table cannot say more). Nothing completed: every quantile is the window, a floor.
    Page mode counts visitors, not the connections the engine reports unserved, so there
    only "nothing completed" makes a floor."""
    pages = e.pages
    page = pages is not None
    n = pages.completed if pages else e.requests.completed
    own = (pages.load_p50_us if key == "50" else pages.load_p99_us) if pages else e.latency.percentile_us(key)
    if not n:
        return (float(window_us), True) if window_us else (None, False)
    unserved = next((f.count for f in failures if f.code == "unserved"), None) or 0
    if page or not unserved:
        return (None if own is None else float(own)), False
    total = n + unserved
    if q * total > n:
        return (float(window_us), True) if window_us else (None, False)
    wanted = 100 * q * total / n
    table = sorted((float(p), v) for p, v in e.latency.percentiles_us.items() if v is not None)
    below = [(p, v) for p, v in table if p <= wanted + 1e-9]
    if not below:
        return (None if own is None else float(own)), False
    p, value = below[-1]
    return float(value), abs(p - wanted) > 1e-9


@dataclass(frozen=True)
class FailureSummary:
    """One way of failing over a side's failed repetitions: in how many it happened, and
    its figures' range (count_low–count_high of `of`)."""

    code: str
    runs: int
    count_low: int | None
    count_high: int | None
    of: int | None
    share: float | None  # the median share
    process: str | None = None
    exit_status: int | None = None
    # unserved: the shortest and longest window its clients waited through, and the
    # engine's deadline (None: not reported)
    window_low_us: int | None = None
    window_high_us: int | None = None
    deadline_us: int | None = None

    @property
    def past_deadline(self) -> bool:
        """Every window it was judged on reached the deadline: the clients waited as long
        as the engine waits for a response, and longer."""
        return (self.window_low_us is not None and self.deadline_us is not None
                and self.window_low_us >= self.deadline_us)


def summarize_failures(outcomes: Iterable[Outcome]) -> tuple[FailureSummary, ...]:
    """Over the failed repetitions given, each way of failing once, in FAILURE_CODES order."""
    by: dict[str, list[Failure]] = {}
    for o in outcomes:
        if o.failed:
            for f in o.failures:
                by.setdefault(f.code, []).append(f)
    out = []
    for code in FAILURE_CODES:
        fs = by.get(code)
        if not fs:
            continue
        counts = [f.count for f in fs if f.count is not None]
        ofs = [f.of for f in fs if f.of is not None]
        shares = [f.share for f in fs if f.share is not None]
        processes = [f.process for f in fs if f.process]
        statuses = [f.exit_status for f in fs if f.exit_status is not None]
        windows = [f.window_us for f in fs if f.window_us is not None]
        deadlines = [f.deadline_us for f in fs if f.deadline_us is not None]
        out.append(FailureSummary(code, len(fs), min(counts) if counts else None, max(counts) if counts else None,
                                  max(ofs) if ofs else None, median(shares) if shares else None,
                                  max(set(processes), key=processes.count) if processes else None,
                                  max(set(statuses), key=statuses.count) if statuses else None,
                                  min(windows) if windows else None, max(windows) if windows else None,
                                  max(deadlines) if deadlines else None))
    return tuple(out)


def any_floor(values: Sequence[tuple[float | None, bool]]) -> bool:
    """Does a median of these (value, is-a-floor) pairs describe a floor? Raising any
    value can only raise a median (an order statistic is monotone in every value), so the
    median of values some of which are floors is itself a floor — a lower bound."""
    return any(floor for v, floor in values if v is not None)
