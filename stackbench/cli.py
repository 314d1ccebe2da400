"""The `stackbench` command. `run` reads like a table of contents:
load plan → validate → run (per stack: start, verify, load, store, stop) → report."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import traceback
from pathlib import Path

from stackbench import __version__, plan as plan_mod
from stackbench.errors import Interrupted, ServerError, StackbenchError, UsageError
from stackbench.analysis import questions
from stackbench.report.text import explain, stacks_list, table, timeline
from stackbench.report.text.progress import TerminalProgress
from stackbench.runner import Options, preflight, run_plan
from stackbench.store import Store

DEFAULT_DB = "results.sqlite"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="stackbench", description="Compare PHP web stacks on real servers.")
    p.add_argument("--version", action="version", version=f"stackbench {__version__}")
    p.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    sub = p.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="run a plan (the default plan when none is given) and print the results")
    run.add_argument("plan", nargs="?", help="plan file (TOML); default: the built-in default plan")
    run.add_argument("--db", default=DEFAULT_DB, help=f"results store (SQLite), default {DEFAULT_DB}")
    run.add_argument("--dry-run", action="store_true", help="validate the plan and list its cells; start nothing")
    run.add_argument("--keep-rundir", action="store_true", help="keep each stack's run directory (configs, logs)")
    run.add_argument("--workdir", type=Path, help="where run directories are made (default: the temp dir)")

    show = sub.add_parser("show", help="print the table of a stored run")
    show.add_argument("run_id", nargs="?", type=int, help="run id (default: the latest)")
    show.add_argument("--db", default=DEFAULT_DB)

    runs = sub.add_parser("runs", help="list the stored runs")
    runs.add_argument("--db", default=DEFAULT_DB)

    sub.add_parser("stacks", help="list the stacks, whether they can run here, and their knobs")

    tl = sub.add_parser("timeline", help="one cell second by second: load, latency, processes, memory, CPU")
    tl.add_argument("cell", help="RUN:SEQ (the # column of `stackbench show`)")
    tl.add_argument("--db", default=DEFAULT_DB)

    ex = sub.add_parser("explain", help="compare what two cells cost: CPU, memory, processes, system calls",
                        description="A and B are cells: RUN:SEQ, or a stack label of --run (default: the latest)"
                                    " narrowed by --workload/--concurrency/--keepalive to one cell.")
    ex.add_argument("a")
    ex.add_argument("b")
    ex.add_argument("--run", type=int, help="run the labels refer to (default: the latest)")
    ex.add_argument("--workload")
    ex.add_argument("-c", "--concurrency", type=int)
    ex.add_argument("--keepalive", choices=("on", "off"))
    ex.add_argument("--db", default=DEFAULT_DB)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    # SIGTERM is handled like Ctrl-C: stop the servers, keep what was measured.
    signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
    try:
        return COMMANDS[args.command](args)
    except StackbenchError as e:
        if args.debug:
            traceback.print_exc()
        print(e.render(), file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print("\ninterrupted: servers stopped; cells measured so far are stored", file=sys.stderr)
        return Interrupted.exit_code
    except BrokenPipeError:
        # `stackbench show | head`: the reader left; say nothing more.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def cmd_run(args: argparse.Namespace) -> int:
    plan = plan_mod.load(args.plan)
    cells = plan_mod.expand(plan)
    if args.dry_run:
        # The same checks as a real run makes before it measures: installed, configs
        # accepted by each server's own checker, knob combinations.
        preflight(plan, Options(workdir=args.workdir))
        for c in cells:
            print(f"{c.seq:4d}  {c.stack.label}  {c.workload}  c={c.concurrency}  "
                  f"keep-alive {'on' if c.keepalive else 'off'}")
        # start + verify + stop ≈ 0.5 s per cell (restart = "cell"), measured here
        per_cell = (plan.duration_s or 1.0) + plan.warmup_s + plan.syscall_profile_s + 0.5
        print(f"{len(cells)} cells, about {len(cells) * per_cell / 60:.1f} min; configs checked")
        return 0
    store = Store(args.db)
    progress = TerminalProgress()
    outcome = None
    try:
        outcome = run_plan(plan, store, progress, Options(workdir=args.workdir, keep_rundir=args.keep_rundir))
    finally:
        # Also after an error or Ctrl-C: show what this run stored. (The progress
        # observer knows the run id even when run_plan did not return.)
        run_id = outcome.run_id if outcome else progress.run_id
        if run_id is not None:
            cells = store.cells(run_id)
            if cells:
                table.render(store.run(run_id), cells, sys.stdout)
            print(f"\nstored as run {run_id} in {args.db}", file=sys.stderr)
    if outcome.errors:
        return ServerError.exit_code
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_id = args.run_id or store.latest_run_id()
    if run_id is None:
        raise StackbenchError(f"no runs in {args.db}", hint="`stackbench run` makes one")
    table.render(store.run(run_id), store.cells(run_id), sys.stdout)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    for r in Store(args.db, must_exist=True).runs():
        print(f"{r['id']:4d}  {r['started_at']}  {r['status']:<11}  {r['cells']:4d} cells  {r['plan_name']}")
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    stacks_list.render(sys.stdout)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    cells = [_find_cell(store, ref, args) for ref in (args.a, args.b)]
    extras = [{"processes": store.processes(c["id"]), "syscalls": store.syscalls(c["id"])} for c in cells]
    explain.render(cells[0], cells[1], extras[0], extras[1], sys.stdout)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_part, _, seq_part = args.cell.partition(":")
    if not (run_part.isdigit() and seq_part.isdigit()):
        raise UsageError(f"{args.cell!r} is not a cell reference", hint="write RUN:SEQ, e.g. 1:12")
    cell = store.cell(int(run_part), int(seq_part))
    timeline.render(cell, store.samples(cell["id"]), sys.stdout)
    return 0


def _find_cell(store: Store, ref: str, args: argparse.Namespace) -> dict:
    run_part, _, seq_part = ref.partition(":")
    if run_part.isdigit() and seq_part.isdigit():
        return store.cell(int(run_part), int(seq_part))
    run_id = args.run or store.latest_run_id()
    if run_id is None:
        raise UsageError(f"no runs in {args.db}")
    keepalive = None if args.keepalive is None else args.keepalive == "on"
    found = questions.matching(store.cells(run_id), ref, workload=args.workload, concurrency=args.concurrency,
                               keepalive=keepalive)
    if len(found) != 1:
        labels = sorted({c["stack_label"] for c in store.cells(run_id)})
        raise UsageError(f"{ref!r} matches {len(found)} cells of run {run_id}, not one",
                         hint="name a cell as RUN:SEQ, or narrow with --workload, -c and --keepalive; "
                              f"stacks in run {run_id}: {', '.join(labels)}")
    return found[0]


COMMANDS = {"run": cmd_run, "show": cmd_show, "runs": cmd_runs, "stacks": cmd_stacks, "explain": cmd_explain,
            "timeline": cmd_timeline}
