"""Commands that read the store: show, runs, stacks, timeline, explain, compare, export."""

from __future__ import annotations

import argparse
import sys

from stackbench.upkeep import lock
from stackbench.analysis import cells as cells_mod, compare as compare_mod, questions, timeline as tl_analysis
from stackbench.analysis.run import analyze
from stackbench.commands import sizing
from stackbench.errors import StackbenchError, UsageError
from stackbench.model.cell import StoredCell
from stackbench.report import export
from stackbench.report.text import explain, run_report, stacks_list, timeline, verdicts as verdicts_text
from stackbench.stacks import installed
from stackbench.stacks.registry import STACKS
from stackbench.states import RunStatus
from stackbench.store import Store
from stackbench.planning import hosts as hosts_spec


def cmd_show(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_id = _run_id(store, args.run_id, args.db)
    run = store.run(run_id)
    analysis = analyze(run, store.cells(run_id), store.search_rows(run_id), args.baseline)
    run_report.render(analysis, sys.stdout, every_run=args.all, wide=args.wide, explain=args.explain,
                      tunings={t.id: t for t in store.tunings()})
    if _unfinished(run.status, lock.holder()):
        print(f"finish it with: stackbench run --resume {run_id} --db {args.db}"
              f"{hosts_spec.resume_flags(run.checked.hosts)}", file=sys.stderr)
    return 0


def cmd_runs(args: argparse.Namespace) -> int:
    busy = lock.holder()
    for r in Store(args.db, must_exist=True).runs():
        status = r["status"]
        if status == RunStatus.RUNNING and not busy:
            status = "running, but its lab is gone"  # the next run marks it crashed
        line = f"{r['id']:4d}  {r['started_at']}  {status:<11}  {r['cells']:4d} cells  {r['plan_name']}"
        print(line + (f"  (finish it: run --resume {r['id']})" if _unfinished(r["status"], busy) else ""))
    return 0


def _unfinished(status: str, busy: str | None) -> bool:
    """A run `run --resume` can finish: stopped, or still marked running with no lab alive."""
    return status in (RunStatus.INTERRUPTED, RunStatus.CRASHED) or (status == RunStatus.RUNNING and not busy)


def cmd_stacks(args: argparse.Namespace) -> int:
    # Whether each can run here: its binaries and their versions, asked of this machine.
    stacks_list.render([(stack, installed.describe(stack)) for stack in STACKS.values()], sys.stdout)
    return 0


def cmd_explain(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    cells = [_find_cell(store, ref, args) for ref in (args.a, args.b)]
    extras = [explain.CellExtras(store.processes(c.id), store.syscalls(c.id)) for c in cells]
    explain.render(cells[0], cells[1], extras[0], extras[1], sys.stdout)
    return 0


def cmd_timeline(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_part, _, seq_part = args.cell.partition(":")
    if not (run_part.isdigit() and seq_part.isdigit()):
        raise UsageError(f"{args.cell!r} is not a cell reference", hint="write RUN:SEQ, e.g. 1:12")
    cell = store.cell(int(run_part), int(seq_part))
    if args.walk:
        walk = tl_analysis.walk_of(store.cells(int(run_part)), cell)
        timeline.render_walk(tl_analysis.walk_seconds(walk, {c.id: store.samples(c.id) for c in walk}), sys.stdout)
        return 0
    timeline.render(cell, store.samples(cell.id), sys.stdout)
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Two stored runs (the same stacks asked the same questions), or two sets of cells
    RUN:SEQ,SEQ…: the first is the baseline, the verdicts have the same form as a run's."""
    store = Store(args.db, must_exist=True)
    a, b = (_cell_set(store, ref) for ref in (args.a, args.b))
    names = (_side(args.a), _side(args.b))
    if names[0] == names[1]:
        names = (f"A ({names[0]})", f"B ({names[1]})")
    idle = (_idle_regime(store, a), _idle_regime(store, b))
    result = compare_mod.compare(a, b, *names, band=args.equivalence, idle=idle)
    if not result.verdicts.verdicts:
        raise UsageError(f"{args.a} and {args.b} share no stack and question to compare",
                         hint="compare runs of the same plan, or name cells: RUN:SEQ,SEQ,…")
    verdicts_text.render_compare(result, sys.stdout)
    return 0


def _idle_regime(store: Store, cells: list) -> str:
    """What the idle cores of these cells' run did, in cpu_idle's words (upkeep/idle.py);
    "as-is" for a run stored before the lab recorded it."""
    return store.run(cells[0].run_id).idle_regime if cells else "as-is"


def cmd_export(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_id = _run_id(store, args.run_id, args.db)
    run, cells = store.run(run_id), store.cells(run_id)
    if args.verdicts and args.format == "json":
        raise UsageError("--verdicts picks the CSV table; the JSON document holds cells and verdicts anyway")
    cells_only = args.format == "csv" and not args.verdicts  # the cells' table needs no verdict
    analysis = None if cells_only else analyze(run, cells, store.search_rows(run_id), args.baseline)
    if args.verdicts and analysis is not None and analysis.verdicts is None:
        raise UsageError(f"run {run_id} has no baseline, so no verdicts",
                         hint="name one with --baseline LABEL (a stack of the run)")
    try:
        out = open(args.output, "w", newline="") if args.output else sys.stdout
    except OSError as e:
        raise UsageError(f"cannot write {args.output}: {e.strerror}") from None
    try:
        if analysis is None:
            export.write_cells(cells_mod.of(cells), out)
        elif args.verdicts:
            export.write_verdicts(analysis.verdicts, out)
        else:
            sized = sizing.of_runs(store, [run_id])
            export.write_document(analysis, out, {t.id: t for t in store.tunings()},
                                  sizing.read(store, sized[0]) if sized else None)
    finally:
        if args.output:
            out.close()
    return 0


def _run_id(store: Store, given: int | None, db: str) -> int:
    run_id = given or store.latest_run_id()
    if run_id is None:
        raise StackbenchError(f"no runs in {db}", hint="`stackbench run` makes one")
    return run_id


def _side(ref: str) -> str:
    return f"run {ref}" if ref.isdigit() else f"cells {ref}"


def _cell_set(store: Store, ref: str) -> list[StoredCell]:
    """RUN (every cell) or RUN:SEQ[,SEQ…]."""
    run_part, colon, seqs = ref.partition(":")
    if not run_part.isdigit() or (colon and not all(s.strip().isdigit() for s in seqs.split(","))):
        raise UsageError(f"{ref!r} is neither a run nor a set of cells", hint="write RUN, or RUN:SEQ,SEQ,… e.g. 3:0,4,8")
    cells = store.cells(store.run(int(run_part)).id)
    if not seqs:
        return cells
    wanted = [int(s) for s in seqs.split(",")]
    found = [c for c in cells if c.seq in wanted]
    if len(found) != len(wanted):
        missing = sorted(set(wanted) - {c.seq for c in found})
        raise UsageError(f"run {run_part} has no cell {missing[0]}", hint="`stackbench show RUN --all` lists the cells")
    return found


def _find_cell(store: Store, ref: str, args: argparse.Namespace) -> StoredCell:
    run_part, _, seq_part = ref.partition(":")
    if run_part.isdigit() and seq_part.isdigit():
        return store.cell(int(run_part), int(seq_part))
    run_id = args.run or store.latest_run_id()
    if run_id is None:
        raise UsageError(f"no runs in {args.db}")
    keepalive = None if args.keepalive is None else args.keepalive == "on"
    rep = None if args.rep is None else args.rep - 1
    found = questions.matching(store.cells(run_id), ref, workload=args.workload, concurrency=args.concurrency,
                               keepalive=keepalive, repetition=rep)
    if len(found) != 1:
        labels = sorted({c.stack_label for c in store.cells(run_id)})
        raise UsageError(f"{ref!r} matches {len(found)} cells of run {run_id}, not one",
                         hint="name a cell as RUN:SEQ, or narrow with --workload, -c, --keepalive and --rep; "
                              f"stacks in run {run_id}: {', '.join(labels)}")
    return found[0]
