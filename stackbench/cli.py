"""The `stackbench` command. `run` reads like a table of contents:
load plan → validate → run (per stack: start, verify, load, store, stop) → report."""

from __future__ import annotations

import argparse
import signal
import sys
import traceback
from pathlib import Path

from stackbench import __version__, plan as plan_mod
from stackbench.errors import Interrupted, ServerError, StackbenchError
from stackbench.report import stacks_list, table
from stackbench.report.progress import TerminalProgress
from stackbench.runner import Options, run_plan
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


def cmd_run(args: argparse.Namespace) -> int:
    plan = plan_mod.load(args.plan)
    cells = plan_mod.expand(plan)
    if args.dry_run:
        for c in cells:
            print(f"{c.seq:4d}  {c.stack.label}  {c.workload}  c={c.concurrency}  "
                  f"keep-alive {'on' if c.keepalive else 'off'}")
        per_cell = (plan.duration_s or 0) + plan.warmup_s + 0.3
        print(f"{len(cells)} cells, about {len(cells) * per_cell / 60:.1f} min")
        return 0
    store = Store(args.db)
    outcome = None
    try:
        outcome = run_plan(plan, store, TerminalProgress(),
                           Options(workdir=args.workdir, keep_rundir=args.keep_rundir))
    finally:
        run_id = outcome.run_id if outcome else store.latest_run_id()
        if run_id is not None and store.cells(run_id):
            table.render(store.run(run_id), store.cells(run_id), sys.stdout)
            print(f"\nstored as run {run_id} in {args.db}", file=sys.stderr)
    if outcome.errors:
        return ServerError.exit_code
    return 0


def cmd_show(args: argparse.Namespace) -> int:
    store = Store(args.db)
    run_id = args.run_id or store.latest_run_id()
    if run_id is None:
        raise StackbenchError(f"no runs in {args.db}", hint="`stackbench run` makes one")
    table.render(store.run(run_id), store.cells(run_id), sys.stdout)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    for r in Store(args.db).runs():
        print(f"{r['id']:4d}  {r['started_at']}  {r['status']:<11}  {r['cells']:4d} cells  {r['plan_name']}")
    return 0


def cmd_stacks(args: argparse.Namespace) -> int:
    stacks_list.render(sys.stdout)
    return 0


COMMANDS = {"run": cmd_run, "show": cmd_show, "runs": cmd_runs, "stacks": cmd_stacks}
