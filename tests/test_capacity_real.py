"""The capacity search with the real load engine against a server whose capacity is
known (tests/knee_server.py: instant up to CAPACITY requests/s, 30 ms above): the
bracket it finds and the edge fitted to its probes (with its interval) must contain
that rate."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from stackbench import engine
from stackbench.analysis import capacity, capacity_edge
from stackbench.analysis.capacity import SLO, Search, SearchParams
from stackbench.engine import LoadSpec
from stackbench.states import CellStatus
from stackbench.upkeep.ports import free_port

# Seconds each (simulations, the real engine, namespaces): left out of `make check`.
pytestmark = pytest.mark.slow

CAPACITY = 400.0
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def knee():
    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "tests.knee_server", str(port), str(CAPACITY)], cwd=ROOT,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.kill()
        proc.wait()


def test_capacity_search_finds_a_known_capacity_with_the_real_engine(knee):
    slo = SLO({"99": 10_000}, errors=0)
    search = Search(SearchParams(start=50, precision=0.05, confirm=0, edge=8))
    walked = []
    while (rate := search.next_rate()) is not None:
        spec = LoadSpec(url=knee, connections=capacity.open_loop_connections(rate, 0.01), rate=rate,
                        duration_s=0.7, warmup_s=0.2)
        result = engine.run(spec, [1])
        check = capacity.check(CellStatus.OK, None, result, slo)
        search.record(rate, check.met, check.generator_limited)
        walked.append((rate, result.latency.p99_us, check.met))
    edge = capacity_edge.fit((rate, met) for rate, _, met in walked)
    print("walked", walked, "bracket", search.low, search.high, "edge", edge.rate, edge.low, edge.high)
    assert search.stopped == "converged" and search.edge_probes == 8, walked
    # The fitted capacity: within 3 % of the knee, its 95 % interval covering it.
    assert abs(edge.rate / CAPACITY - 1) < 0.03 and edge.low <= CAPACITY * 1.02 and edge.high >= CAPACITY * 0.98
    # The window's arrival count is exact to one request: the knee is sharp to ~1 %.
    assert search.low <= CAPACITY * 1.02 and search.high >= CAPACITY * 0.98, walked
    assert (search.high - search.low) / search.low <= 0.06, walked
    assert all(met for rate, _, met in walked if rate <= CAPACITY * 0.95), walked
    assert not any(met for rate, _, met in walked if rate >= CAPACITY * 1.05), walked
