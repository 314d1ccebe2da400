"""Which cells a run measures, and when it stops: fixed repetitions all at once, adaptive
ones (repetitions = "auto") repetition by repetition until the intervals are narrow
enough or every compared pair has the runs its noise needs — or, with a time budget,
until every throughput comparison has a verdict or the next repetition would end past
the budget — and what a resumed run keeps of what it stored (`done_seqs`).

An invalid repetition (the engine at its limit while the server had headroom, the
hypervisor's steal: a measurement of something else) is measured again, up to
`remeasure_rounds` more a cell, so a comparison keeps the runs its plan asked for.

Adaptive repetitions ask analysis/verdicts.py and analysis/power.py after each whole
repetition — the one place the runner reads analysis — so every compared pair has the
same number of runs when it is judged; the repetitions are interleaved A B A B, so a
drift of the machine spreads over every stack instead of landing on one.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import replace
from typing import Callable

from stackbench.analysis import capacity, power, verdicts
from stackbench.planning.plan import Cell, Plan, expand
from stackbench.runner.context import Run
from stackbench.states import CellStatus
from stackbench.store import Store


# Why a repetition is measured again: it measured the generator or the host's other
# guests, not the stack (caveats.MEASUREMENT_FAILURES). A stack that never came up
# ("not_measured") would fail again: its error says why instead.
REMEASURED = frozenset({"engine_saturated", "cpu_steal"})


def remeasure_rounds(plan: Plan) -> int:
    """How many more times an invalid repetition of a cell is measured at most: half the
    plan's repetitions, at least once. None for walks (a ramp's step alone on a fresh
    stack is another question) and capacity searches (they probe until they decide)."""
    if plan.load.walk or plan.load.kind == "capacity":
        return 0
    return max(1, math.ceil(plan.repetitions / 2))


def measure(run: Run, cells: list[Cell], measure_batch: Callable[[list[Cell]], None]) -> dict:
    """Measure `cells` with `measure_batch`; returns how the repetitions stopped (Outcome.stop)."""
    if run.plan.adaptive:
        return _adaptive(run, cells, measure_batch)
    measure_batch(cells)
    again = _remeasure(run, measure_batch)
    return {"reason": "fixed", "repetitions": run.plan.repetitions} | ({"remeasured": again} if again else {})


def _slot(c: Cell) -> tuple:
    """A cell's place in a repetition: the same in every repetition of the plan."""
    return (c.stack.label, c.workload, c.concurrency, c.keepalive, c.rate, c.leg, c.step, c.network, c.background,
            c.protocol, c.handshake)


def _short_slots(run: Run, wanted: int) -> set[tuple]:
    """The slots with fewer valid runs than `wanted` because some of theirs measured
    something else (REMEASURED)."""
    plan = run.plan
    planned = {c.seq: c for c in expand(replace(plan, repetitions=plan.repetitions + remeasure_rounds(plan)))}
    valid: dict[tuple, int] = {}
    remeasurable: set[tuple] = set()
    for stored in run.store.cells(run.run_id):
        cell = planned.get(stored.seq)
        if cell is None or cell.load == "capacity":
            continue
        reasons = set(verdicts.invalid_reasons(stored))
        if not reasons:
            valid[_slot(cell)] = valid.get(_slot(cell), 0) + 1
        elif reasons <= REMEASURED:
            remeasurable.add(_slot(cell))
    return {s for s in remeasurable if valid.get(s, 0) < wanted}


def _remeasure(run: Run, measure_batch: Callable[[list[Cell]], None]) -> int:
    """Fixed repetitions: each cell short of valid runs measured again, in extra
    repetitions of the plan (their seqs follow the plan's), up to remeasure_rounds.
    Returns how many cells were measured again."""
    plan, count = run.plan, 0
    for k in range(remeasure_rounds(plan)):
        short = _short_slots(run, plan.repetitions)
        if not short:
            break
        stored = {c.seq for c in run.store.cells(run.run_id)}  # a resumed run has some of these already
        extra = [c for c in expand(replace(plan, repetitions=plan.repetitions + k + 1))
                 if c.repetition == plan.repetitions + k and _slot(c) in short and c.seq not in stored]
        measure_batch(extra)
        count += len(extra)
    return count


def _adaptive(run: Run, cells: list[Cell], measure_batch: Callable[[list[Cell]], None]) -> dict:
    """Whole repetitions, interleaved A B A B, after at least min_repetitions until every
    compared pair's CI is within ±target_ci ("target"), or every pair has the valid runs a
    side its own noise needs to find a power.DETECT difference among the plan's
    comparisons ("power": the family size is known before the first cell), or
    max_repetitions ran ("cap"). The Phoronix Test Suite's dynamic run count, with a CI
    instead of a standard deviation, and Stein's two-stage sample size (power.readiness)."""
    plan, store, run_id = run.plan, run.store, run.run_id
    by_rep = {rep: list(group) for rep, group in itertools.groupby(cells, key=lambda c: c.repetition)}
    began = time.monotonic()
    took: list[float] = []  # each repetition's seconds
    for rep in range(plan.max_repetitions):
        if rep >= plan.min_repetitions:
            stored = store.cells(run_id)
            spread = verdicts.spread(stored, plan.baseline)
            through = _throughput(stored, plan)
            ready = _readiness(through, plan)
            whole = not _short_slots(run, plan.min_repetitions)  # invalid runs measured again first
            if whole and spread.narrow_enough(plan.target_ci):
                return _stop("target", rep, spread, plan, ready)
            if whole and ready is not None and ready.enough and spread.open_pairs == 0:
                return _stop("power", rep, spread, plan, ready)
            if plan.budget_s is not None:
                if whole and _all_decided(through):
                    return _stop("decided", rep, spread, plan, ready)
                if took and time.monotonic() - began + sum(took) / len(took) > plan.budget_s:
                    return _stop("budget", rep, spread, plan, ready)
        t0 = time.monotonic()
        measure_batch(by_rep.get(rep, []))  # empty when a resumed run already has it
        if by_rep.get(rep):
            took.append(time.monotonic() - t0)
    stored = store.cells(run_id)
    return _stop("cap", plan.max_repetitions, verdicts.spread(stored, plan.baseline), plan,
                 _readiness(_throughput(stored, plan), plan))


def _throughput(stored: list, plan: Plan) -> verdicts.Verdicts | None:
    """The throughput verdicts so far, decided once a repetition for every rule that asks
    (None without a baseline: no comparison to wait for)."""
    if not plan.baseline:
        return None
    return verdicts.decide(stored, plan.baseline, band=plan.equivalence, metrics=(verdicts.THROUGHPUT,))


def _all_decided(through: verdicts.Verdicts | None) -> bool:
    """Does every throughput comparison have a verdict more runs would not change — a
    difference, equivalence, a failure, a bound, or a resolution no run can improve?
    ("No significant difference" and "too few runs" are what more runs can settle.)"""
    return through is not None and all(v.kind not in verdicts.OPEN_KINDS for v in through.verdicts)


def _readiness(through: verdicts.Verdicts | None, plan: Plan) -> power.Readiness | None:
    """Each throughput comparison's runs against what its noise needs (None without a baseline)."""
    if through is None:
        return None
    return power.readiness(((v.baseline_values, v.candidate_values, v.decided in verdicts.FAILURE_KINDS)
                            for v in through.verdicts), plan.comparisons())


def _stop(reason: str, repetitions: int, spread: verdicts.Spread, plan: Plan, ready: power.Readiness | None) -> dict:
    stop = {"reason": reason, "repetitions": repetitions, "worst_half_width": spread.worst_half_width,
            "target": plan.target_ci, "open_pairs": spread.open_pairs}
    if ready is not None:  # what "power" means here: the difference, the family, the runs the noisiest pair needs
        stop |= {"detect": power.DETECT, "family": ready.family, "runs_needed": ready.most_needed}
    if plan.budget_s is not None:
        stop["budget_s"] = plan.budget_s
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
