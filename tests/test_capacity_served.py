"""A rate counts only if it was served (analysis/capacity_served.py), on a stack whose
ceiling is known by construction: php-sleep (50 ms a request) on N PHP-FPM workers serves
at most N / 0.05 s a second. Here the stack is a queue simulated exactly (arrivals at the
open loop's fixed intervals, N servers, FIFO), turned into the engine's document; the real
servers' case is tests/test_capacity_ground_truth_real.py."""

from __future__ import annotations

import heapq
import math

import pytest

from stackbench.analysis import capacity, capacity_edge, capacity_served
from stackbench.analysis.capacity import SLO, Search, SearchParams
from stackbench.analysis.capacity_results import capped
from stackbench.engine.result import EngineResult, Second
from stackbench.states import CellStatus

SERVICE_S = 0.0503  # usleep(50 ms) and PHP-FPM's own work


def php_sleep_probe(workers: int, rate: float, window_s: float, service_s: float = SERVICE_S) -> EngineResult:
    """The engine's document of an open-loop probe of php-sleep on `workers` workers."""
    due = int(rate * window_s)
    free = [0.0] * workers
    heapq.heapify(free)
    done: list[tuple[float, float]] = []  # (completion, latency)
    for i in range(due):
        arrive = i / rate
        start = max(arrive, heapq.heappop(free))
        end = start + service_s
        heapq.heappush(free, end)
        done.append((end, end - arrive))
    completed = [(end, lat) for end, lat in done if end <= window_s]
    seconds = []
    for t in range(math.ceil(window_s)):
        lats = sorted(lat for end, lat in completed if t <= end < t + 1)
        if lats:
            seconds.append({"t_s": t, "requests": len(lats), "errors": 0,
                            "p50_us": int(lats[len(lats) // 2] * 1e6), "p99_us": int(lats[int(len(lats) * 0.99)] * 1e6)})
    lats = sorted(lat for _, lat in completed)
    in_flight = due - len(completed)
    oldest = max((window_s - i / rate for i in range(due) if done[i][0] > window_s), default=None)
    return EngineResult.from_doc({
        "schema_version": 1, "started_unix_us": 1, "duration_us": int(window_s * 1e6),
        "requests_per_s": len(completed) / window_s, "config": {"rate": rate},
        "requests": {"completed": len(completed), "ok_2xx": len(completed), "non_2xx": 0, "failed": 0, "due": due,
                     "not_sent": 0, "in_flight_at_end": in_flight,
                     "in_flight_oldest_us": None if oldest is None else int(oldest * 1e6)},
        "latency_us": {"mean": sum(lats) / len(lats) * 1e6,
                       "percentiles": {"50": int(lats[len(lats) // 2] * 1e6), "99": int(lats[int(len(lats) * 0.99)] * 1e6)}},
        "connections_without_response": 0, "engine_cpu": {"saturated": False}, "timeline": seconds,
        "warnings": [], "warning_codes": []})


SLO_1S = SLO({"99": 1_000_000}, errors=0)


def test_a_latency_slo_alone_reads_rates_above_the_ceiling_as_met():
    # What the served share is for: at 89 and 94 req/s offered, 4 workers (80/s at most)
    # serve ~79.5/s, and the queue has not yet pushed p99 past 1 s when a 5 s probe ends.
    for rate in (89, 94):
        probe = php_sleep_probe(4, rate, 5.0)
        assert probe.latency.p99_us < 1_000_000
        assert probe.requests_per_s < 80
        got = capacity.check(CellStatus.OK, None, probe, SLO_1S)
        assert not got.met
        assert any(r.startswith("served ") and "offered" in r for r in got.reasons), got.reasons


@pytest.mark.parametrize("workers", [4, 8])
def test_rates_under_the_ceiling_meet_it_and_rates_over_it_do_not(workers):
    ceiling = workers / SERVICE_S
    for share in (0.5, 0.8, 0.9, 0.95, 0.97):
        rate = round(share * ceiling)
        window = capacity.probe_seconds(rate, 5.0)
        got = capacity.check(CellStatus.OK, None, php_sleep_probe(workers, rate, window), SLO_1S)
        assert got.met, (rate, got.reasons)
    for share in (1.04, 1.1, 1.2, 1.5):
        rate = round(share * ceiling)
        got = capacity.check(CellStatus.OK, None, php_sleep_probe(workers, rate, 5.0), SLO_1S)
        assert not got.met, rate


@pytest.mark.parametrize("workers", [4, 8])
def test_the_search_finds_the_known_ceiling_and_never_reports_above_what_was_served(workers):
    ceiling = workers / 0.05  # the acceptance's bound: N / 0.05 s
    search = Search(SearchParams(start=20, precision=0.05, edge=8))
    probes = []
    while (rate := search.next_rate()) is not None:
        r = php_sleep_probe(workers, rate, capacity.probe_seconds(rate, 5.0))
        got = capacity.check(CellStatus.OK, None, r, SLO_1S)
        search.record(rate, got.met)
        probes.append((rate, got.met, r.requests_per_s))
    edge = capped(capacity_edge.fit((rate, met) for rate, met, _ in probes),
                  [served if met else None for _, met, served in probes])
    served = max(s for _, met, s in probes if met)
    assert edge is not None and 0.85 * ceiling <= edge.rate <= 1.03 * ceiling, probes
    assert edge.rate <= served and edge.high is not None and edge.high <= served


def test_a_growing_queue_is_named_and_a_noisy_steady_one_is_not():
    # 4 % over the ceiling for 12 s: the queue's wait passes a quarter of a 1 s budget
    probe = php_sleep_probe(4, 83, 12.0, service_s=0.05)
    s = capacity_served.of(probe)
    assert s is not None and s.first_p50_us is not None and s.last_p50_us is not None
    assert s.last_p50_us > 2 * s.first_p50_us and s.growing(1_000_000) and s.share < 0.97
    steady = capacity_served.of(php_sleep_probe(4, 70, 12.0, service_s=0.05))
    assert steady is not None and not steady.growing(1_000_000) and steady.share >= 0.99
    # WordPress at 6.25 pages/s on half a core, steady (p99 218 ms): its per-second medians
    # as the engine gave them, 41–153 ms — noise, not growth, against p99 <= 500 ms
    medians = [50175, 49151, 79871, 81407, 53759, 95743, 55807, 50943, 47359, 54783, 116223, 104447, 99839,
               152575, 57599, 40959]
    counts = [6, 7, 6, 6, 6, 7, 6, 6, 6, 6, 6, 6, 5, 9, 6, 6]
    timeline = tuple(Second(t, n, 0, m, m) for t, (n, m) in enumerate(zip(counts, medians)))
    first, last = capacity_served._thirds(timeline, 16.0)
    noisy = capacity_served.Served(6.25, 6.25, 1.0, first, first, last)
    assert first is not None and last is not None and last > 1.5 * first and not noisy.growing(500_000)


def test_what_is_not_computable_is_none():
    closed = EngineResult.from_doc({"schema_version": 1, "started_unix_us": 1, "duration_us": 1_000_000,
                                    "requests_per_s": 10, "requests": {"completed": 10, "ok_2xx": 10, "non_2xx": 0,
                                                                       "failed": 0},
                                    "latency_us": None, "warnings": [], "warning_codes": []})
    assert capacity_served.of(closed) is None
    short = capacity_served.of(php_sleep_probe(4, 40, 0.9))
    assert short is not None and short.first_p50_us is None and not short.growing(1_000)


def test_a_probe_holds_a_hundred_responses_or_five_budgets():
    assert capacity.probe_seconds(6.25, 2.5) == 16.0
    assert capacity.probe_seconds(80, 5.0) == 5.0
    assert capacity.probe_seconds(30, 2.5) == 3.4


def test_a_bracket_an_unlucky_miss_put_far_below_the_edge_is_walked_out_of():
    # Apache at 1,000/s stalled while its children spawned, then one p99 blip at 500/s: the
    # bracket sits at a third of the true edge (1,500/s). The series' steps double along a
    # run of meets and halve at a reversal, so it ends probing around the edge.
    s = Search(SearchParams(start=1000, precision=0.05, edge=10))
    unlucky = {1000.0: False, 500.0: False}
    walked = []
    while (rate := s.next_rate()) is not None:
        met = unlucky.pop(rate) if rate in unlucky else rate <= 1500
        s.record(rate, met)
        walked.append(rate)
    assert max(walked) > 1500 and 1000 <= walked[-1] <= 2000, walked
    edge = capacity_edge.fit((p.rate, p.met) for p in s.probes)
    assert edge is not None and 1000 < edge.rate < 2300, walked
