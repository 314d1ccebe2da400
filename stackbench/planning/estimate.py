"""How long a plan takes, as `--dry-run` says it and the manual quotes it (docs/guide/scenarios.md;
tests/test_manual_claims.py holds the pages to it): its cells, each network profile measured once,
and its tuned stacks' tunings — a range, from the least the plan may measure to the most, and the
worst case of every window stretched as a slow page's (planning/window.py).

- Fixed repetitions: every cell, as long as planned.
- repetitions = "auto": at least the minimum; then more, up to the maximum — or, with a `budget`,
  none begun that would end past it (runner/repetitions.py), so at most the budget or the
  minimum, whichever is longer.
- A capacity search: at most its time budget (it may end sooner).
- A tuning (planning/tune.py, docs/methods/tuning.md): at a rate, from the smallest pool's runs
  (it served the rate) to every pool tried; at a number of clients, from the probe and one
  pool (the memory fits no more) to every pool tried."""

from __future__ import annotations

from dataclasses import dataclass

from stackbench.planning import tune as tune_plan
from stackbench.planning.plan import Cell, Plan


@dataclass(frozen=True)
class Estimate:
    low_s: float  # the least the plan may take
    high_s: float  # the most, every window as long as planned
    worst_s: float  # the most, every window stretched as a slow page's

    def __add__(self, other: "Estimate") -> "Estimate":
        return Estimate(self.low_s + other.low_s, self.high_s + other.high_s, self.worst_s + other.worst_s)

    @classmethod
    def fixed(cls, seconds: float) -> "Estimate":
        return cls(seconds, seconds, seconds)


NOTHING = Estimate(0.0, 0.0, 0.0)


def measured(plan: Plan, every: list[Cell]) -> list[Cell]:
    """The cells a plan measures whatever happens: an adaptive plan's minimum repetitions."""
    return [c for c in every if c.repetition < plan.min_repetitions] if plan.adaptive else every


def of_cells(plan: Plan, every: list[Cell]) -> Estimate:
    """The plan's cells (`every`: plan.expand(plan))."""
    least = measured(plan, every)
    low, stretched = plan.seconds(least), plan.longest_seconds(least)
    if not plan.adaptive:
        return Estimate(low, low, stretched)
    if plan.budget_s is not None:
        return Estimate(low, max(low, plan.budget_s), max(stretched, plan.budget_s))
    return Estimate(low, plan.seconds(every), plan.longest_seconds(every))


def budget_overrun_s(plan: Plan, every: list[Cell]) -> float | None:
    """How long the repetitions every comparison needs take, when that is past the plan's
    `budget` (which bounds only the repetitions after them: runner/repetitions.py); None
    when they fit, or the plan has no budget."""
    if not plan.adaptive or plan.budget_s is None:
        return None
    least = plan.seconds(measured(plan, every))
    return least if least > plan.budget_s else None


def of_tuning(q: tune_plan.TuneQuestion, holds_connections: bool) -> Estimate:
    """One stack's tuning, when no stored one is reused."""
    runs = tune_plan.most_runs(q, holds_connections)
    short, long = tune_plan.run_seconds(q), tune_plan.run_seconds(q, longest=True)
    fewest = q.repetitions if q.rate is not None else 1 + q.repetitions
    return Estimate(fewest * short, runs * short, runs * long)

