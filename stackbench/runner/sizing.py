"""The machine to buy, measured: a plan's `[sizing]` asked of each size in turn — the plan
on that machine profile, its tuned stacks tuned for the target rate on it (runner/tune.py),
then one capacity run with every stack (the plan's `search`, starting at the target). The
sizing is stored first and each size's run added as it ends, so an interrupted sizing keeps
the sizes it measured; analysis/sizing.py reads the answer from those runs."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.errors import StackbenchError
from stackbench.events import Events
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
    plans = [(s, plan_mod.parse(sizing_mod.size_plan(plan.raw, q, s), plan.source)) for s in q.sizes]
    for s, one in plans:
        if not one.hosts.remote_server:  # there, the agent checks it (hosts/agent.py)
            limits.check_profile(one.machine, f"{plan.source}, size {s.label}")
    return plans


def size(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
         lab: Lab | None = None) -> Sized:
    q = plan.sizing
    if q is None:
        raise ValueError("the plan has no [sizing]")
    sized = Sized(store.record_sizing(plan.name, q.as_dict(), [v.label for v in plan.stacks], []))
    for s, one in size_plans(plan):
        one = tune_runner.resolve(one, store, events, options, lab)
        outcome = run_plan(one, store, events, options, lab)
        sized.runs.append(SizeRun(s.label, outcome.run_id))
        store.update_sizing(sized.sizing_id, sized.runs)
        sized.errors.extend(outcome.errors)
    return sized
