"""What an open-loop probe served, against what it offered: a rate counts only if it was
served (docs/methods/capacity.md).

Why a latency SLO alone is not enough. Above a stack's capacity c, a probe at rate r grows a
queue of (r − c) requests a second; its newest request waits (r − c)·T/c at the end of a
probe of T seconds, and the p99 stays within an SLO of S until that wait passes S. php-sleep
on 4 PHP-FPM workers (at most 80 requests/s) met p99 ≤ 1 s at 89 and 94 req/s offered in
5 s probes while serving 78 (bench/RESULTS.md, "A rate counts only if it was served"). So a
probe must also show it kept up:

- **Served share**: the requests it completed against those it could have completed. In a
  steady state, Little's law (L = λW) says λ·W of the offered requests are still in flight
  when the window ends, W the response time; so the requests answerable within the window
  are `due − λ·W`. W is the response time before any queue could grow (the lowest of the
  per-second median latencies in the window's first third): a growing queue raises the
  later requests' latency, not the first ones', and in a 12 s probe 4 % over capacity the
  first third's own median had already tripled. Met needs the share at `SERVED_SHARE` (97 %) or more: at
  the php-sleep ceiling a probe 4 % over it completes 95 % of what it could.
- **No growing queue**: the median latency of the window's last third against its first.
  A queue that grows raises it by the wait it adds; a steady stack's medians move with
  noise — WordPress at 6 pages a second on half a core read per-second medians of 41–153
  ms in one steady 16 s probe (p99 218 ms), a first third of 54 ms and a last of 104.
  Growing = the last third's median is both `GROWTH_RATIO` times the first's and more than
  `GROWTH_BUDGET_SHARE` of the SLO's budget above it: a queue that has eaten a quarter of
  the budget within one probe is on its way past the SLO, and a fast page's jitter of a
  fraction of a millisecond is never growth. Smaller growth is the served share's to see.
- **Served rate**: completions over the window — the figure a user sees in the probe's
  row, and the one a capacity may never exceed (capacity_results: the clamp).

A merged result of several clients has no per-second percentiles: its growth is not
computable (None) and only the share judges it. Pure; None = not computable.

**Visits** (an open loop of visits: `rate` visits a second, docs/methods/capacity.md,
"Visits"): the engine schedules visits, not requests — a visit's later pages come a think
time after its earlier ones end. The probe's engine warms up for about a visit's length
first (runner/visits.py), so the visits begun before the window view their later pages in
it and the window's pages come at their steady rate: the visits due in it times the pages
a visit of the journey is expected to view. The served share is of those pages, the
steady response time allowed for as above; the served rate is in visits a second (the
pages served a second over the pages a visit), the unit the probe was offered in.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from stackbench.engine.result import EngineResult, Second

SERVED_SHARE = 0.97
GROWTH_RATIO = 2.0
GROWTH_BUDGET_SHARE = 0.25


@dataclass(frozen=True)
class Served:
    offered_per_s: float  # requests (of visits: visits) due a second over the window
    served_per_s: float  # requests completed a second over the window (of visits: pages / pages a visit)
    share: float  # completed / answerable (may exceed 1 by a request or two)
    response_us: int | None  # the steady response time W the share allowed for
    first_p50_us: int | None  # the median latency of the window's first third
    last_p50_us: int | None  # … and of its last third

    def growing(self, budget_us: int) -> bool:
        """The queue grew over the window (the module docstring's rule); False when not
        computable."""
        a, b = self.first_p50_us, self.last_p50_us
        if a is None or b is None:
            return False
        return b > GROWTH_RATIO * a and b - a > GROWTH_BUDGET_SHARE * budget_us


def of(result: EngineResult) -> Served | None:
    """What an open-loop result served; None for a closed loop (nothing was due) or an
    empty window."""
    if result.visits is not None:
        return _visits(result)
    due = result.requests.due
    window_s = result.duration_us / 1e6
    if not due or window_s <= 0:
        return None
    completed = result.requests.completed
    offered = due / window_s
    first, last = _thirds(result.timeline, window_s)
    response = _earliest(result.timeline, window_s)
    response = response if response is not None else result.latency.p50_us
    in_flight = offered * (response or 0) / 1e6
    answerable = max(due - in_flight, 1.0)
    return Served(offered, completed / window_s, completed / answerable, response, first, last)


def _visits(result: EngineResult) -> Served | None:
    """What an open loop of visits served (the module docstring's "Visits")."""
    v, pages = result.visits, result.pages
    window_s = result.duration_us / 1e6
    assert v is not None
    if not v.due or not v.expected_pages or window_s <= 0:
        return None
    completed = pages.completed if pages is not None else 0
    offered = v.due / window_s
    first, last = _thirds(result.timeline, window_s)
    response = _earliest(result.timeline, window_s)
    response = response if response is not None else (pages.load_p50_us if pages is not None else None)
    due_pages = v.due * v.expected_pages
    answerable = max(due_pages - offered * v.expected_pages * (response or 0) / 1e6, 1.0)
    return Served(offered, completed / v.expected_pages / window_s, completed / answerable, response, first, last)


def _thirds(timeline: tuple[Second, ...], window_s: float) -> tuple[int | None, int | None]:
    """The request-weighted median latency (of the seconds' medians) of the window's first
    and last thirds, in whole seconds: the first third is at least the first second, the
    last third the seconds starting at or after two thirds of the window (at least the last
    whole one)."""
    seconds = sorted((s for s in timeline if s.requests and s.p50_us is not None), key=lambda s: s.t_s)
    if len(seconds) < 2:
        return None, None
    cut_first = max(1.0, window_s / 3)
    cut_last = min(math.floor(2 * window_s / 3), math.floor(window_s) - 1)
    first = [s for s in seconds if s.t_s + 1 <= cut_first] or seconds[:1]
    last = [s for s in seconds if s.t_s >= cut_last and s.t_s not in {f.t_s for f in first}]
    if not last:
        return None, None
    return _weighted_median(first), _weighted_median(last)


def _earliest(timeline: tuple[Second, ...], window_s: float) -> int | None:
    """The lowest per-second median latency of the window's first third (at least its
    first second with responses): the steady response time before a queue grew."""
    seconds = sorted((s for s in timeline if s.requests and s.p50_us is not None), key=lambda s: s.t_s)
    if not seconds:
        return None
    cut = max(1.0, window_s / 3)
    early = [s.p50_us for s in seconds if s.t_s + 1 <= cut and s.p50_us is not None]
    return min(early) if early else seconds[0].p50_us


def _weighted_median(seconds: list[Second]) -> int | None:
    pairs = sorted((s.p50_us, s.requests) for s in seconds if s.p50_us is not None)
    total = sum(n for _, n in pairs)
    if not total:
        return None
    acc = 0
    for value, n in pairs:
        acc += n
        if 2 * acc >= total:
            return value
    return pairs[-1][0]
