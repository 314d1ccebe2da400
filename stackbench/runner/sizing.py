"""The machine to buy, measured: a plan's `[sizing]` asked of each size in turn — the plan
on that machine profile, its tuned stacks tuned for the target rate on it (runner/tune.py),
then one capacity run with every stack (the plan's `search`, starting at the target). The
sizing is stored first and each size's run added as it ends, so an interrupted sizing keeps
the sizes it measured; analysis/sizing.py reads the answer from those runs. Each run measures
the yardstick of the server's core before it begins (upkeep/environment.py; on another host,
its agent there): the sizing keeps them pooled, the unit its sizes are said in."""

from __future__ import annotations

from dataclasses import dataclass, field

from stackbench.errors import StackbenchError
from stackbench.events import Events
from stackbench.model.environment import Yardstick
from stackbench.model.sizing import SizeRun
from stackbench.planning import plan as plan_mod
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
    """Each size's capacity plan, in the sizes' order."""
    q = plan.sizing
    if q is None:
        raise ValueError("the plan has no [sizing]")
    return [(s, plan_mod.parse(sizing_mod.size_plan(plan.raw, q, s), plan.source)) for s in q.sizes]


def size(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
         lab: Lab | None = None) -> Sized:
    q = plan.sizing
    if q is None:
        raise ValueError("the plan has no [sizing]")
    sized = Sized(store.record_sizing(plan.name, q.as_dict(), [v.label for v in plan.stacks], []))
    cores: list[Yardstick] = []
    for s, one in size_plans(plan):
        one = tune_runner.resolve(one, store, events, options, lab)
        outcome = run_plan(one, store, events, options, lab)
        sized.runs.append(SizeRun(s.label, outcome.run_id))
        measured = store.run(outcome.run_id).environment.server_yardstick
        cores += [measured] if measured is not None else []
        store.update_sizing(sized.sizing_id, sized.runs, Yardstick.pooled(cores))
        sized.errors.extend(outcome.errors)
    return sized
