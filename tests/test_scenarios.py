"""The shipped scenarios' quick forms ("every scenario's quick form answers"):
each asks its scenario's own question, with the runs a verdict needs in every compared
cell, on pools that can hold the clients it measures, in under two minutes."""

from __future__ import annotations

from collections import Counter

import pytest

from stackbench import scenarios, workloads
from stackbench.errors import UsageError
from stackbench.analysis.stats import MIN_RUNS
from stackbench.network import calibrate, visitors as visitor_classes
from stackbench.planning import plan as plan_mod
from stackbench.runner import starts as starts_mod
from stackbench.stacks import registry

NAMES = scenarios.names()
# `scenario run NAME --quick` must take at most 2 minutes, stacks started and stopped
# included. The dry run's estimate leaves out what this adds (measured on the 2-core VM): a cell with other visitors waits for their engine, which runs a second past
# the window (runner/cell.py); a stack whose workload has services (WordPress: MariaDB
# from its snapshot, the site verified page by page) takes ~1 s more to start, verify and
# stop (0.3 + 0.9 s up and verified, 0.4–2.7 s down, against ~0.7 s in all for a static
# document); and a run ~5 s of its own (the machine's speed checked, the lab swept). With
# them the model comes within ~10 % of the quick forms' wall times: slow-clients 107 s
# modelled, 104 s taken (the dry run: 87 s); small-vps 89 / 92 s (74 s); opcache 109 /
# 98 s (84 s). It flags the opcache quick form of before its window rule (139 s modelled, 132 s
# taken; the dry run said 114 s), not quite its small-vps one (119 s modelled, ~150 s
# taken on a quiet machine: 256 prefork children take 1.5–2.7 s to stop, more than the
# allowance): keep quick forms well below the line (all model at 110 s or less).
QUICK_BUDGET_S = 120.0
SIZING_QUICK_BUDGET_S = 300.0
BACKGROUND_TAIL_S = 1.0
SERVICES_START_S = 1.0
RUN_OVERHEAD_S = 5.0
PREFORK = "apache-prefork-modphp"
# Scenarios whose question is how a prefork pool too small for the clients fares: there
# its unserved clients are the answer ("fails this load"), not a pool sized wrongly.
POOL_GROWTH_IS_THE_QUESTION = {"ramp-direction"}


def compared(cell: plan_mod.Cell) -> tuple:
    """What a verdict compares across stacks and repetitions: one question of one stack."""
    return (cell.stack.label, cell.workload, cell.concurrency, cell.keepalive, cell.rate, cell.leg, cell.network,
            cell.background, cell.protocol, cell.handshake)


def guaranteed_runs(plan: plan_mod.Plan) -> Counter:
    """Runs each compared cell gets whatever happens: every repetition of a fixed plan, the
    minimum of an adaptive one (repetitions = "auto" may stop there)."""
    runs = Counter(compared(c) for c in plan_mod.expand(plan))
    if plan.adaptive:
        runs = Counter({k: min(n, plan.min_repetitions) for k, n in runs.items()})
    return runs


def _cells(plan: plan_mod.Plan) -> list[plan_mod.Cell]:
    """The cells a plan measures at most: every repetition up to an adaptive plan's cap —
    with a time budget (a quick form), its minimum: the budget bounds the rest."""
    cells = plan_mod.expand(plan)
    if plan.adaptive and plan.budget_s is not None:
        cells = [c for c in cells if c.repetition < plan.min_repetitions]
    return cells


def estimate_s(plan: plan_mod.Plan) -> float:
    """What `run --dry-run` says the plan's cells take and the network profiles it
    measures once per run."""
    return plan.seconds(_cells(plan)) + sum(calibrate.expected_seconds(p) for p in plan.links.values() if p.namespaced)


def wall_s(plan: plan_mod.Plan) -> float:
    """The dry run's estimate and what it leaves out (see QUICK_BUDGET_S); a budgeted
    plan's repetitions past its minimum begin only while they end within the budget."""
    cells = _cells(plan)
    tails = sum(1 for c in cells if c.background != visitor_classes.NONE) * BACKGROUND_TAIL_S
    starts = [g for g in starts_mod.grouped(cells, plan)
              if any(plan.workload(w).services for w in {c.workload for c in g})]
    measured = estimate_s(plan) + tails + len(starts) * SERVICES_START_S
    return max(measured, plan.budget_s or 0.0) + RUN_OVERHEAD_S


def test_every_scenario_is_checked_here():
    assert len(NAMES) == 19 and [s.name for s in scenarios.all_scenarios() if s.missing] == []


@pytest.mark.parametrize("name", NAMES)
def test_quick_form_has_the_runs_a_verdict_needs_in_every_compared_cell(name):
    plan = scenarios.get(name).plan(quick=True)
    assert plan.baseline in {v.label for v in plan.stacks}
    runs = guaranteed_runs(plan)
    assert {k[0] for k in runs} == {v.label for v in plan.stacks}  # every stack measured
    if plan.load.kind == "capacity":
        # One search a side: the verdict compares the two edges fitted to every probe of
        # each search (analysis/capacity_edge.py), not runs.
        assert min(runs.values()) >= 1
        return
    short = {k: n for k, n in runs.items() if n < MIN_RUNS}
    assert not short, f"{name} --quick: fewer than {MIN_RUNS} runs of {short}"


@pytest.mark.parametrize("name", NAMES)
def test_quick_form_fits_in_two_minutes(name):
    plan = scenarios.get(name).plan(quick=True)
    if plan.sizing is not None:
        # The machine to buy asks its plan of every size: the quick form's budget is the
        # whole answer's (docs/guide/sizing.md), tunings left out as for small-vps.
        sizes = len(plan.sizing.sizes)
        assert wall_s(plan) * sizes <= SIZING_QUICK_BUDGET_S, (name, round(wall_s(plan) * sizes))
        return
    assert estimate_s(plan) <= wall_s(plan) <= QUICK_BUDGET_S, (name, round(estimate_s(plan)), round(wall_s(plan)))


@pytest.mark.parametrize("name", NAMES)
def test_quick_form_asks_the_full_forms_question(name):
    """Fewer stacks, levels, workloads, networks or protocols and shorter runs, but never
    other ones: each quick stack is one of the full form's with the same knobs (its
    pools), on the same machine and visitors, against the same baseline."""
    full, quick = (scenarios.get(name).plan(quick=q) for q in (False, True))
    full_stacks = {v.label: v for v in full.stacks}
    for v in quick.stacks:
        assert v.label in full_stacks and full_stacks[v.label] == v, (name, v.label)
    assert quick.baseline == full.baseline
    assert set(quick.workloads) <= set(full.workloads)
    assert set(quick.keepalive) <= set(full.keepalive)
    assert set(quick.load.concurrency) <= set(full.load.concurrency) and quick.load.kind == full.load.kind
    assert quick.machine == full.machine and quick.visitors == full.visitors and quick.background == full.background
    # networks and protocols are sweep axes like workloads: fewer, never others
    full_networks = [p.name for p in full.networks]
    assert [p.name for p in quick.networks] == [n for n in full_networks if n in {p.name for p in quick.networks}]
    assert set(quick.protocols.names) <= set(full.protocols.names) and quick.protocols.tls == full.protocols.tls
    assert quick.server_tcp_wmem == full.server_tcp_wmem


@pytest.mark.parametrize("name", sorted(set(NAMES) - POOL_GROWTH_IS_THE_QUESTION))
def test_prefork_starts_a_child_for_every_kept_alive_client_it_is_measured_with(name):
    """Prefork gives each kept-alive connection a child and spawns only 1, 2, 4 … a
    second (from 16 to 64 children took ~8 s here, longer than any warm-up): a pool
    that starts smaller than the measured clients measures its spawning — clients left
    unserved for the whole window — not the question. Other visitor classes are not
    counted: slow-clients holds every child it has on purpose."""
    for quick in (False, True):
        plan = scenarios.get(name).plan(quick=quick)
        if plan.load.kind != "closed" or True not in plan.keepalive:
            continue
        for v in plan.stacks:
            if v.id != PREFORK or v.tuned:  # a tuned pool starts every child it has (servers/apache.py)
                continue
            start = registry.get(PREFORK).resolve_knobs(v.knobs)["start_servers"]
            for wid in plan.workloads:
                w = workloads.get(wid)
                clients = max(plan.load.concurrency) * (w.page_conns if w.page_mode else 1)
                assert start >= clients, (name, quick, v.label, wid, start, clients)


def test_the_growth_scenario_does_start_its_prefork_pool_smaller_than_its_clients():
    # ramp-direction asks how a lazily growing pool meets a climb: sizing it for the top
    # level would answer another question.
    plan = scenarios.get("ramp-direction").plan(quick=True)
    prefork = next(v for v in plan.stacks if v.id == PREFORK)
    assert registry.get(PREFORK).resolve_knobs(prefork.knobs)["start_servers"] < max(plan.load.concurrency)


def test_slow_visitors_outnumber_what_prefork_can_hold():
    # slow-clients' answer must not hang on how far prefork's pool grew in the window: its
    # slow visitors are more than MaxRequestWorkers, the most children it will ever have.
    for quick in (False, True):
        plan = scenarios.get("slow-clients").plan(quick=quick)
        prefork = next(v for v in plan.stacks if v.id == PREFORK)
        limit = registry.get(PREFORK).resolve_knobs(prefork.knobs)["max_request_workers"]
        assert sum(c.connections for c in plan.visitors.values()) > limit


# The variants that ask over another protocol; `untuned` asks with other pools instead.
VARIANTS = [(s.name, v) for s in scenarios.all_scenarios() for v in s.variants if v != "untuned"]


def test_slow_clients_and_small_vps_have_an_https_variant():
    assert {("slow-clients", "https"), ("small-vps", "https")} <= set(VARIANTS)


@pytest.mark.parametrize("name, variant", VARIANTS)
def test_a_variant_asks_the_same_question_another_way_within_the_quick_budget(name, variant):
    """`--variant https` replaces what the visitors speak, nothing else: the same stacks,
    workloads and levels, the runs a verdict needs, its quick form within two minutes."""
    s = scenarios.get(name)
    for quick in (False, True):
        plain, other = s.plan(quick=quick), s.plan(quick=quick, variant=variant)
        assert [v.label for v in other.stacks] == [v.label for v in plain.stacks]
        assert (other.workloads, other.load.concurrency) == (plain.workloads, plain.load.concurrency)
        assert other.protocols.names != plain.protocols.names
    quick = s.plan(quick=True, variant=variant)
    assert min(guaranteed_runs(quick).values()) >= MIN_RUNS
    assert wall_s(quick) <= QUICK_BUDGET_S, (name, variant, wall_s(quick))


def test_small_vps_compares_tuned_stacks_and_keeps_the_untuned_form_as_a_variant():
    s = scenarios.get("small-vps")
    for quick in (False, True):
        tuned, untuned = s.plan(quick=quick), s.plan(quick=quick, variant="untuned")
        assert all(v.tuned for v in tuned.stacks) and not any(v.tuned for v in untuned.stacks)
        assert [v.label for v in untuned.stacks] == [v.label for v in tuned.stacks]
        assert {registry.get(v.id).resolve_knobs(v.knobs).get("max_request_workers", 256) for v in untuned.stacks
                if v.id == PREFORK} == {256}
        assert (untuned.workloads, untuned.load.concurrency) == (tuned.workloads, tuned.load.concurrency)
    assert "tuned" in s.knobs and all(scenarios.get(n).knobs.startswith("fixed") for n in ("memory", "php-only",
                                                                                          "slow-clients"))


def test_an_unknown_variant_is_one_line_naming_the_ones_there_are():
    with pytest.raises(UsageError) as e:
        scenarios.get("small-vps").plan(variant="http3")
    assert str(e.value) == "scenario 'small-vps' has no variant 'http3'" and "https" in e.value.hint
    with pytest.raises(UsageError) as e:
        scenarios.get("static").plan(variant="https")
    assert "has no variant" in str(e.value) and "it has none" in e.value.hint
