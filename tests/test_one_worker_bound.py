"""One worker ruled out at a rate on a mix with slow requests, by construction
(analysis/slow_requests.py rule 3; docs/methods/tuning.md, "Slow requests"): the bound's
arithmetic, the bound held against a simulated single worker (the ground truth: a FIFO
queue whose every late page is counted), the tuner measuring the pool of 2 first when one
worker is ruled out, and the words that say why it was not measured."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from stackbench.analysis import slow_requests, tuning
from stackbench.analysis.capacity import SLO
from stackbench.model.tuning import OneWorkerBound, SlowCost
from test_tuning_slow import TWO, _stored

P99_500MS = {"99": 500_000}
WEIGHTS = {"/": 49, "/slow": 1}


def test_at_the_sizings_target_one_worker_leaves_six_times_the_late_pages_a_p99_allows():
    b = slow_requests.one_worker_bound(6.25, 0.02, 1000, P99_500MS)
    assert b is not None and b.percentile == "99" and b.limit_us == 500_000
    assert b.late_share == pytest.approx(6.25 * 0.02 * 0.5) and b.allowed_share == pytest.approx(0.01)
    # under the margin it is measured: at 1.5/s the late share is 1.5%, within twice the 1% allowed
    assert slow_requests.one_worker_bound(1.5, 0.02, 1000, P99_500MS) is None
    # a hold within the limit makes nobody late past it
    assert slow_requests.one_worker_bound(100.0, 0.02, 400, P99_500MS) is None
    # the first percentile it breaks is named; a max allows no late page at all
    b = slow_requests.one_worker_bound(1.0, 0.02, 1000, {"50": 300_000, "100": 2_000_000, "99.9": 500_000})
    assert b is not None and b.percentile == "99.9"
    assert tuning.one_worker_ruled_out({"/slow": 1000}, WEIGHTS, None, SLO(P99_500MS)) is None  # a closed loop
    assert tuning.one_worker_ruled_out({}, WEIGHTS, 6.25, SLO(P99_500MS)) is None  # no slow request
    assert tuning.one_worker_ruled_out({"/slow": 1000}, WEIGHTS, 6.25, None) is None  # no SLO
    assert tuning.one_worker_ruled_out({"/slow": 1000}, WEIGHTS, 6.25, SLO(P99_500MS)) == OneWorkerBound(
        6.25, "99", 500_000, pytest.approx(0.0625), pytest.approx(0.01))


def _late_share(rate: float, share: float, hold_s: float, page_s: float, limit_s: float, seed: int,
                n: int = 60_000) -> float:
    """A single worker serving a FIFO queue of Poisson arrivals (the engine's open loop), a
    share of them held `hold_s`, the others `page_s`: the share of the other pages whose
    latency passed `limit_s`."""
    rng = random.Random(seed)
    t = free = 0.0
    late = others = 0
    for _ in range(n):
        t += rng.expovariate(rate)
        slow = rng.random() < share
        start = max(t, free)
        free = start + (hold_s if slow else page_s)
        if not slow:
            others += 1
            late += free - t > limit_s
    return late / others


@pytest.mark.parametrize("rate,page_s", [(6.25, 0.02), (6.25, 0.06), (3.0, 0.05), (12.0, 0.01)])
def test_the_bound_is_a_floor_of_what_one_worker_leaves_late(rate, page_s):
    """The ground truth: every late page of a simulated single worker counted; the bound's
    share is never above it (the pages' own service and the queue behind a hold only add)."""
    b = slow_requests.one_worker_bound(rate, 0.02, 1000, P99_500MS)
    assert b is not None
    for seed in (1, 2, 3):
        assert _late_share(rate, 0.02, 1.0, page_s, 0.5, seed) >= b.late_share * 0.9, (rate, page_s, seed)


def test_the_bound_is_near_what_one_worker_leaves_late_when_pages_are_light():
    """Not a loose floor: with pages of 1 ms the simulated worker leaves late nearly the
    bound's share (6.25%), so a pool it rules out is one that misses by that much."""
    measured = _late_share(6.25, 0.02, 1.0, 0.001, 0.5, 7, n=200_000)
    assert measured == pytest.approx(0.0625, rel=0.15)


# ------------------------------------------------------------------ the tuner, on the fake Lab

from test_runner_order import lab  # noqa: E402,F401  (the fake Lab fixture)


def _tune_ruled_out(store, fake, monkeypatch, fits: bool):
    from stackbench import runner
    from stackbench.planning.tune import TuneQuestion
    from stackbench.runner import tune as tune_runner
    from stackbench.upkeep.pinning import Pinning

    bound = OneWorkerBound(20.0, "99", 500_000, 0.1, 0.01)
    monkeypatch.setattr(tuning, "fits", lambda cells, limit: fits)
    monkeypatch.setattr(tuning, "one_worker_ruled_out", lambda slow, weights, rate, slo: bound)
    q = TuneQuestion("nginx-fpm", "php-hello", 8, duration="1s", timeout="2s", repetitions=1, rate=20.0,
                     slo={"latency_us": P99_500MS, "errors": 0, "unserved": 0})
    return tune_runner.tune(q, store, options=runner.Options(pinning=Pinning([0], [1])), lab=fake)


def test_one_worker_ruled_out_is_never_started_and_the_pool_of_2_goes_first(lab, tmp_path, monkeypatch):
    from stackbench.store import Store

    log, state, fake = lab
    store = Store(tmp_path / "r.sqlite")
    tuned = _tune_ruled_out(store, fake, monkeypatch, fits=True)
    assert [label for what, label in log if what == "up"] == ["2 workers"]
    assert tuned.choice.chosen.size == 2 and tuned.choice.reason is tuning.Reason.SMALLEST_MEETS
    assert tuned.first_run_id is None and tuned.probe_run_id is None
    t = store.tuning(tuned.tuning_id)
    assert t.sizes == {"2 workers": 2} and t.candidate_run_ids == [tuned.run_id]
    review = tuning.review(t, store.cells(t.run_id), None)
    assert review.choice.reason is tuning.Reason.SMALLEST_MEETS and review.choice.chosen.size == 2


def test_past_the_bound_the_probe_and_its_candidates_still_leave_one_worker_out(lab, tmp_path, monkeypatch):
    from stackbench.store import Store

    log, state, fake = lab
    store = Store(tmp_path / "r.sqlite")
    tuned = _tune_ruled_out(store, fake, monkeypatch, fits=False)
    ups = [label for what, label in log if what == "up"]
    assert ups == ["2 workers", "4 workers", "4 workers", "8 workers"]  # 2 alone, the probe, its candidates
    t = store.tuning(tuned.tuning_id)
    assert 1 not in t.sizes.values() and tuned.choice.chosen.size == 2


def test_the_words_say_why_one_worker_was_not_measured():
    from stackbench.report.words import tuning as words

    bound = slow_requests.one_worker_bound(6.25, 0.02, 1000, P99_500MS)
    t = _stored(SlowCost(1000, 0.02, 6.25, None, TWO, bound), rate=6.25)
    assert words.slow_cost(t) == (
        "what a slow request would cost with 1 worker: each (1 s, 1 request in 50) holds it, and the ~6 visitors "
        "who arrive meanwhile wait behind it — at 6.25 requests/s those arriving in its first 0.5 s wait past "
        "p99 ≤ 500 ms: 6.2% of the other pages, where p99 allows 1% — 1 worker cannot meet the SLO (by "
        "construction, not measured); with 2 workers (chosen) the other pages' p99 3.0 s and 23.0 responses/s")
    assert SlowCost.from_dict(t.slow_cost.as_dict()) == t.slow_cost  # stored and read back whole
    old = {k: v for k, v in t.slow_cost.as_dict().items() if k != "one_ruled_out"}  # stored before it
    assert SlowCost.from_dict(old).one_ruled_out is None
    review = tuning.Review(t, SLO(P99_500MS), (), tuning.Choice(tuning.Trial(2, {}, (6.2,), (None,)),
                                                                tuning.Reason.SMALLEST_MEETS, None), None)
    assert "(1 worker: cannot meet the SLO by construction, not measured)" in words.why(review)
    saturated = replace(review, choice=tuning.Choice(review.choice.chosen, tuning.Reason.CPU_SATURATED, None))
    assert words.why(saturated).endswith("; 1 worker cannot meet the SLO by construction (not measured)")


def test_a_sizing_whose_every_size_ruled_one_worker_out_says_it_once():
    from test_sizing_slow import _answer
    from stackbench.report.words import sizing as sizing_words, tuning as words

    bound = slow_requests.one_worker_bound(6.25, 0.02, 1000, P99_500MS)
    ruled = SlowCost(1000, 0.02, 6.25, None, TWO, bound)
    a = _answer()
    ids = iter(range(10, 20))
    stacks = tuple(replace(st, sizes=tuple(
        replace(c, tuning=replace(_stored(ruled, rate=6.25), id=next(ids)), label=f"{c.stack} (tuned: 2)")
        for c in st.sizes)) for st in a.stacks)
    lines = sizing_words.tuned(replace(a, stacks=stacks))
    sizes = [c for st in stacks for c in st.sizes]
    assert lines[0] == "on every size, " + words.one_worker(sizes[0].tuning)
    assert len(lines) == 1 + len(sizes) and all("by construction" not in line for line in lines[1:])
    assert lines[1].endswith("at 6.25 requests/s; with 2 workers (chosen) the other pages' p99 3.0 s and 23.0 "
                             "responses/s")
    # one size measured its one worker: each size says its own, in full
    measured = replace(sizes[0].tuning, slow_cost=replace(ruled, one_ruled_out=None))
    first = replace(stacks[0], sizes=(replace(sizes[0], tuning=measured),) + stacks[0].sizes[1:])
    lines = sizing_words.tuned(replace(a, stacks=(first,) + stacks[1:]))
    assert not lines[0].startswith("on every size") and sum("by construction" in line for line in lines) == \
        len(sizes) - 1
