"""Which cells a run measures, and when it stops: fixed repetitions all at once, adaptive
ones (repetitions = "auto") repetition by repetition until the intervals are narrow
enough or every compared pair has the runs its noise needs, and what a resumed run keeps
of what it stored (`done_seqs`).

Adaptive repetitions ask analysis/verdicts.py and analysis/power.py after each whole
repetition — the one place the runner reads analysis — so every compared pair has the
same number of runs when it is judged; the repetitions are interleaved A B A B, so a
drift of the machine spreads over every stack instead of landing on one.
"""

from __future__ import annotations

import itertools
from typing import Callable

from stackbench.analysis import capacity, power, verdicts
from stackbench.planning.plan import Cell, Plan, expand
from stackbench.runner.context import Run
from stackbench.states import CellStatus
from stackbench.store import Store


def measure(run: Run, cells: list[Cell], measure_batch: Callable[[list[Cell]], None]) -> dict:
    """Measure `cells` with `measure_batch`; returns how the repetitions stopped (Outcome.stop)."""
    if run.plan.adaptive:
        return _adaptive(run, cells, measure_batch)
    measure_batch(cells)
    return {"reason": "fixed", "repetitions": run.plan.repetitions}


def _adaptive(run: Run, cells: list[Cell], measure_batch: Callable[[list[Cell]], None]) -> dict:
    """Whole repetitions, interleaved A B A B, after at least min_repetitions until every
    compared pair's CI is within ±target_ci ("target"), or every pair has the valid runs a
    side its own noise needs to find a power.DETECT difference among the plan's
    comparisons ("power": the family size is known before the first cell), or
    max_repetitions ran ("cap"). The Phoronix Test Suite's dynamic run count, with a CI
    instead of a standard deviation, and Stein's two-stage sample size (power.readiness)."""
    plan, store, run_id = run.plan, run.store, run.run_id
    by_rep = {rep: list(group) for rep, group in itertools.groupby(cells, key=lambda c: c.repetition)}
    for rep in range(plan.max_repetitions):
        if rep >= plan.min_repetitions:
            stored = store.cells(run_id)
            spread = verdicts.spread(stored, plan.baseline)
            ready = _readiness(stored, plan)
            if spread.narrow_enough(plan.target_ci):
                return _stop("target", rep, spread, plan, ready)
            if ready is not None and ready.enough and spread.open_pairs == 0:
                return _stop("power", rep, spread, plan, ready)
        measure_batch(by_rep.get(rep, []))  # empty when a resumed run already has it
    stored = store.cells(run_id)
    return _stop("cap", plan.max_repetitions, verdicts.spread(stored, plan.baseline), plan, _readiness(stored, plan))


def _readiness(stored: list, plan: Plan) -> power.Readiness | None:
    """Each throughput comparison's runs against what its noise needs (None without a baseline)."""
    if not plan.baseline:
        return None
    vs = verdicts.decide(stored, plan.baseline, band=plan.equivalence, metrics=(verdicts.METRIC["throughput"],))
    return power.readiness(((v.baseline_values, v.candidate_values, v.decided in verdicts.FAILURE_KINDS)
                            for v in vs.verdicts), plan.comparisons())


def _stop(reason: str, repetitions: int, spread: verdicts.Spread, plan: Plan, ready: power.Readiness | None) -> dict:
    stop = {"reason": reason, "repetitions": repetitions, "worst_half_width": spread.worst_half_width,
            "target": plan.target_ci, "open_pairs": spread.open_pairs}
    if ready is not None:  # what "power" means here: the difference, the family, the runs the noisiest pair needs
        stop |= {"detect": power.DETECT, "family": ready.family, "runs_needed": ready.most_needed}
    return stop


def done_seqs(plan: Plan, store: Store, run_id: int) -> set[int]:
    """What a resumed run keeps: measured cells, and capacity searches that ended (their
    probes). A failed cell is forgotten, to be measured again; so are the probes of a
    search that did not end — the search starts over, since its next rates depended on
    them."""
    cells = store.cells(run_id)
    ended = {seq for seq, stopped in store.searches(run_id).items() if stopped != "failed"}
    searches = [c.seq for c in expand(plan) if c.load == "capacity"]
    forget, done = [], set()
    for c in cells:
        base = next((b for b in searches if b <= c.seq < b + capacity.MAX_PROBES), None)
        if base is not None:
            (done.add(base) if base in ended else forget.append(c.seq))
        elif c.status == CellStatus.OK:
            done.add(c.seq)
        else:
            forget.append(c.seq)
    done |= ended
    if forget:
        store.forget_cells(run_id, forget)
    store.forget_searches(run_id, [b for b in searches if b not in ended])
    return done
