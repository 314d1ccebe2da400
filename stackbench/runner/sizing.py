"""The machine to buy, measured: a plan's `[sizing]` asked of each size in turn — the plan
on that machine profile, its tuned stacks tuned for the target rate on it (runner/tune.py),
then one capacity run with every stack (the plan's `search`, starting at the target) — or,
with `until_enough`, each stack's smallest enough size searched for (planning/sizing.py
Bisection: the middle size first), a stack whose tuning there found no pool meeting the SLO
with the CPU busy not searched (it is not enough: analysis/sizing.py `of_tuning`). The
sizing is stored first and each size's run added as it ends, so an interrupted sizing keeps
the sizes it measured; analysis/sizing.py reads the answer from those runs. Each run measures
the yardstick of the server's core before it begins (upkeep/environment.py; on another host,
its agent there): the sizing keeps them pooled, the unit its sizes are said in."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.analysis import sizing as sizing_answer
from stackbench.errors import StackbenchError
from stackbench.events import Events
from stackbench.model.environment import Yardstick
from stackbench.model.sizing import SizeRun
from stackbench.planning import limits, plan as plan_mod
from stackbench.planning import sizing as sizing_mod
from stackbench.planning.plan import Plan
from stackbench.runner import Lab, Options, run_plan
from stackbench.runner import tune as tune_runner
from stackbench.store import Store


@dataclass
class Sized:
    sizing_id: int
    runs: list[SizeRun] = field(default_factory=list)
    errors: list[StackbenchError] = field(default_factory=list)


def size_plans(plan: Plan) -> list[tuple[sizing_mod.Size, Plan]]:
    """Each size's capacity plan, in the sizes' order; every size checked against what this
    machine can give (its cores, its memory: planning/limits.py) before any is measured, so
    a size this machine cannot emulate fails in a second, not after the sizes before it."""
    q = plan.sizing
    if q is None:
        raise ValueError("the plan has no [sizing]")
    plans = [(s, size_plan(plan, s, None)) for s in q.sizes]
    for s, one in plans:
        if not one.hosts.remote_server:  # there, the agent checks it (hosts/agent.py)
            limits.check_profile(one.machine, f"{plan.source}, size {s.label}")
    return plans


def size_plan(plan: Plan, s: sizing_mod.Size, stacks: list[str] | None) -> Plan:
    assert plan.sizing is not None
    return plan_mod.parse(sizing_mod.size_plan(plan.raw, plan.sizing, s, stacks=stacks), plan.source)


def size(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
         lab: Lab | None = None) -> Sized:
    q = plan.sizing
    if q is None:
        raise ValueError("the plan has no [sizing]")
    labels = [v.label for v in plan.stacks]
    sized = Sized(store.record_sizing(plan.name, q.as_dict(), labels, []))
    cores: list[Yardstick] = []
    if not q.until_enough:
        for s in q.sizes:
            _measure(plan, s, None, store, sized, cores, events, options, lab)
        return sized
    order = sizing_mod.Bisection(labels, len(q.sizes))
    while (step := order.next()) is not None:
        i, stacks = step
        order.record(i, stacks, _measure(plan, q.sizes[i], stacks, store, sized, cores, events, options, lab))
    return sized


def _measure(plan: Plan, s: sizing_mod.Size, stacks: list[str] | None, store: Store, sized: Sized,
             cores: list[Yardstick], events: Events | None, options: Options | None, lab: Lab | None) -> set[str]:
    """One size: its stacks (None: all) tuned for the target there, then one capacity run
    with those the tuning left in; returns the stacks enough on it. `stacks` is
    `until_enough`'s: a stack whose tuning found no pool meeting the SLO with the CPU busy
    is not enough there and its search is skipped (analysis/sizing.py `of_tuning`)."""
    one = tune_runner.resolve(size_plan(plan, s, stacks), store, events, options, lab)
    skipped: dict[str, int] = {}
    for v in one.stacks if stacks is not None else ():
        if v.tuning is not None and sizing_answer.saturated(store.tuning(v.tuning)):
            skipped[next(st for st in stacks or () if sizing_answer.as_measured(st, v.label))] = v.tuning
    rest = [st for st in stacks if st not in skipped] if stacks is not None else None
    if skipped and rest:
        one = tune_runner.resolve(size_plan(plan, s, rest), store, events, options, lab)  # the stored tunings
    if rest == []:
        sized.runs.append(SizeRun(s.label, None, skipped))
        store.update_sizing(sized.sizing_id, sized.runs, Yardstick.pooled(cores))
        return set()
    outcome = run_plan(one, store, events, options, lab)
    sized.runs.append(SizeRun(s.label, outcome.run_id, skipped))
    measured = store.run(outcome.run_id).environment.server_yardstick
    cores += [measured] if measured is not None else []
    store.update_sizing(sized.sizing_id, sized.runs, Yardstick.pooled(cores))
    sized.errors.extend(outcome.errors)
    return sizing_answer.enough_on(store.sizing(sized.sizing_id), s.label, store.run(outcome.run_id),
                                   store.cells(outcome.run_id), store.search_rows(outcome.run_id))
