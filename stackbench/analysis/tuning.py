"""A stack at its best for one question: which pool size it is measured with when a plan
asks for `knobs = "tuned"` or a user runs `stackbench tune` (docs/methods/tuning.md).

The rules, in the order the tuner applies them:

1. **The memory bound.** A pool whose workers cannot all be resident is no candidate: the
   size is at most (limit × HEADROOM − what the stack holds besides its workers) / what
   one worker holds, both measured on a small pool under the question's load
   (`pool_bound`). apache2buddy and the PHP-FPM calculators use this formula with a
   worker's size guessed from `ps`; here it is measured, and the database beside the
   stack counts against the same machine.
2. **The candidates** (`candidates`): doubling from 1 to the least of that bound and what
   the question can use (at N clients a pool past N workers has none to serve), the top
   itself included — the size a calculator would give is tried unless the CPU rules it
   out. What the question can use is also what the CPU leaves: when the probe's pool
   already kept the machine's CPUs busy (SATURATED), more workers only queue for the same
   cores — the utilisation law (Denning and Buzen, "The Operational Analysis of Queueing
   Network Models", 1978: throughput is at most the CPUs over the CPU a response needs,
   whatever the concurrency) — so the candidates stop at the probe's size. A pool whose
   workers each hold a client's connection (prefork with mod_php, kept alive) is the
   exception that proves it: its extra workers serve more *clients*, not more responses.
   Its candidates are those sizes with each connection closed after one response, plus
   the largest pool kept alive — the only kept-alive size that can hold the most clients
   (a smaller one leaves more of them in the listen queue for the whole window).
3. **Each candidate serves the question or not.** It is measured `repetitions` times; it
   serves when every repetition met the SLO (each client served, no error, no OOM kill,
   the latency within it). One failed repetition fails it: a pool that is OOM-killed one
   time in three is not a setting a sysadmin can leave in place.
4. **The choice** (`choose`). At a rate, the smallest candidate that serves it: every pool
   that serves a rate serves the same responses a second, so a higher figure among them
   is noise (with one run a candidate, no interval would say so); of one size, the one
   that closes its connections, which serves any number of them. Otherwise, among the
   candidates that serve, the best is the one with the highest geometric mean of its
   figures; the chosen one is the *smallest* that is as
   good as the best — its shortfall within TIE_BAND and not significant (Welch's interval
   of the ratio on the logs, analysis/stats.py, reaches 1). On this machine's noise
   (bench/RESULTS.md: CV 2–17 % from one window to the next) a single run per candidate
   would crown noise; the interval keeps a smaller pool that is as fast, and a smaller
   pool is memory left for the page cache and the database. When no candidate serves, the
   one that failed in the fewest repetitions, then the highest figure, is kept, and the
   choice says none served.
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass, field, replace
from statistics import fmean
from typing import Any, Mapping

from stackbench.analysis import outcomes, slow_requests, stats, student_t
from stackbench.analysis.capacity import SLO, check
from stackbench.analysis.slow_requests import SlowRun
from stackbench.engine.result import EngineResult
from stackbench.model.cell import StoredCell
from stackbench.model.cost import ProcessMemory
from stackbench.model.tuning import ONE_REQUEST_SUFFIX, Candidate, OneWorkerBound, SlowCost, SlowPool, StoredTuning

# Of the machine's memory, the share a pool may plan to fill: the rest is the kernel's,
# the page cache's, and a worker's growth past what the bound measured.
HEADROOM = 0.85
# A candidate within this shortfall of the best, and not significantly below it, ties it.
TIE_BAND = 0.05
CONFIDENCE = 0.95
# The share of the machine's CPU time (the stack's and its services' together) at which the
# probe's pool left none for another worker: the share at which the lab calls a server the
# bottleneck of a run (outcomes.SERVER_BUSY), so a tuning and a run's table never disagree.
# This machine's runs of WordPress on one core read 98–100 % (bench/RESULTS.md, "Tuning");
# below it a larger pool may still find idle CPU behind a worker waiting on the database or
# a sleep.
SATURATED = outcomes.SERVER_BUSY


class Reason(enum.Enum):
    BEST = "best"  # the chosen candidate is the best itself (no smaller one ties it)
    SMALLEST_TIED = "smallest_tied"  # a smaller pool as good as the best
    NONE_SERVED = "none_served"  # no candidate served the question: the one that failed least
    ONLY = "only"  # one candidate (the bound allowed no other)
    # Tunings stored before the one-request candidates joined the others: the chosen size,
    # tried again with one request a connection, served better so.
    ONE_REQUEST = "one_request"
    # At a rate: the smallest pool served it within the SLO, so no larger one was measured
    # (every pool that serves a rate serves it alike: the smallest is the choice)
    SMALLEST_SERVES = "smallest_serves"
    # At a rate: the smallest pool did not serve it, with the CPU already busy: no larger
    # pool can serve more (rule 3), so none was measured — the stack does not carry the
    # rate on this machine
    CPU_SATURATED = "cpu_saturated"
    # At a rate: the smallest pool did not serve it, the others were measured, and the
    # smallest of those that served it is the choice (every pool that serves a rate serves
    # it alike: a higher figure among them is noise, not a better pool)
    SMALLEST_MEETS = "smallest_meets"


@dataclass(frozen=True)
class Trial:
    """One candidate measured: its size, the knobs it set, each repetition's figure
    (requests or pages a second) and why each repetition failed the question (None: it
    met it)."""

    size: int
    knobs: Mapping[str, Any]
    figures: tuple[float, ...]
    failures: tuple[str | None, ...] = ()
    peak_mem_bytes: int | None = None
    # The pool's connections closed after every response (the candidate labelled with
    # ONE_REQUEST_SUFFIX: runner/tune.py set keepalive_requests = 1 for it)
    one_request: bool = False
    # On a mix with deliberately slow requests, each valid repetition's figures of them
    # (analysis/slow_requests.py); () on an ordinary workload
    slow_runs: tuple[SlowRun, ...] = ()

    @property
    def serves(self) -> bool:
        return bool(self.figures) and all(f is None for f in self.failures)

    @property
    def failed(self) -> int:
        return sum(f is not None for f in self.failures)

    @property
    def center(self) -> float | None:
        """Geometric mean of the figures (the mean when one is 0)."""
        if not self.figures:
            return None
        if min(self.figures) <= 0:
            return fmean(self.figures)
        return math.exp(fmean(math.log(v) for v in self.figures))

    def interval(self, confidence: float = CONFIDENCE) -> tuple[float, float] | None:
        """Student's t interval of the mean of the logs, back on the figure's scale; None
        with fewer than 2 figures or one at 0."""
        if len(self.figures) < 2 or min(self.figures) <= 0:
            return None
        logs = [math.log(v) for v in self.figures]
        m = fmean(logs)
        sd = math.sqrt(sum((x - m) ** 2 for x in logs) / (len(logs) - 1))
        if sd == 0:
            return math.exp(m), math.exp(m)
        half = student_t.critical(1 - confidence, len(logs) - 1) * sd / math.sqrt(len(logs))
        return math.exp(m - half), math.exp(m + half)


@dataclass(frozen=True)
class Choice:
    chosen: Trial
    reason: Reason
    best: Trial | None  # the highest figure among those that serve; None when none served
    # the chosen one against the best: (ratio, low, high) of Welch's interval; None when
    # the chosen one is the best or a side has fewer than 2 figures
    against_best: tuple[float, float, float] | None = None
    tied: tuple[int, ...] = field(default=())  # sizes that tie the best (the chosen one the smallest)


def pool_bound(limit_bytes: int, base_bytes: int, worker_bytes: int, headroom: float = HEADROOM) -> int:
    """The largest pool whose workers fit: (limit × headroom − base) / worker, at least 1
    (a stack always has one worker; that it does not fit is the run's answer, not the
    tuner's)."""
    if worker_bytes <= 0:
        raise ValueError(f"a worker holds some memory, got {worker_bytes!r} bytes")
    room = limit_bytes * headroom - base_bytes
    return max(1, int(room // worker_bytes))


def fits(cells: list[StoredCell], limit_bytes: int, headroom: float = HEADROOM) -> bool:
    """A pool measured without the probe's bound is within it: in every measured run the
    stack's peak and its services' (page cache included, so this errs high) within
    `headroom` of the limit — the bound's rule, read off the pool itself (rule 1)."""
    peaks = [(c.cost.peak_mem_bytes, c.cost.service_mem_peak_bytes or 0) for c in cells if c.measured]
    return bool(peaks) and all(p is not None and p + s <= limit_bytes * headroom for p, s in peaks)


def sizes(bound: int, useful: int | None, start: int = 1) -> list[int]:
    """The candidates: start, 2·start, 4·start … up to min(bound, useful), which is
    itself included."""
    top = bound if useful is None else min(bound, useful)
    top = max(top, 1)
    out, n = [], max(1, start)
    while n < top:
        out.append(n)
        n *= 2
    out.append(top)
    return out


def cpu_busy(cell: StoredCell, cpus: float) -> float | None:
    """The share of `cpus` CPUs the stack and its services used in the cell's window; None
    when the window's CPU was not measured."""
    c = cell.cost
    if c.cpu_total_us is None or not c.window_us or cpus <= 0:
        return None
    return (c.cpu_total_us + (c.service_cpu_us or 0)) / (c.window_us * cpus)


def candidates(bound: int, clients: int, cpu_top: int | None, holds_connections: bool = False,
               keepalive: bool = True) -> list[Candidate]:
    """Rule 2 of the module docstring. `cpu_top`: the probe's size when it saturated the
    CPUs (None: it did not)."""
    top = max(1, min(bound, clients))
    sized = sizes(min(top, cpu_top) if cpu_top else top, clients)
    if holds_connections and keepalive:
        return [Candidate(n, one_request=True) for n in sized] + [Candidate(top)]
    return [Candidate(n) for n in sized]


def choose(trials: list[Trial], band: float = TIE_BAND, confidence: float = CONFIDENCE,
           at_rate: bool = False) -> Choice:
    """The rule in the module docstring; `at_rate`: the question is a rate (an open loop)."""
    if not trials:
        raise ValueError("no candidate was measured")
    if len(trials) == 1 and not at_rate:
        return Choice(trials[0], Reason.ONLY, trials[0] if trials[0].serves else None)
    serving = [t for t in trials if t.serves]
    if not serving:
        least = min(trials, key=lambda t: (t.failed / max(1, len(t.failures)), -(t.center or 0.0), t.size))
        return Choice(least, Reason.NONE_SERVED, None)
    best = max(serving, key=lambda t: (t.center or 0.0, -t.size))
    if at_rate:
        # Of one size, one request a connection: a rate's tuning sizes a pool for a search
        # or a run whose connections grow with the rate, and a kept-alive child that holds
        # one each leaves those past the pool in the listen queue
        smallest = min(serving, key=lambda t: (t.size, not t.one_request))
        return Choice(smallest, Reason.SMALLEST_MEETS, best, None, tuple(sorted(t.size for t in serving)))
    tied = [t for t in serving if t is best or _ties(t, best, band, confidence)]
    # the smallest; of one size, the connections kept alive (the server's own default)
    chosen = min(tied, key=lambda t: (t.size, t.one_request))
    against = None if chosen is best else stats.ratio_interval(best.figures, chosen.figures, confidence)
    reason = Reason.BEST if chosen is best else Reason.SMALLEST_TIED
    return Choice(chosen, reason, best, against, tuple(sorted(t.size for t in tied)))


def _ties(t: Trial, best: Trial, band: float, confidence: float) -> bool:
    """Within the band of the best and not significantly below it."""
    if not t.center or not best.center or t.center < (1 - band) * best.center:
        return False
    est = stats.ratio_interval(best.figures, t.figures, confidence)
    return est is not None and est[2] >= 1


# A repetition that met the load but not the SLO: its latency, or its errors, past it.
SLO_LATENCY, SLO_ERRORS = "slo_latency", "slo_errors"
# A repetition at a rate on a mix with slow requests that met none of them: untested.
NO_SLOW = "no_slow_request"


@dataclass(frozen=True)
class WorkerMemory:
    """What the memory probe measured: the largest worker's PSS, and what the stack held
    besides its workers (its other processes' PSS and its services' peak: a database
    counts against the same machine)."""

    worker_bytes: int
    base_bytes: int
    workers: int  # how many workers the probe found


def worker_memory(processes: list[ProcessMemory], worker: str, services_bytes: int | None) -> WorkerMemory | None:
    """From one cell's processes: workers are the processes named `worker…` whose parent is
    one of them too (the master is not a worker). None when no worker was found."""
    named = {p.pid for p in processes if p.comm.startswith(worker)}
    workers = [p for p in processes if p.pid in named and p.ppid in named]
    if not workers:
        return None

    def size(p: ProcessMemory) -> int:
        return int(p.pss_bytes if p.pss_bytes is not None else p.rss_bytes or 0)

    others = sum(size(p) for p in processes if p not in workers)
    return WorkerMemory(max(size(p) for p in workers), others + int(services_bytes or 0), len(workers))


def trials(cells: list[StoredCell], sizes: Mapping[str, int], slo: SLO | None,
           slow: Mapping[str, int] | None = None) -> list[Trial]:
    """One Trial per candidate (`sizes`: label → pool size) from a candidates run's cells:
    each valid repetition's throughput, and why it failed the question (outcomes.py's
    first failure, or the SLO's latency or error count); an invalid repetition (the lab's
    measurement, not the stack's answer) is neither. `slow`: the workload's deliberately
    slow URLs ({path: hold, ms}), whose own latency the SLO leaves to the page
    (analysis/slow_requests.py)."""
    slow = slow or {}
    out = []
    for label, size in sizes.items():
        mine = sorted((c for c in cells if c.stack_label == label), key=lambda c: c.repetition)
        figures: list[float] = []
        failures: list[str | None] = []
        runs: list[SlowRun] = []
        peak = None
        for c in mine:
            o = outcomes.of(c)
            if not o.valid or o.throughput is None:
                continue
            engine = slow_requests.judged(c.engine, slow) if c.engine is not None else None
            run = slow_requests.run_of(c.engine, slow) if c.engine is not None and slow else None
            if slow and c.load != "closed" and (run is None or not run.slow_responses):
                # At a rate a window that met no slow request did not test the pool, which
                # would "serve" by luck: it does not serve (docs/methods/tuning.md, "Slow
                # requests"), and a larger pool is measured
                failures.append(NO_SLOW)
                continue
            figures.append(o.throughput)
            if run is not None:
                runs.append(run)
            if c.load != "closed" and slo is not None:
                # An open loop is judged as a capacity search's probe is (capacity.check):
                # a connection whose one request was sent just before the window's end is
                # not a client left unserved, it is a request in flight.
                met = check(c.status, c.error, engine, slo)
                failures.append(None if met.met else met.reasons[0])
                continue
            failures.append(o.failures[0].code if o.failed else _slo_miss(c, o, slo, engine))
            mem = c.cost.peak_mem_bytes
            peak = mem if peak is None or (mem is not None and mem > peak) else peak
        knobs = mine[0].knobs if mine else {}
        out.append(Trial(size, knobs, tuple(figures), tuple(failures), peak, label.endswith(ONE_REQUEST_SUFFIX),
                         tuple(runs)))
    return out


def _slo_miss(cell: StoredCell, o: outcomes.Outcome, slo: SLO | None, judged: EngineResult | None) -> str | None:
    """`judged`: the cell's result as the SLO judges it — the other pages' latency on a mix
    with slow requests (slow_requests.judged), else the cell's own."""
    if slo is None or cell.engine is None:
        return None
    others = judged is not None and judged is not cell.engine
    for p, limit in slo.latency_us.items():
        value: float | None
        if others:
            assert judged is not None
            value = judged.latency.percentiles_us.get(p)
        else:
            value = o.p99_us if p == "99" else o.p50_us if p == "50" else cell.engine.latency.percentiles_us.get(p)
        if value is None or value > limit:
            return SLO_LATENCY
    req = cell.engine.requests
    if slo.errors is not None and req.failed + req.non_2xx > slo.errors:
        return SLO_ERRORS
    return None


def decide(trials: list[Trial], second: Trial | None = None) -> Choice:
    """`choose`; `second`: a tuning stored before the one-request candidates joined the
    others, whose chosen size was tried again with one request a connection — taken when
    it served where the chosen one did not, or did better and not within the tie."""
    choice = choose(trials)
    if second is None:
        return choice
    current = choice.chosen
    if second.serves != current.serves:
        better = second.serves
    elif not second.serves:
        better = second.failed < current.failed
    else:
        better = (second.center or 0) > (current.center or 0) and not _ties(current, second, TIE_BAND, CONFIDENCE)
    return replace(choice, chosen=second, reason=Reason.ONE_REQUEST) if better else choice


@dataclass(frozen=True)
class Review:
    """A stored tuning read back: every candidate's trial (an older tuning's second stage
    last, as `one_request`), the choice made from them, and what the memory probe found."""

    tuning: StoredTuning
    slo: SLO | None
    trials: tuple[Trial, ...]
    choice: Choice
    one_request: Trial | None


def slow_cost(found: list[Trial], chosen: Trial, slow: Mapping[str, int], weights: Mapping[str, int],
              concurrency: int, rate: float | None, ruled_out: OneWorkerBound | None = None) -> SlowCost | None:
    """What one slow request cost the other visitors (analysis/slow_requests.py): the
    one-process candidate's figures on the mix — the chosen one if it is of one process —
    and the chosen pool's when it is larger; None when no candidate met a slow request.
    `slow`: the mix's slow URLs ({path: hold, ms}); `weights`: every URL's ({path: weight});
    the question's clients, or its rate; `ruled_out`: why one worker was not measured
    (`one_worker_ruled_out`)."""
    if not slow or not any(t.slow_runs for t in found):
        return None
    hold_ms = max(slow.values())
    share = slow_requests.share(weights, slow)
    behind = slow_requests.behind(concurrency, rate, hold_ms)
    ones = [t for t in found if t.size == 1 and t.slow_runs]
    one = chosen if chosen in ones else (ones[0] if ones else None)

    def pool(t: Trial) -> SlowPool:
        return slow_requests.pool(t.size, t.one_request, t.center, t.slow_runs, hold_ms)

    return SlowCost(hold_ms, share, behind, pool(one) if one else None,
                    pool(chosen) if chosen is not one and chosen.slow_runs else None, ruled_out)


def one_worker_ruled_out(slow: Mapping[str, int], weights: Mapping[str, int], rate: float | None,
                         slo: SLO | None) -> OneWorkerBound | None:
    """At a rate on a mix with slow requests, why a pool of one worker cannot meet the SLO
    (analysis/slow_requests.py rule 3), so that it is not measured; None when it might, or
    the question is not such a rate."""
    if rate is None or not slow or slo is None:
        return None
    return slow_requests.one_worker_bound(rate, slow_requests.share(weights, slow), max(slow.values()),
                                          slo.latency_us)


def _stopped(t: StoredTuning, found: list[Trial]) -> Choice | None:
    """A rate's tuning read back as it chose: stopped before the probe (runner/tune.py) —
    the smallest pool served the rate, or the CPU was busy without serving it — or the
    smallest that served, of one size the pool its knobs hold (a tuning stored before two
    pools of one size went to the one closing its connections)."""
    mine = [f for f in found if f.size == t.chosen_size and f.one_request == t.one_request]
    if not mine:
        return None
    if t.reason in (Reason.SMALLEST_SERVES.value, Reason.CPU_SATURATED.value):
        return Choice(mine[0], Reason(t.reason), mine[0] if mine[0].serves else None)
    if t.reason == Reason.SMALLEST_MEETS.value and mine[0].serves:
        return replace(choose(found, at_rate=True), chosen=mine[0])
    return None


def review(t: StoredTuning, candidates: list[StoredCell], second: list[StoredCell] | None) -> Review:
    """A stored tuning's trials and choice, from its candidates' run (and, for a tuning
    stored with a second stage, that run: `decide`)."""
    table = t.slo_table
    slo = SLO.from_dict(table) if table else None
    if not second:
        found = trials(candidates, t.sizes, slo, t.slow_paths)
        return Review(t, slo, tuple(found), _stopped(t, found) or choose(found, at_rate=t.rate is not None), None)
    first = {label: n for label, n in t.sizes.items() if not label.endswith(ONE_REQUEST_SUFFIX)}
    found = trials(candidates, first, slo)
    label = next((k for k in t.sizes if k.endswith(ONE_REQUEST_SUFFIX)), None)
    alt = trials(second, {label: t.sizes[label]}, slo)[0] if label is not None else None
    return Review(t, slo, tuple(found) + ((alt,) if alt else ()), decide(found, alt), alt)
