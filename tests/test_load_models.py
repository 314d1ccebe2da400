"""Load models (tier 1 and 2): plan keys, the capacity search as a pure algorithm, and
walks, rate sweeps and searches through the runner with a fake stack and engine."""

from __future__ import annotations

import io
import random
import tomllib

import pytest

from stackbench import runner
from stackbench.planning import loads, plan as plan_mod
from stackbench.analysis import capacity, capacity_edge, capacity_results, curves, questions
from stackbench.analysis.capacity import SLO, Search, SearchParams
from stackbench.engine import EngineResult
from stackbench.errors import PlanError
from stackbench.states import CellStatus
from stackbench.upkeep.pinning import Pinning
from stackbench.analysis.run import analyze
from stackbench.report.text import run_report
from stackbench.store import Store
from tests.test_runner_order import lab  # noqa: F401  (the fake Lab fixture)

STACKS = '[[stacks]]\nid = "nginx-fpm"\nlabel = "A"\n[[stacks]]\nid = "apache-prefork-modphp"\nlabel = "B"\n'


def parse(text: str) -> plan_mod.Plan:
    return plan_mod.parse(tomllib.loads(text), "test.toml")


# -- plan keys ----------------------------------------------------------------------

def test_rate_plan_sizes_connections_and_keeps_rates():
    p = parse('load = "rate"\nrate = [2000, 500]\nkeepalive = [true]\nworkloads = ["php-hello"]\n' + STACKS)
    cells = plan_mod.expand(p)
    assert [(c.rate, c.load) for c in cells[:2]] == [(500.0, "rate"), (2000.0, "rate")]
    # rate × 2 × 50 ms, and never fewer than rate × 2 ms + 1
    assert [c.concurrency for c in cells[:2]] == [50, 200]
    assert p.restart == "cell" and cells[0].step is None


def test_updown_ramp_walks_up_then_down_on_one_start_per_keepalive_mode():
    p = parse('concurrency = [1, 16, 64]\nramp = "updown"\nkeepalive = [true, false]\nworkloads = ["php-hello"]\n'
              + STACKS)
    assert p.restart == "stack"  # a ramp lives on one running stack unless the plan says otherwise
    a = [c for c in plan_mod.expand(p) if c.stack.label == "A"]
    assert [(c.level(), c.keepalive, c.step) for c in a[:5]] == [
        ("c=1 up", True, 0), ("c=16 up", True, 1), ("c=64 up", True, 2), ("c=16 down", True, 3), ("c=1 down", True, 4)]
    assert [c.keepalive for c in a[5:]] == [False] * 5
    assert len({p.start_key(c) for c in a}) == 2  # one start per walk


def test_stages_take_their_own_durations_and_mix_closed_and_open_steps():
    p = parse('load = "stages"\nstages = [{ duration = "2s", concurrency = 4 }, { duration = "500ms", rate = 300 }]\n'
              'keepalive = [true]\nworkloads = ["php-hello"]\n' + STACKS)
    cells = plan_mod.expand(p)[:2]
    assert [(c.concurrency, c.rate, c.duration_s, c.step) for c in cells] == [(4, None, 2.0, 0), (30, 300.0, 0.5, 1)]
    assert p.cell_seconds(cells[0]) > p.cell_seconds(cells[1])


def test_capacity_plan_reads_slo_and_search():
    p = parse('load = "capacity"\nslo = { p99 = "10ms", "p99.9" = "50ms", unserved = 0 }\n'
              'search = { budget = "2m", precision = "3%", start = 200, max = 50000, confirm = 1 }\n'
              'keepalive = [true]\nworkloads = ["php-hello"]\nrepetitions = 2\n' + STACKS)
    m = p.load
    assert m.slo == SLO({"99": 10_000, "99.9": 50_000}, errors=0, unserved=0)
    assert (m.search.budget_s, m.search.precision, m.search.start, m.search.ceiling, m.search.confirm) == (
        120.0, 0.03, 200.0, 50000.0, 1)
    cells = plan_mod.expand(p)
    assert [c.seq for c in cells] == [0, capacity.MAX_PROBES, 2 * capacity.MAX_PROBES, 3 * capacity.MAX_PROBES]
    assert p.seconds(cells) == pytest.approx(4 * (120 + plan_mod.START_STOP_S))
    # the busiest step is at the search's ceiling, sized for the SLO's loosest latency
    assert m.max_connections() == capacity.open_loop_connections(50000, 0.05)


@pytest.mark.parametrize("text, message", [
    ('load = "open"\n', "load must be one of closed, rate, stages, capacity"),
    ('load = "rate"\n', "needs rate = [...]"),
    ('load = "rate"\nrate = [0]\n', "requests/s above 0"),
    ('load = "rate"\nrate = [100]\nconcurrency = [4]\n', "concurrency is for load = \"closed\""),
    ('rate = [100]\n', "rate is read only with load = 'rate'"),
    ('load = "rate"\nrate = [100]\nconnections = 0\n', "connections must be a whole number"),
    ('connections = 8\n', "connections is read only with"),
    ('ramp = "sideways"\n', "ramp must be one of up, down, updown, shuffled"),
    ('ramp = "up"\norder = "ascending"\n', "ramp and order say the same thing"),
    ('load = "stages"\n', "needs stages = ["),
    ('load = "stages"\nstages = [{ duration = "1s" }]\n', "exactly one of concurrency"),
    ('load = "stages"\nstages = [{ duration = "1s", concurrency = 2, rate = 5 }]\n', "exactly one of concurrency"),
    ('load = "stages"\nstages = [{ concurrency = 2 }]\n', "needs a duration"),
    ('load = "stages"\nstages = [{ duration = "1s", conc = 2 }]\n', "has no key 'conc'"),
    ('load = "stages"\nstages = [{ duration = "1s", concurrency = 2 }]\nrestart = "cell"\n', "one stack start"),
    ('load = "stages"\nstages = [{ duration = "1s", concurrency = 2 }]\nramp = "down"\n', "stages run in the order"),
    ('load = "capacity"\n', "needs slo = {"),
    ('load = "capacity"\nslo = { p97 = "5ms" }\n', "slo has no key 'p97'"),
    ('load = "capacity"\nslo = { errors = 0 }\n', "needs a latency target"),
    ('load = "capacity"\nslo = { p99 = "soon" }\n', "slo.p99: not a duration"),
    ('load = "capacity"\nslo = { p99 = "5ms", errors = -1 }\n', "slo.errors takes a whole number"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nsearch = { budget = "1s" }\n', "at least 10s"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nsearch = { start = 10, min = 20 }\n', "must lie between"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nsearch = { factor = 1 }\n', "search.factor"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nsearch = { speed = 1 }\n', "search has no key 'speed'"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nrequests = 100\n', "use duration, not requests"),
    ('load = "capacity"\nslo = { p99 = "1s" }\nduration = "2s"\n', "a probe must last at least 5 of it (5s)"),
    ('load = "capacity"\nslo = { p99 = "5ms" }\nramp = "up"\n', "the search picks its rates"),
    ('slo = { p99 = "5ms" }\n', "slo is read only with load = 'capacity'"),
    ('search = { budget = "1m" }\n', "search is read only with"),
    ('concurrency = [300000]\n', "whole numbers from 1 to 100,000"),
])
def test_bad_load_keys_say_what_is_wrong(text, message):
    with pytest.raises(PlanError) as e:
        parse(text + STACKS)
    assert message in e.value.message


def test_machine_limits_are_checked_before_anything_starts(monkeypatch):
    from stackbench.planning import limits

    p = parse('concurrency = [5000]\n' + STACKS)
    monkeypatch.setattr(limits.resource, "getrlimit", lambda what: (1024, 4096))
    with pytest.raises(PlanError, match="at most 4,096 files"):
        limits.check_machine(p)
    monkeypatch.setattr(limits.resource, "getrlimit", lambda what: (1024, 1 << 20))
    monkeypatch.setattr(limits, "local_ports", lambda: 4000)
    with pytest.raises(PlanError, match="more than the 4,000 local ports"):
        limits.check_machine(p)
    monkeypatch.setattr(limits, "local_ports", lambda: 28232)
    limits.check_machine(p)


# -- the search, pure ---------------------------------------------------------------

def drive(search: Search, sustains: float, noise=None) -> Search:
    """Probe a stack that meets the SLO up to `sustains` requests/s."""
    while (rate := search.next_rate()) is not None:
        met = rate <= sustains if noise is None else noise(rate)
        search.record(rate, met)
    return search


@pytest.mark.parametrize("sustains", [37.0, 150.0, 1234.0, 9_999.0, 61_000.0])
def test_search_brackets_a_known_capacity_within_its_precision(sustains):
    s = drive(Search(SearchParams(start=100, precision=0.05, confirm=2, edge=0)), sustains)
    assert s.stopped == "converged"
    assert s.low <= sustains < s.high
    assert (s.high - s.low) / s.low <= 0.05 + 1 / s.low  # whole requests/s
    assert s.confirmations == 3  # the first pass and two confirmations
    assert len(s.probes) < 25


@pytest.mark.parametrize("sustains", [150.0, 1234.0, 61_000.0])
def test_the_edge_series_steps_up_after_a_pass_and_down_after_a_miss(sustains):
    s = drive(Search(SearchParams(start=100, precision=0.05, edge=8)), sustains)
    assert s.stopped == "converged" and s.edge_probes == 8
    series = s.probes[-8:]
    for before, after in zip(series, series[1:]):
        # one step of × 1.05 (rates are whole requests/s)
        ratio = after.rate / before.rate
        assert ratio == pytest.approx(1.05 if before.met else 1 / 1.05, abs=1 / before.rate + 1e-3)
    # on a sharp knee the series straddles it: both outcomes, and every rate within a step
    assert {p.met for p in series} == {True, False}
    assert all(sustains / 1.11 < p.rate < sustains * 1.11 for p in series)
    assert s.low <= sustains < s.high  # the bracket only narrows
    e = capacity_edge.fit((p.rate, p.met) for p in s.probes)
    assert e.low <= sustains <= e.high and abs(e.rate / sustains - 1) < 0.05


def test_a_failed_confirmation_moves_the_interval_down():
    flaky = {"first": True}

    def noise(rate):
        if rate <= 1000:
            return True
        if rate <= 1100 and flaky["first"]:  # one lucky pass above the true capacity
            flaky["first"] = False
            return True
        return False

    s = drive(Search(SearchParams(start=100, precision=0.05, confirm=2, edge=0)), 0, noise)
    assert s.low <= 1000 < s.high and s.stopped == "converged"


def test_search_stops_at_its_ceiling_floor_and_generator():
    assert drive(Search(SearchParams(start=100, ceiling=1000)), 1e9).stopped == "ceiling"
    s = drive(Search(SearchParams(start=100, floor=10)), 1)
    assert s.stopped == "floor" and s.low is None and s.high == 10
    g = Search(SearchParams(start=100))
    g.record(100, True, generator_limited=True)
    assert g.next_rate() is None and g.stopped == "generator" and g.low == 100


def test_search_is_replayed_from_its_stored_probes():
    s = drive(Search(SearchParams(start=100)), 777)
    again = capacity.replay(SearchParams(start=100),
                            ((p.rate, capacity.Check(p.met)) for p in s.probes), "converged")
    assert (again.low, again.high, again.confirmations) == (s.low, s.high, s.confirmations)


def engine_doc(rate, p99_us, *, failed=0, not_sent=0, oldest=None, unserved=0, saturated=False):
    return {"schema_version": 1, "started_unix_us": 1, "duration_us": 1_000_000, "requests_per_s": rate,
            "config": {"rate": rate},
            "requests": {"completed": int(rate), "ok_2xx": int(rate), "non_2xx": 0, "failed": failed,
                         "due": int(rate), "not_sent": not_sent, "in_flight_oldest_us": oldest},
            "latency_us": {"mean": p99_us / 2, "percentiles": {"50": p99_us // 2, "99": p99_us, "99.9": p99_us}},
            "connections_without_response": unserved, "engine_cpu": {"saturated": saturated},
            "warnings": [], "warning_codes": []}


OK = CellStatus.OK


def test_slo_check_names_every_reason():
    slo = SLO({"99": 10_000}, errors=0, unserved=0)
    ok = capacity.check(OK, None, EngineResult.from_doc(engine_doc(500, 9_000)), slo)
    assert ok.met and not ok.reasons
    bad = capacity.check(OK, None, EngineResult.from_doc(engine_doc(500, 12_300, failed=2, not_sent=50,
                                                                    oldest=80_000, unserved=1)), slo)
    assert not bad.met
    assert bad.reasons == ("p99 12.3 ms > 10 ms", "requests unanswered at the end, the oldest 80 ms",
                           "50 of 500 due requests never sent (every connection busy)", "2 errors",
                           "1 connections unserved")
    assert not capacity.check(CellStatus.FAILED, "php-fpm exited", None, slo).met
    assert capacity.check(OK, None, EngineResult.from_doc(engine_doc(500, 1, saturated=True)), slo).generator_limited


# -- through the runner (fake stack, fake engine) -------------------------------------

def run_plan(store, fake, text):
    plan = parse(text)
    return plan, runner.run_plan(plan, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)


def open_loop_engine(state, sustains: dict[str, float]):
    """A fake engine whose stacks keep p99 at 2 ms up to their capacity, 80 ms above."""
    def load(spec, cpus=None):
        state.setdefault("specs", []).append(spec)
        label = spec.url.split("/")[2]
        rate = spec.rate or 100.0
        return EngineResult.from_doc(engine_doc(rate, 2_000 if rate <= sustains[label] else 80_000))
    return load


def test_capacity_search_stores_every_probe_and_finds_each_stacks_rate(lab):
    log, state, fake = lab
    fake.load = open_loop_engine(state, {"A": 1234.0, "B": 3100.0})
    store = Store()
    plan, outcome = run_plan(store, fake, 'load = "capacity"\nslo = { p99 = "10ms" }\nduration = "1s"\n'
                             'warmup = "0s"\nsyscalls = false\nkeepalive = [true]\nworkloads = ["php-hello"]\n'
                             'baseline = "A"\n' + STACKS)
    assert outcome.status == "complete"
    assert [e for e in log if e[0] == "up"] == [("up", "A"), ("up", "B")]  # one start per search
    cells = store.cells(outcome.run_id)
    assert all(c.load == "capacity" and c.rate for c in cells)
    assert [c.step for c in cells if c.stack_label == "A"] == list(range(sum(c.stack_label == "A" for c in cells)))
    # the lab sized each probe's connections from its rate and the SLO
    assert all(s.connections == plan.load.connections_for(s.rate) for s in state["specs"] if s.rate)
    assert store.searches(outcome.run_id) == {0: "converged", capacity.MAX_PROBES: "converged"}
    found = capacity_results.results(store.run(outcome.run_id), cells, store.search_rows(outcome.run_id))
    by = {r.stack_label: r for r in found}
    assert by["A"].low <= 1234 < by["A"].high and by["B"].low <= 3100 < by["B"].high
    assert by["A"].at_capacity.p99_us == 2_000
    # each search's edge: within a step of the knee, never above what a met probe served
    # (the fake stack serves what it is offered up to its knee), its interval at or under it
    for label, knee in (("A", 1234), ("B", 3100)):
        e = by[label].edge
        served = max(p.figures.requests_per_s for p in by[label].probes if p.check.met)
        assert abs(e.rate / knee - 1) < 0.05 and e.low <= e.rate <= served <= knee and e.high <= served
    out = io.StringIO()
    run_report.render(analyze(store.run(outcome.run_id), cells, store.search_rows(outcome.run_id)), out)
    text = out.getvalue()
    assert "capacity at p99 ≤ 10 ms, no errors" in text
    assert f"{by['A'].edge.rate:,.0f} req/s" in text and f"{by['A'].edge.low:,.0f}–{by['A'].edge.high:,.0f} req/s" in text
    # one search a side: the edges compared on their probes give the verdict
    assert "php-hello keep-alive: B sustains 1" in text and "more load than A within the target" in text
    assert "p99 80.00" not in text.split("capacity at")[0]  # probes are not in the level table
    # the answers first; how they were compared in full with --explain
    assert text.index("capacity verdicts") < text.index("capacity at p99")
    assert "fewer than five searches a side" not in text and "capacity = the rate a probe meets" in text
    out = io.StringIO()
    run_report.render(analyze(store.run(outcome.run_id), cells, store.search_rows(outcome.run_id)), out,
                      explain=True)
    assert "fewer than five searches a side: each pair of edges is compared on its probes" in out.getvalue()


def test_five_searches_a_side_give_a_capacity_verdict(lab):
    log, state, fake = lab
    rng = random.Random(3)
    base = {"A": 1000.0, "B": 2000.0}

    def load(spec, cpus=None):
        label = spec.url.split("/")[2]
        cap = base[label] * rng.uniform(0.97, 1.03)
        return EngineResult.from_doc(engine_doc(spec.rate, 2_000 if spec.rate <= cap else 80_000))

    fake.load = load
    store = Store()
    _, outcome = run_plan(store, fake, 'load = "capacity"\nslo = { p99 = "10ms" }\nduration = "1s"\nwarmup = "0s"\n'
                          'syscalls = false\nkeepalive = [true]\nworkloads = ["php-hello"]\nbaseline = "A"\n'
                          'repetitions = 5\nsearch = { confirm = 0 }\n' + STACKS)
    run = store.run(outcome.run_id)
    found = capacity_results.results(run, store.cells(outcome.run_id), store.search_rows(outcome.run_id))
    (v,) = capacity_results.decide(found, "A")
    assert v.better is True and 1.8 < v.comparison.ratio < 2.2
    # five searches a side: each search's fitted edge is a run (not the probes pooled)
    assert not capacity_results.on_probes(v) and len(v.baseline_values) == len(v.candidate_values) == 5
    out = io.StringIO()
    run_report.render(analyze(run, store.cells(outcome.run_id), store.search_rows(outcome.run_id)), out)
    assert "php-hello keep-alive: B sustains" in out.getvalue() and "more load than A" in out.getvalue()


def test_an_interrupted_search_starts_over_on_resume(lab):
    log, state, fake = lab
    engine = open_loop_engine(state, {"A": 1234.0, "B": 3100.0})
    calls = {"n": 0}

    def interrupting(spec, cpus=None):
        calls["n"] += 1
        if calls["n"] == 20:  # inside B's search
            raise KeyboardInterrupt
        return engine(spec, cpus)

    fake.load = interrupting
    store = Store()
    text = ('load = "capacity"\nslo = { p99 = "10ms" }\nduration = "1s"\nwarmup = "0s"\nsyscalls = false\n'
            'keepalive = [true]\nworkloads = ["php-hello"]\n' + STACKS)
    with pytest.raises(KeyboardInterrupt):
        run_plan(store, fake, text)
    run_id = store.latest_run_id()
    assert store.searches(run_id) == {0: "converged"}
    partial = [c for c in store.cells(run_id) if c.stack_label == "B"]
    assert partial  # some of B's probes were stored before the interruption
    plan = parse(text)
    done = runner.done_seqs(plan, store, run_id)
    assert done == {0}
    assert not [c for c in store.cells(run_id) if c.stack_label == "B"]  # forgotten, to search again
    fake.load = engine
    again = runner.resume(run_id, plan, done, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)
    assert again.status == "complete"
    assert store.searches(run_id) == {0: "converged", capacity.MAX_PROBES: "converged"}


def test_stages_are_stored_step_by_step_on_one_start(lab):
    log, state, fake = lab
    fake.load = open_loop_engine(state, {"A": 1e9, "B": 1e9})
    store = Store()
    _, outcome = run_plan(store, fake, 'load = "stages"\nwarmup = "0s"\nsyscalls = false\nkeepalive = [true]\n'
                          'workloads = ["php-hello"]\nstages = [{ duration = "1s", concurrency = 2 }, '
                          '{ duration = "2s", rate = 400 }, { duration = "1s", concurrency = 8 }]\n' + STACKS)
    assert [e for e in log if e[0] == "up"] == [("up", "A"), ("up", "B")]
    specs = [(s.connections, s.rate, s.duration_s) for s in state["specs"] if s.phase == "measure"]
    assert specs[:3] == [(2, None, 1.0), (40, 400.0, 2.0), (8, None, 1.0)]
    cells = [c for c in store.cells(outcome.run_id) if c.stack_label == "A"]
    assert [(c.step, c.load, c.rate, c.concurrency) for c in cells] == [
        (0, "stages", None, 2), (1, "stages", 400.0, 40), (2, "stages", None, 8)]
    (curve, _) = curves.of(store.cells(outcome.run_id))
    assert [p.question.level() for p in curve.points] == ["c=2", "400/s", "c=8"]  # walk order, not sorted
    out = io.StringIO()
    run_report.render(analyze(store.run(outcome.run_id), store.cells(outcome.run_id)), out)
    assert "A · php-hello · keep-alive on" in out.getvalue() and "not sent" in out.getvalue()


def test_up_and_down_legs_stay_apart_in_questions_and_curves(lab):
    log, _, fake = lab
    store = Store()
    _, outcome = run_plan(store, fake, 'concurrency = [1, 8, 32]\nramp = "updown"\nwarmup = "0s"\nsyscalls = false\n'
                          'keepalive = [true]\nworkloads = ["static-12b"]\n' + STACKS)
    assert [e[1] for e in log if e[0] == "measure"][:5] == [1, 8, 32, 8, 1]
    cells = store.cells(outcome.run_id)
    qs = {questions.of(c) for c in cells if c.stack_label == "A"}
    assert len(qs) == 5 and {q.leg for q in qs} == {"up", "down"}
    (a, _) = curves.of(cells)
    assert [p.question.level() for p in a.points] == ["c=1 up", "c=8 up", "c=32 up", "c=8 down", "c=1 down"]


def test_the_way_down_is_compared_with_the_way_up(lab):
    log, state, fake = lab
    # a lazily growing pool: slower on the way up at c=8 than on the way down
    def rps(label):
        measured = [e for e in log if e[0] == "measure"]
        return 500.0 if len(measured) % 5 == 2 else 1000.0 * (1 + 0.001 * len(measured))
    state["rps"] = rps
    store = Store()
    _, outcome = run_plan(store, fake, 'concurrency = [1, 8, 32]\nramp = "updown"\nwarmup = "0s"\nsyscalls = false\n'
                          'keepalive = [true]\nworkloads = ["static-12b"]\nrepetitions = 5\n' + STACKS)
    from stackbench.analysis import axes, ramps
    vs = ramps.decide(store.cells(outcome.run_id))
    at8 = [v for v in vs.for_metric("throughput") if v.question.concurrency == 8]
    assert {(v.within, v.question.workload) for v in at8} == {("A", "static-12b"), ("B", "static-12b")}
    assert all(v.candidate == axes.DOWN and v.better for v in at8)
    out = io.StringIO()
    run_report.render(analyze(store.run(outcome.run_id), store.cells(outcome.run_id)), out)
    assert "A · static-12b c=8 keep-alive: way down is 105 % faster than way up" in out.getvalue()
    assert "A · static-12b c=1 keep-alive: way down vs way up: no significant difference" in out.getvalue()
