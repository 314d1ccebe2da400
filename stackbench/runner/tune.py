"""`stackbench tune`: a stack's best pool for one question, measured — the probe's run (what
a worker holds, how busy it kept the CPUs), then every candidate in one run; the choice by
analysis/tuning.py's rules, stored with the runs that measured it (docs/methods/tuning.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace

from stackbench import workloads
from stackbench.analysis import tuning
from stackbench.analysis.capacity import SLO
from stackbench.errors import ServerError
from stackbench.events import Events
from stackbench.planning import machine
from stackbench.planning import tune as tune_plan
from stackbench.planning.plan import Plan, StackVariant
from stackbench.planning.tune import TuneQuestion
from stackbench.model.cell import StoredCell
from stackbench.model.tuning import Candidate, OneWorkerBound, SlowCost
from stackbench.runner import Lab, Options, Outcome, run_plan
from stackbench.store import Store

@dataclass(frozen=True)
class Tuned:
    tuning_id: int
    probe_run_id: int | None  # None: a rate's smallest pool served it, nothing else was measured
    run_id: int  # the candidates' run
    first_run_id: int | None  # a rate's smallest pool's run, when the others were measured after it
    memory: tuning.WorkerMemory | None
    limit_bytes: int | None
    bound: int
    sizes: dict[str, int]
    trials: list[tuning.Trial]
    choice: tuning.Choice
    knobs: dict[str, object]  # what a plan's knobs = "tuned" takes
    slow_cost: SlowCost | None = None  # a mix with slow requests: what one cost the others


@dataclass(frozen=True)
class _Slow:
    """The question's workload's deliberately slow URLs ({path: hold, ms}) and every URL's
    weight; empty for an ordinary workload."""

    paths: dict[str, int]
    weights: dict[str, int]

    @classmethod
    def of(cls, workload_id: str) -> "_Slow":
        if workload_id not in workloads.IDS:
            return cls({}, {})
        urls = workloads.get(workload_id).urls
        return cls({u.path: u.slow_ms for u in urls if u.slow_ms}, {u.path: u.weight for u in urls})

    def cost(self, q: TuneQuestion, found: list[tuning.Trial], chosen: tuning.Trial,
             ruled_out: OneWorkerBound | None = None) -> SlowCost | None:
        return tuning.slow_cost(found, chosen, self.paths, self.weights, q.concurrency, q.rate, ruled_out)

    def one_ruled_out(self, q: TuneQuestion, slo: SLO | None) -> OneWorkerBound | None:
        return tuning.one_worker_ruled_out(self.paths, self.weights, q.rate, slo)

    def question(self, q: TuneQuestion) -> dict[str, object]:
        """The question as stored: with its slow URLs, so a review judges them alike."""
        return q.as_dict() | ({"slow": self.paths} if self.paths else {})


def slo_of(q: TuneQuestion) -> SLO | None:
    return SLO.from_dict(q.slo) if q.slo else None


def tune(q: TuneQuestion, store: Store, events: Events | None = None, options: Options | None = None,
         lab: Lab | None = None) -> Tuned:
    pool = tune_plan.pool_of(q.stack_id)
    slo = slo_of(q)
    slow = _Slow.of(q.workload)
    first_trials: list[tuning.Trial] = []
    first_runs: list[int] = []
    ruled_out = slow.one_ruled_out(q, slo)
    if q.rate is not None and ruled_out is None:
        # At a rate every pool that serves it serves the same responses a second, so the
        # smallest that serves is the choice (analysis/tuning.py): the smallest goes first,
        # and when it serves nothing larger is measured.
        smallest = Candidate(1, one_request=pool.holds_connections and q.keepalive)
        first = run_plan(tune_plan.candidates_plan(q, [smallest]), store, events, options, lab)
        first_runs.append(first.run_id)
        first_trials = tuning.trials(_measured(store, first), {tune_plan.candidate_label(pool, smallest): 1}, slo,
                                     slow.paths)
        busy = _busiest(store, first.run_id, q)
        saturated = busy is not None and busy >= tuning.SATURATED
        if first_trials[0].serves or saturated:
            # Served; or it did not while the CPU was already busy: a larger pool can only
            # queue for the same CPU (analysis/tuning.py rule 3), so none is measured.
            reason = tuning.Reason.SMALLEST_SERVES if first_trials[0].serves else tuning.Reason.CPU_SATURATED
            choice = tuning.Choice(first_trials[0], reason, first_trials[0] if first_trials[0].serves else None)
            knobs = tune_plan.candidate_knobs(q, pool, smallest)
            sizes = {tune_plan.candidate_label(pool, smallest): 1}
            cost = slow.cost(q, first_trials, choice.chosen)
            tuning_id = store.record_tuning(None, first.run_id, q.stack_id, q.workload, q.key(), slow.question(q),
                                            None, sizes, 1, knobs, choice.reason.value, cost)
            return Tuned(tuning_id, None, first.run_id, None, None, None, q.concurrency, sizes, first_trials, choice,
                         knobs, cost)
    if q.rate is not None and q.concurrency >= 2:
        # One worker failed with CPU to spare (one process held by slow requests, or
        # waiting), or cannot meet the SLO by construction (analysis/slow_requests.py rule
        # 3: not measured): the next size, 2, is in every candidate list the probe could
        # give (its 4 workers fit any machine the lab accepts), so it goes next, before the
        # probe; when it serves the rate with its memory, the stack's and its database's
        # peak, within the bound's HEADROOM of the machine, it is the smallest that serves
        # and the choice.
        pair = Candidate(2, one_request=pool.holds_connections and q.keepalive)
        second = run_plan(tune_plan.candidates_plan(q, [pair]), store, events, options, lab)
        second_cells = _measured(store, second)
        pair_label = tune_plan.candidate_label(pool, pair)
        found = tuning.trials(second_cells, {pair_label: 2}, slo, slow.paths)
        limit = _limit(q)
        busy2 = _busiest(store, second.run_id, q)
        fitted = found[0].serves and limit is not None and tuning.fits(second_cells, limit)
        if fitted or (not found[0].serves and busy2 is not None and busy2 >= tuning.SATURATED):
            # Served within the bound; or failed with the CPU busy, where no larger pool
            # can serve more (rule 3): the pool of 2 is kept — it shares the CPU through
            # a slow request's hold, as one process cannot
            trials = first_trials + found
            choice = (tuning.choose(trials, at_rate=True) if fitted
                      else tuning.Choice(found[0], tuning.Reason.CPU_SATURATED, None))
            knobs = tune_plan.candidate_knobs(q, pool, pair)
            sizes = {tune_plan.candidate_label(pool, Candidate(t.size, t.one_request)): t.size for t in trials}
            cost = slow.cost(q, trials, choice.chosen, ruled_out)
            question = slow.question(q) | ({"first_run_id": first_runs[0]} if first_runs else {})
            tuning_id = store.record_tuning(None, second.run_id, q.stack_id, q.workload, q.key(), question, None,
                                            sizes, 2, knobs, choice.reason.value, cost)
            return Tuned(tuning_id, None, second.run_id, first_runs[0] if first_runs else None, None, limit,
                         q.concurrency, sizes, trials, choice, knobs, cost)
        first_runs.append(second.run_id)
        first_trials += found
    probe = run_plan(tune_plan.probe_plan(q, min(tune_plan.PROBE_SIZE, q.concurrency)), store, events, options, lab)
    probed = _measured(store, probe)
    profile = tune_plan.machine_profile(q)
    memory, busy = None, None
    if probed:
        cell = probed[-1]
        memory = tuning.worker_memory(store.processes(cell.id), pool.worker, cell.cost.service_mem_peak_bytes)
        cpus = profile.cpus if profile and profile.cpus else len(cell.pinning.server_cpus)
        busy = tuning.cpu_busy(cell, cpus)
    limit = _limit(q)
    bound = tuning.pool_bound(limit, memory.base_bytes, memory.worker_bytes) if memory and limit else q.concurrency
    cpu_top = min(tune_plan.PROBE_SIZE, q.concurrency) if busy is not None and busy >= tuning.SATURATED else None
    every = tuning.candidates(bound, q.concurrency, cpu_top, pool.holds_connections, q.keepalive)
    # One worker ruled out is not measured — unless the memory bound leaves nothing else
    candidates = [c for c in every if not (ruled_out and c.size == 1)] or every
    sizes = {tune_plan.candidate_label(pool, c): c.size for c in candidates}
    # The pools measured before the probe stay candidates only where its bound keeps them
    # (the smallest always is one)
    kept = {(c.size, c.one_request) for c in candidates}
    trials = [t for t in first_trials if t.size == 1 or (t.size, t.one_request) in kept]
    measured = {(t.size, t.one_request) for t in trials}
    rest = [c for c in candidates if (c.size, c.one_request) not in measured]
    sizes = {**{tune_plan.candidate_label(pool, Candidate(t.size, t.one_request)): t.size for t in trials}, **sizes}
    run_id = first_runs[-1] if first_runs else None
    if rest:
        run = run_plan(tune_plan.candidates_plan(q, rest), store, events, options, lab)
        run_id = run.run_id
        trials += tuning.trials(_measured(store, run), {tune_plan.candidate_label(pool, c): c.size for c in rest},
                                slo, slow.paths)
    assert run_id is not None
    choice = tuning.choose(trials, at_rate=q.rate is not None)
    knobs = tune_plan.candidate_knobs(q, pool, Candidate(choice.chosen.size, choice.chosen.one_request))
    mem = None
    if memory:
        mem = {"worker_bytes": memory.worker_bytes, "base_bytes": memory.base_bytes, "workers": memory.workers,
               "limit_bytes": limit, "bound": bound, "headroom": tuning.HEADROOM, "cpu_busy": busy,
               "cpu_top": cpu_top}
    earlier = [r for r in first_runs if r != run_id]
    question = slow.question(q) | ({"first_run_id": earlier[0]} if earlier else {}) | (
        {"second_run_id": earlier[1]} if len(earlier) > 1 else {})
    cost = slow.cost(q, trials, choice.chosen, ruled_out)
    tuning_id = store.record_tuning(probe.run_id, run_id, q.stack_id, q.workload, q.key(), question, mem,
                                    sizes, choice.chosen.size, knobs, choice.reason.value, cost)
    return Tuned(tuning_id, probe.run_id, run_id, earlier[0] if earlier else None, memory, limit, bound,
                 sizes, trials, choice, knobs, cost)


def _limit(q: TuneQuestion) -> int | None:
    """The memory a pool is sized within: the machine profile's, else this host's."""
    profile = tune_plan.machine_profile(q)
    return profile.memory_bytes if profile and profile.memory_bytes else machine.mem_total_bytes()


def _busiest(store: Store, run_id: int, q: TuneQuestion) -> float | None:
    """The highest share of the machine's CPUs a run's cells kept busy (None: not measured)."""
    profile = tune_plan.machine_profile(q)
    shares = []
    for cell in store.cells(run_id):
        cpus = profile.cpus if profile and profile.cpus else len(cell.pinning.server_cpus)
        share = tuning.cpu_busy(cell, cpus)
        if share is not None:
            shares.append(share)
    return max(shares, default=None)


def _measured(store: Store, outcome: Outcome) -> list[StoredCell]:
    """The run's cells; a run that measured none (the stack never came up) ends the tuning
    with its first error. A candidate that failed under the load (OOM-killed, unserved
    clients) is a result, not an error: its cells are kept."""
    cells = store.cells(outcome.run_id)
    if not any(c.measured for c in cells):
        raise outcome.errors[0] if outcome.errors else ServerError(f"run {outcome.run_id} measured nothing")
    return cells


def resolve(plan: Plan, store: Store, events: Events | None = None, options: Options | None = None,
            lab: Lab | None = None) -> Plan:
    """The plan with each `knobs = "tuned"` stack's pool sized: the newest stored tuning of
    the same question (the stack, the workload, the plan's largest concurrency, its
    keep-alive and machine), else one measured now. Its label names what was chosen, and
    the plan as stored (`raw`) holds the chosen knobs, so a resumed run measures the same."""
    if not any(v.tuned for v in plan.stacks):
        return plan
    stacks, raw = [], [dict(e) for e in plan.raw["stacks"]]
    renamed: dict[str, str] = {}
    for i, v in enumerate(plan.stacks):
        if not v.tuned:
            stacks.append(v)
            continue
        q = question_for(plan, v)
        found = store.latest_tuning(q.key())
        if found is None:
            found = store.tuning(tune(q, store, events, options, lab).tuning_id)
        label = tune_plan.tuned_label(v.label, v.id, found.chosen_size, found.one_request)
        renamed[v.label] = label
        stacks.append(replace(v, label=label, knobs=dict(found.knobs), tuning=found.id))
        raw[i] = {**raw[i], "label": label, "knobs": dict(found.knobs)}
    baseline = renamed.get(plan.baseline, plan.baseline) if plan.baseline else plan.baseline
    data = {**plan.raw, "stacks": raw}
    if baseline:
        data["baseline"] = baseline
    return replace(plan, stacks=stacks, baseline=baseline, raw=data)


def question_for(plan: Plan, v: StackVariant) -> TuneQuestion:
    """What a plan's tuned stack is tuned for: its one workload (or `tune.workload`, the
    traffic the site sees) at `tune.concurrency`, else its largest concurrency; or at
    `tune.rate` in an open loop, within the plan's SLO."""
    workload = plan.tune_workload or plan.workloads[0]
    if plan.tune_rate is not None:
        slo = plan.load.slo
        return TuneQuestion(v.id, workload, plan.load.connections_for(plan.tune_rate),
                            machine=plan.raw.get("machine"), slo=slo.as_dict() if slo else None,
                            keepalive=plan.keepalive[0], duration=f"{plan.duration_s or 4}s",
                            warmup=f"{plan.warmup_s}s", timeout=f"{plan.timeout_s}s",
                            repetitions=plan.tune_repetitions, rate=plan.tune_rate)
    level = plan.tune_concurrency or max(plan.load.concurrency)
    return TuneQuestion(v.id, workload, level, machine=plan.raw.get("machine"),
                        keepalive=plan.keepalive[0], duration=f"{plan.duration_s or 4}s", warmup=f"{plan.warmup_s}s",
                        timeout=f"{plan.timeout_s}s", repetitions=plan.tune_repetitions)
