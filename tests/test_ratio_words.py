"""Ratios in the words a person reads (unit): past ten times apart a multiple ("5,620×
the p50 latency of"), never a percentage over 900 %; a latency that was a floor on a side
as the two figures ("≥ 1.0 s against 0.18 ms"); "an 89 %", "an 11 %", "a 58 %"."""

from __future__ import annotations

import random
import re

import pytest

from stackbench.analysis import stats, verdicts
from stackbench.report.text import explain, verdicts as verdicts_text
from stackbench.report.words import capacity as capacity_words, verdicts as words
from cells import stored_cell

BIG_PERCENT = re.compile(r"(\d[\d,]*)(?:\.\d+)? %")


def percentages(text: str) -> list[float]:
    return [float(m.group(1).replace(",", "")) for m in BIG_PERCENT.finditer(text)]


@pytest.mark.parametrize("ratio, said", [
    (5620.4, "5,620×"), (12.3, "12×"), (10.0, "10×"), (2.5, "2.5×"), (1.0, "1×"),
    (0.5, "1/2"), (1 / 120, "1/120"), (0.0, "0×"),
])
def test_times(ratio, said):
    assert words.times(ratio) == said


@pytest.mark.parametrize("ratio, said", [
    (1.031, "+3.1 %"), (0.55, "−45.0 %"), (9.5, "+850.0 %"), (10.0, "10×"), (5620.0, "5,620×"), (0.1, "1/10"),
    (0.002, "1/500"), (None, "?"),
])
def test_signed_is_a_multiple_past_ten_times(ratio, said):
    assert words.signed(ratio) == said


@pytest.mark.parametrize("figure, art", [
    ("89 % higher", "an"), ("8 % lower", "an"), ("11 % higher", "an"), ("18 % lower", "an"), ("80 %", "an"),
    ("800 %", "an"), ("18,000 req/s", "an"), ("11.5 %", "an"), ("58 % higher", "a"), ("1 % lower", "a"),
    ("180 %", "a"), ("110 %", "a"), ("1,100 %", "a"),
])
def test_the_article_before_a_figure_is_as_it_is_read(figure, art):
    assert words.article(figure) == art


@pytest.mark.parametrize("r, key, label, said", [
    (1.58, "throughput", "throughput", "is 58 % faster than"),
    (0.42, "throughput", "throughput", "is 58 % slower than"),
    (12.0, "throughput", "throughput", "serves 12× the throughput of"),
    (1 / 120, "throughput", "throughput", "serves 1/120 of the throughput of"),
    (1.89, "latency_p50", "p50 latency", "has an 89 % higher p50 latency than"),
    (1.11, "latency_p99", "p99 latency", "has an 11 % higher p99 latency than"),
    (0.42, "latency_p99", "p99 latency", "has a 58 % lower p99 latency than"),
    (5620.0, "latency_p50", "p50 latency", "has 5,620× the p50 latency of"),
    (3.0, "capacity", "capacity", "sustains 200 % more load than"),
    (40.0, "capacity", "capacity", "sustains 40× the load of"),
    (0.61, "cpu_per_request", "CPU per request", "uses 0.61x the CPU per request of"),
    (25.0, "memory", "peak memory", "uses 25× the memory of"),
])
def test_comparatives(r, key, label, said):
    assert words.comparative(r, key, label) == said


def test_at_least_and_at_most_as_multiples():
    assert words.comparative(15.0, "throughput", "throughput", at_least=True) == "serves at least 15× the throughput of"
    assert (words.comparative(1 / 15, "throughput", "throughput", at_least=True)
            == "serves at most 1/15 of the throughput of")


def test_an_interval_that_reaches_ten_times_makes_the_headline_a_multiple():
    assert words.ci_change(1.5, 1.2, 1.9) == "20–90 %"
    assert words.ci_change(5620.0, 3000.0, 9000.0) == "3,000–9,000×"
    assert words.ci_change(8.0, 4.0, 15.0) == "4–15×"  # 1,400 % at its top: no percentage
    assert words.ci_change(1 / 120, 1 / 200, 1 / 80) == "1/200–1/80"
    # the headline follows its interval
    assert words.comparative(8.0, "throughput", "throughput", multiple=words.far(8.0, 4.0, 15.0)) == \
        "serves 8× the throughput of"


def test_no_percentage_over_a_thousand_whatever_the_ratio():
    rng = random.Random(7)
    for _ in range(2000):
        r = 10 ** rng.uniform(-5, 5)
        lo, hi = sorted((r * 10 ** rng.uniform(-1, 0), r * 10 ** rng.uniform(0, 1)))
        for key, label in (("throughput", "throughput"), ("latency_p50", "p50 latency"), ("capacity", "capacity"),
                           ("memory", "peak memory")):
            text = " ".join((words.comparative(r, key, label, multiple=words.far(r, lo, hi)),
                             words.ci_change(r, lo, hi), words.signed(r), words.signed(lo), words.signed(hi)))
            assert all(p <= 1000 for p in percentages(text)), text
            assert "100 % slower" not in text or r > 0.005  # a side at 1/200 is no "100 % slower"


WINDOW_US = 1_000_000


def _cell(seq, label, rps, *, completed=None, p50=180, p99=400, unserved=0, caveats=()):
    return stored_cell(seq=seq, stack_label=label, requests_per_s=rps,
                       requests_completed=int(rps) if completed is None else completed,
                       latency_p50_us=p50, latency_p99_us=p99, connections_measured=16,
                       connections_without_response=unserved, duration_us=WINDOW_US, caveats=list(caveats),
                       engine={"config": {"timeout_us": 10_000_000, "duration_us": WINDOW_US}})


def test_a_verdict_thousands_of_times_apart_reads_as_a_multiple_and_its_floors_as_figures():
    """nginx served 5,000 a second at 0.18 ms; the other stack served 4 of its 16 clients
    in a 1 s window (a turn every 4 s: the 12 still waiting are slow, not held back) — its
    p50 is the window, a floor. Its throughput is 1/1,250 of nginx's, said so; its p50 is no
    ratio but the two figures."""
    base = [_cell(i, "nginx", 5000.0 + i * 7, p50=180 + i) for i in range(5)]
    slow = [_cell(10 + i, "slow", 4.0 + 0.01 * i, completed=4, p50=900_000, p99=950_000, unserved=12,
                  caveats=[{"code": "clients_unserved", "params": {"without_response": 12, "connections": 16}}])
            for i in range(5)]
    vs = verdicts.decide(base + slow, "nginx")
    (v,) = vs.for_metric("throughput")
    assert v.kind == stats.Verdict.LOWER.value and v.candidate_side.failed == 0
    line = verdicts_text.headline(v, vs.band)
    assert line.startswith("slow serves 1/1,2") and "of the throughput of nginx (" in line, line
    assert "CI 1/1,2" in line and all(p <= 1000 for p in percentages(line)), line
    also = [words.aside(x) for x in vs.asides(v)]
    assert "has a p50 latency of ≥ 1.0 s against 0.18 ms" in also, also
    assert not any(percentages(a) for a in also), also


def test_explain_says_a_change_ten_times_apart_as_a_multiple():
    assert explain._delta(0.18, 1000.0) == "5,556×"
    assert explain._delta(100.0, 103.1) == "+3.1 %"
    assert explain._delta(0.0, 5.0) == "-"


def test_a_capacity_forty_times_apart_is_a_multiple():
    """Edges compared on their probes: the capacity sentence's own words, as a multiple."""
    from stackbench.analysis import capacity_edge
    from stackbench.analysis.questions import Question

    c = stats.Comparison(12, 12, 40.0, 30.0, 55.0, 0.001, 0.001, stats.Verdict.HIGHER, None,
                         test=capacity_edge.TEST)
    v = verdicts.Verdict(Question("php-hello", 0, True), verdicts.METRIC["throughput"], "a", "b", c, (), ())
    assert capacity_words.sentence(v).startswith("b sustains 40× the load of a within the target (95 % CI 30–55×;")


def test_a_capacity_interval_held_at_a_served_rate_names_the_fit_only_when_the_capacity_moved():
    """capacity_results.capped: a fit above every met probe's served rate is held there
    and the fit named beside it; a fit whose interval alone reached past it keeps its
    capacity, and naming "the fit" then repeats the capacity as if it were another figure
    (the capacity quick form: "11,684 req/s … (fitted 11,684)")."""
    from stackbench.analysis.capacity_edge import Edge
    from stackbench.analysis.capacity_results import StackCapacity, capped

    data = ((9000.0, True), (12000.0, False))
    top_only = capped(Edge(11684.0, 9970.0, 12500.0, 0.05, data), [11974.0])
    moved = capped(Edge(12300.0, 11000.0, 12800.0, 0.05, data), [11974.0])
    assert top_only is not None and moved is not None
    said_top = capacity_words.ci(StackCapacity("a", "php-hello", True, 1, top_only, None, None, ("budget",)))
    said_moved = capacity_words.ci(StackCapacity("a", "php-hello", True, 1, moved, None, None, ("budget",)))
    assert said_top == "9,970–11,974 req/s, its top held at what a probe served", said_top
    assert said_moved == "11,000–11,974 req/s, held at what a probe served (fitted 12,300)", said_moved
    assert capacity_words.capacity(StackCapacity("a", "php-hello", True, 1, moved, None, None, ())) == "11,974 req/s"
