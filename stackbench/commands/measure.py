"""Commands that measure: `run` (a plan, or `--resume RUN`) and `scenario run`.

Each reads like the table of contents of a run: load plan → validate → run (per stack:
start, verify, load, store, stop) → report."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from stackbench import scenarios
from stackbench.commands import sizing as sizing_cmd
from stackbench.planning import estimate, machine, plan as plan_mod, target
from stackbench.planning import sizing as sizing_mod, tune as tune_plan
from stackbench.upkeep import idle, lock, pinning
from stackbench.analysis import power, verdicts
from stackbench.analysis.run import analyze
from stackbench.errors import ServerError, StorageError, UsageError
from stackbench.network import calibrate
from stackbench.report.text import dry_run, run_report
from stackbench.report.words.clients import server_line
from stackbench.report.text.progress import TerminalProgress
from stackbench.runner import Options, Outcome, done_seqs, dry_check, repetitions, resume, run_plan
from stackbench.runner import sizing as sizing_runner
from stackbench.runner import tune as tune_runner
from stackbench.model.tuning import StoredTuning
from stackbench.states import RunStatus
from stackbench.model.environment import HostFacts
from stackbench.model.run import StoredRun
from stackbench.store import Store
from stackbench.planning import hosts as hosts_spec


IDLE_POLICIES = idle.POLICIES  # --cpu-idle's choices (the CLI names them through commands)


def cmd_run(args: argparse.Namespace) -> int:
    if args.resume is not None:
        if args.plan:
            raise UsageError("--resume continues a stored run with its own plan; leave the plan file out")
        return _resume(args)
    return run_asked(plan_mod.load(args.plan), args)


def cmd_scenario_run(args: argparse.Namespace) -> int:
    return run_asked(scenarios.get(args.name).plan(quick=args.quick, variant=args.variant), args)


def run_asked(plan: plan_mod.Plan, args: argparse.Namespace) -> int:
    """A plan asked on the command line (a file, a scenario, `stackbench size`): checked, then
    its dry run, or measured, sized or tuned first as it asks, and reported."""
    plan = _idle_flag(plan, args)
    target.check_bounded(plan.duration_s, args.allow_remote_target)
    if args.dry_run:
        if plan.sizing is not None:
            return _dry_run_sizing(plan, args)
        _dry_run(plan, args)
        return 0
    store = Store(args.db)
    store.ensure_writable()
    progress = TerminalProgress(mode=_mode(args))
    if plan.sizing is not None:
        return _size(plan, store, progress, args)
    plan = tune_runner.resolve(plan, store, progress, _options(args))
    for v in plan.stacks:
        if v.tuning is not None and _mode(args) == "auto":
            print(f"{v.label}: tuning {v.tuning} (`stackbench tunings {v.tuning}` shows every candidate)")
    outcome = None
    try:
        outcome = run_plan(plan, store, progress, _options(args))
    finally:
        _report_if_heard(store, outcome, progress, args)
    return ServerError.exit_code if outcome.errors else 0


def _size(plan: plan_mod.Plan, store: Store, progress: TerminalProgress, args: argparse.Namespace) -> int:
    """A plan with [sizing]: each size's tunings and capacity run (runner/sizing.py), then
    the answer (also after Ctrl-C: the sizes measured so far)."""
    sized = None
    try:
        sized = sizing_runner.size(plan, store, progress, _options(args))
    finally:
        sizing_id = sized.sizing_id if sized else (store.sizings()[-1].id if store.sizings() else None)
        if sizing_id is not None and _mode(args) == "auto":
            sizing_cmd.show(store, sizing_id, sys.stdout)
    return ServerError.exit_code if sized and sized.errors else 0


def _dry_run_sizing(plan: plan_mod.Plan, args: argparse.Namespace) -> int:
    """Each size's plan as its own dry run: its machine, its tunings, its searches; then the
    whole sizing's time."""
    assert plan.sizing is not None
    sizes = sizing_runner.size_plans(plan)  # every size checked before anything is said
    n = len(sizes)
    print(f"sizing: {plan.sizing.target.describe()}, on {n} size{'s' if n != 1 else ''}: each size's stacks "
          "tuned for the target there, then one capacity search a stack and repetition")
    total, tunings = estimate.NOTHING, 0
    until = plan.sizing.until_enough
    for i, (size, one) in enumerate(sizes):
        print(f"\n— {size.label}{f' (${size.price:g} a month)' if size.price is not None else ''} —")
        here = _dry_run(one, args)
        # until_enough: at least the middle size (measured first, for every stack), at most every size
        first = sizing_mod.first(n) if until else i
        total += here if i == first else estimate.Estimate(0.0, here.high_s, here.worst_s)
        tunings += len(_tunings(one, args.db))
    parts = _counted(total_sizes=n, tunings=tunings, searches=True)
    if until:
        parts.append("each stack's smallest enough size searched for (until_enough): the middle size first, then "
                     "the next smaller or larger — from the middle size alone to every size")
    print("\n" + dry_run.in_all_line(total, parts))
    return 0


def _resume(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run = store.run(args.resume)
    if run.status == RunStatus.COMPLETE:
        raise UsageError(f"run {args.resume} is complete: nothing to resume",
                         hint="`stackbench show` prints it; `stackbench run` starts a new one")
    busy = lock.holder()
    if run.status == RunStatus.RUNNING and busy:
        raise UsageError(f"run {args.resume} is being measured now ({busy})",
                         hint="wait for it to finish; if it stops early, resume it then")
    store.ensure_writable()
    asked = run.idle_asked
    if args.cpu_idle and args.cpu_idle != asked:
        # Its cells so far were measured one way: the rest must be too (one environment a run).
        raise UsageError(f"run {args.resume} was measured with cpu_idle = \"{asked}\"; resume it the same way",
                         hint=f"leave --cpu-idle out (or give --cpu-idle {asked})")
    plan = _as_measured(plan_mod.parse(run.plan, run.plan_source), run)
    target.check_bounded(plan.duration_s, args.allow_remote_target)
    # A failed cell (its server failed) is measured again, an unfinished capacity search
    # starts over; what was measured is kept.
    done = done_seqs(plan, store, args.resume)
    progress = TerminalProgress(mode=_mode(args))
    outcome = None
    try:
        outcome = resume(args.resume, plan, done, store, progress, _options(args))
    finally:
        _report_if_heard(store, outcome, progress, args, run_id=args.resume)
    return ServerError.exit_code if outcome.errors else 0


def _as_measured(plan: plan_mod.Plan, run: StoredRun) -> plan_mod.Plan:
    """The rest of a run measured as its first part was. Its idle cores as it asked them
    (StoredRun.idle_asked), and "auto" as what it did then: the engine's cores held
    ("poll-engine": refused now if they cannot be) or not ("as-is") — a resume must not
    switch silently. A run stored before the modes alternated is expanded in the plan's
    order, so each seq is the cell it was."""
    asked = run.idle_asked
    if asked == idle.AUTO:
        asked = idle.POLL_ENGINE if run.idle_regime == idle.POLL_ENGINE else idle.AS_IS
    return replace(plan, cpu_idle=asked, mode_order=run.environment.mode_order or "as-written")


def _idle_flag(plan: plan_mod.Plan, args: argparse.Namespace) -> plan_mod.Plan:
    """--cpu-idle in place of the plan's cpu_idle, written into the stored plan too (a
    resumed run keeps it, and may not change it)."""
    if not args.cpu_idle:
        return plan
    return replace(plan, cpu_idle=args.cpu_idle, raw=plan.raw | {"cpu_idle": args.cpu_idle})


def _mode(args: argparse.Namespace) -> str:
    return "json" if getattr(args, "json", False) else "quiet" if getattr(args, "quiet", False) else "auto"


def _options(args: argparse.Namespace) -> Options:
    return Options(workdir=args.workdir, keep_rundir=args.keep_rundir, allow_remote_target=args.allow_remote_target)


def _report_if_heard(store: Store, outcome: Outcome | None, progress: TerminalProgress,
                     args: argparse.Namespace, run_id: int | None = None) -> None:
    """`_report`, unless the terminal is gone (closed: SIGHUP, then EIO on every write):
    what the run stored stays stored, and the Ctrl-C or error that ended it must not be
    replaced by the failure to say so."""
    try:
        _report(store, outcome, progress, args, run_id)
    except OSError:
        pass


def _report(store: Store, outcome: Outcome | None, progress: TerminalProgress, args: argparse.Namespace,
            run_id: int | None = None) -> None:
    """Also after an error or Ctrl-C: show what this run stored. (The progress observer
    knows the run id even when the runner did not return.)"""
    run_id = outcome.run_id if outcome else (run_id or progress.run_id)
    if run_id is None:
        return
    cells = store.cells(run_id)
    if cells and _mode(args) == "auto":
        run_report.render(analyze(store.run(run_id), cells, store.search_rows(run_id)), sys.stdout,
                          wide=getattr(args, "wide", False), explain=getattr(args, "explain", False),
                          tunings={t.id: t for t in store.tunings()})
    print(f"\nstored as run {run_id} in {args.db}", file=sys.stderr)
    flags = hosts_spec.resume_flags(store.run(run_id).checked.hosts)
    if outcome is None or outcome.status in (RunStatus.INTERRUPTED, RunStatus.CRASHED):
        print(f"finish it with: stackbench run --resume {run_id} --db {args.db}{flags}", file=sys.stderr)
    elif outcome.status == RunStatus.FAILED:
        print(f"after fixing the cause, measure its failed cells again with: stackbench run --resume {run_id} "
              f"--db {args.db}{flags}", file=sys.stderr)


def _stored_tuning(plan: plan_mod.Plan, v: plan_mod.StackVariant, db: str) -> StoredTuning | None:
    """The tuning a run would reuse for a tuned stack (a dry run makes no store)."""
    if not Path(db).exists():
        return None
    return Store(db, must_exist=True).latest_tuning(tune_runner.question_for(plan, v).key())


def _tunings(plan: plan_mod.Plan, db: str) -> list[estimate.Estimate]:
    """The tunings a run of this plan measures first: its tuned stacks with no stored tuning
    of the same question."""
    return [estimate.of_tuning(tune_runner.question_for(plan, v), tune_plan.pool_of(v.id).holds_connections)
            for v in plan.stacks if v.tuned and _stored_tuning(plan, v, db) is None]


def _counted(total_sizes: int = 0, tunings: int = 0, calibrations: int = 0, searches: bool = False) -> list[str]:
    """What an "in all" line adds up."""
    parts = [f"{total_sizes} sizes' searches, at most" if total_sizes else
             "the capacity searches, at most" if searches else "the cells"]
    if calibrations:
        parts.append(f"{calibrations} network profile{'s' if calibrations != 1 else ''} measured")
    if tunings:
        parts.append(f"{tunings} tuning{'s' if tunings != 1 else ''} measured first (from the fewest pools to every "
                     "pool tried)")
    return parts


def _dry_run(plan: plan_mod.Plan, args: argparse.Namespace) -> estimate.Estimate:
    """The same checks as a real run makes before it measures: installed, configs
    accepted by each server's own checker, knob combinations; then what it measures and how
    long it takes, its tunings included."""
    hosts = dry_check(plan, Options(workdir=args.workdir,
                                    allow_remote_target=getattr(args, "allow_remote_target", False)))
    every = plan_mod.expand(plan)
    cells = estimate.measured(plan, every)
    print(dry_run.load_line(plan))
    if dry_run.protocol_line(plan):
        print(dry_run.protocol_line(plan))
    for facts in map(HostFacts.from_dict, hosts):
        print(f"{facts.role}: {server_line(facts)} (connected to check its packages and configs there)")
    if not plan.hosts.single_local:
        print(dry_run.clients_line(plan))
    for line in dry_run.network_lines(plan):
        print(line)
    window = dry_run.window_line(plan, 0 if plan.adaptive else repetitions.remeasure_rounds(plan))
    if window:
        print(window)
    if plan.machine is not None:
        print(dry_run.machine_line(plan.machine, machine.pinning(plan.machine, pinning.choose())))
    if plan.cpu_idle != idle.AS_IS:
        pins = machine.pinning(plan.machine, pinning.choose())
        print(dry_run.idle_line(plan.cpu_idle, engine_here=not plan.hosts.remote and not pins.shared))
    for v in plan.stacks:
        if v.tuned:
            print(dry_run.tuned_line(v, _stored_tuning(plan, v, args.db), tune_runner.question_for(plan, v),
                                     tune_plan.pool_of(v.id)))
    for c in cells:
        print(dry_run.cell_line(c, plan))
    # Each profile off loopback is measured once per run (runner/network.py): its time.
    calibrations_s = [calibrate.expected_seconds(p) for p in plan.links.values() if p.namespaced]
    print(dry_run.summary_line(plan, cells, every, calibrations_s))
    family = plan.comparisons()
    if family:  # with a baseline: can the repetitions give verdicts among this many comparisons?
        first = [c for c in every if c.repetition == 0]
        print(dry_run.power_line(power.of_plan(plan.runs_a_side, family, _machine_noise(args.db)), plan,
                                 plan.seconds(first), args.db))
    overrun = estimate.budget_overrun_s(plan, every)
    if overrun is not None:
        print(dry_run.budget_line(plan, overrun))
    tunings = _tunings(plan, args.db)
    total = sum(tunings, estimate.of_cells(plan, every) + estimate.Estimate.fixed(sum(calibrations_s)))
    print(dry_run.in_all_line(total, _counted(tunings=len(tunings), calibrations=len(calibrations_s),
                                              searches=plan.load.kind == "capacity")))
    return total


RECENT_RUNS = 5  # the machine's noise from its latest runs: how it is now, not a year ago


def _machine_noise(db: str) -> power.Noise | None:
    """This machine's run-to-run noise as its latest runs in the store showed it; None when
    there is no store (a dry run never makes one), it cannot be read, or it has no
    stack × question with repeated valid runs."""
    if db == ":memory:" or not Path(db).exists():
        return None
    try:
        store = Store(db, must_exist=True)
    except (UsageError, StorageError):
        return None
    try:
        cells = [c for r in store.runs()[-RECENT_RUNS:] for c in store.cells(r["id"])]
    finally:
        store.close()
    valid, _ = verdicts.split_valid(cells)
    return power.noise(valid)
