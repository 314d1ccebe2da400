"""A capacity in visits (analysis/capacity_served.py, "Visits"; docs/methods/capacity.md):
a probe of open-loop visits meets a visit rate only if the pages its visits were due to
ask in the window were served. Ground truth by construction: php-sleep (50 ms a page) on N
PHP-FPM workers, a visit K pages of it with a fixed think time and no assets, serves at
most N / 0.05 / K visits a second. The stack is a queue simulated exactly (visits at the
open loop's fixed intervals, each page a think time after the last one ended, N servers,
FIFO), turned into the engine's document; the real servers' case is
tests/test_capacity_visits_real.py."""

from __future__ import annotations

import heapq
import math

import pytest

from stackbench.analysis import capacity, capacity_served
from stackbench.analysis.capacity import SLO
from stackbench.engine.result import EngineResult
from stackbench.planning import visits as visits_plan
from stackbench.runner import visits as visits_runner
from stackbench.states import CellStatus

SERVICE_S = 0.0503  # usleep(50 ms) and PHP-FPM's own work
SLO_1S = SLO({"99": 1_000_000}, errors=0)


def visit_probe(workers: int, rate: float, pages: int, think_s: float, window_s: float, warmup_s: float,
                not_started: int = 0) -> EngineResult:
    """The engine's document of an open-loop probe of `rate` visits a second, each `pages`
    pages of php-sleep `think_s` apart, on `workers` workers: `warmup_s` of the engine's
    warm-up, then the measured `window_s` (the engine's counting: loadgen/README.md, "Visits")."""
    end_s = warmup_s + window_s
    free = [0.0] * workers
    arrivals = [(i / rate, i, 0) for i in range(int(rate * end_s))]
    heapq.heapify(arrivals)
    views: list[tuple[float, float, float]] = []  # (wanted, done, load) of every page view
    while arrivals:
        wanted, visit, k = heapq.heappop(arrivals)
        if wanted >= end_s:
            continue
        start = max(wanted, heapq.heappop(free))
        done = start + SERVICE_S
        heapq.heappush(free, done)
        views.append((wanted, done, done - wanted))
        if k + 1 < pages and done + think_s < end_s:
            heapq.heappush(arrivals, (done + think_s, visit, k + 1))
    measured = [(w, d, lat) for w, d, lat in views if w >= warmup_s and d <= end_s]
    lats = sorted(lat for _, _, lat in measured) or [0.0]
    seconds = []
    for t in range(math.ceil(window_s)):
        mine = sorted(lat for _, d, lat in measured if warmup_s + t <= d < warmup_s + t + 1)
        if mine:
            seconds.append({"t_s": t, "requests": len(mine), "errors": 0, "p50_us": int(mine[len(mine) // 2] * 1e6),
                            "p99_us": int(mine[int(len(mine) * 0.99)] * 1e6)})
    due = sum(1 for i in range(int(rate * end_s)) if i / rate >= warmup_s)
    pct = {"50": int(lats[len(lats) // 2] * 1e6), "99": int(lats[int(len(lats) * 0.99)] * 1e6)}
    journey = {"steps": [{"page": "/sleep.php"} for _ in range(pages)], "think": {"kind": "fixed", "ms": think_s * 1e3}}
    return EngineResult.from_doc({
        "schema_version": 1, "started_unix_us": 1, "duration_us": int(window_s * 1e6),
        "requests_per_s": len(measured) / window_s, "config": {"rate": rate, "journey": journey},
        "requests": {"completed": len(measured), "ok_2xx": len(measured), "non_2xx": 0, "failed": 0,
                     "due": None, "not_sent": None, "in_flight_at_end": 0, "in_flight_oldest_us": None},
        "latency_us": {"mean": sum(lats) / len(lats) * 1e6, "percentiles": pct},
        "pages": {"completed": len(measured), "failed": 0, "per_s": len(measured) / window_s},
        "page_load_us": {"percentiles": pct},
        "visits": {"completed": 0, "failed": 0, "in_flight_at_end": 0, "due": due, "not_started": not_started,
                   "started_late": 0, "pages": 0, "requests": 0},
        "connections_without_response": 0, "engine_cpu": {"saturated": False}, "timeline": seconds,
        "warnings": [], "warning_codes": []})


VISIT = visits_plan.Visit(tuple(visits_plan.Step((visits_plan.Option("/sleep.php"),)) for _ in range(3)),
                          visits_plan.Think("fixed", 0.5))


def test_a_visits_pages_and_thinks_are_what_the_engine_makes_of_them():
    assert VISIT.pages_a_visit() == 3 and VISIT.thinks_a_visit() == 2 and VISIT.php_a_visit(0.1) == pytest.approx(3.3)
    # the longest such visit with each page at a 1 s SLO: two thinks and three pages
    assert VISIT.lead_s(1.0, 0.0) == pytest.approx(2 * 0.5 + 3 * 1.0)
    # a logged-in visitor thinks before the login's post and before the first page too
    assert VISIT.thinks_a_visit(1.0) == 4 and VISIT.lead_s(1.0, 1.0) == pytest.approx(4 * 0.5 + 6 * 1.0)
    leave = visits_plan.Visit((visits_plan.Step((visits_plan.Option("/"),)),
                               visits_plan.Step((visits_plan.Option("/a", 3), visits_plan.Option(None, 1)))),
                              visits_plan.Think("exponential", 2.0, max_s=4.0))
    assert leave.pages_a_visit() == pytest.approx(1.75) and leave.thinks_a_visit() == 1
    assert leave.think.long_s() == 4.0  # 3 × the mean, at most the cap
    slots, window, lead = visits_runner.probe_load(VISIT, 20.0, 0.0, 1.0, 5.0)
    # ~100 pages in the window (60 pages/s: 5 s is more); twice the visits a visit's length holds
    assert window == 5.0 and lead == 4.0 and slots == 161


@pytest.mark.parametrize("workers", [4, 8])
def test_a_probe_of_visits_meets_a_rate_only_under_the_ceiling_in_visits(workers):
    ceiling = workers / SERVICE_S / 3  # visits a second: N / 0.05 s / K pages
    lead = VISIT.lead_s(1.0, 0.0)
    for share in (0.7, 0.9):
        r = visit_probe(workers, share * ceiling, 3, 0.5, 6.0, lead)
        check = capacity.check(CellStatus.OK, None, r, SLO_1S)
        assert check.met, (share, check.reasons)
        # served in visits: the pages served over the pages a visit
        assert check.visits_served_per_s == pytest.approx(share * ceiling, rel=0.05)
    for share in (1.06, 1.15):
        r = visit_probe(workers, share * ceiling, 3, 0.5, 6.0, lead)
        check = capacity.check(CellStatus.OK, None, r, SLO_1S)
        assert not check.met, share
        assert check.visits_served_per_s is not None and check.visits_served_per_s <= ceiling * 1.02
        assert any("visits/s offered" in why for why in check.reasons), check.reasons


def test_without_the_warm_up_a_probe_that_keeps_up_would_read_as_not_served():
    """The pages due in the window are its visits' pages only once the visits begun before
    it have reached their later pages: from a cold start, the window holds a visit's first
    pages but not yet all its later ones, and the count would call a stack that keeps up
    short (what runner/visits.py's warm-up is for)."""
    ceiling = 4 / SERVICE_S / 3
    cold = capacity_served.of(visit_probe(4, 0.7 * ceiling, 3, 0.5, 6.0, 0.0))
    warm = capacity_served.of(visit_probe(4, 0.7 * ceiling, 3, 0.5, 6.0, VISIT.lead_s(1.0, 0.0)))
    assert cold is not None and warm is not None
    assert cold.share < capacity_served.SERVED_SHARE <= warm.share


def test_visits_never_started_fail_a_probe_and_the_slo_is_the_page_loads():
    ceiling = 4 / SERVICE_S / 3
    r = visit_probe(4, 0.7 * ceiling, 3, 0.5, 6.0, VISIT.lead_s(1.0, 0.0), not_started=9)
    check = capacity.check(CellStatus.OK, None, r, SLO_1S)
    assert not check.met and any("due visits never started (every visitor busy)" in why for why in check.reasons)
    tight = capacity.check(CellStatus.OK, None, visit_probe(4, 0.7 * ceiling, 3, 0.5, 6.0, 4.0),
                           SLO({"99": 40_000}, errors=0))  # a page takes 50 ms: p99 ≤ 40 ms is never met
    assert not tight.met and any(why.startswith("p99 ") for why in tight.reasons)


def test_the_pages_due_the_result_reckons_from_the_journey_are_the_plans_pages_a_visit():
    """Two readings of one visit: the plan's (Visit.pages_a_visit: what a sizing tunes and
    counts hits with) and the result's, from the journey the lab sent the engine (the pages
    a probe's visits are due to ask): they must agree, or a probe is judged on other pages."""
    from stackbench import workloads
    from stackbench.engine.result import Visits

    site = workloads.get("wordpress-home")
    leave = visits_plan.Visit((visits_plan.Step((visits_plan.Option("/"),)),
                               visits_plan.Step((visits_plan.Option("/a", 3), visits_plan.Option(None, 1))),
                               visits_plan.Step((visits_plan.Option("/b", 1), visits_plan.Option("/c", 1),
                                                 visits_plan.Option(None, 2)))),
                              visits_plan.Think("fixed", 0.5))
    for visit in (VISIT, leave):
        sent = visits_runner.journey(visit, site).as_json()
        assert Visits.from_doc({"visits": {"completed": 0}, "config": {"journey": sent}}).expected_pages == \
            pytest.approx(visit.pages_a_visit())
    assert leave.pages_a_visit() == pytest.approx(1 + 0.75 + 0.75 * 0.5)
