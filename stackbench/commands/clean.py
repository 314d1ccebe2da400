"""`stackbench clean`: remove what labs that died without cleaning up (kill -9, an OOM
kill, a power cut) left on this machine — what the next `stackbench run` would remove
anyway (leftovers.py) — and mark the runs they left `running` in the store as crashed.
`--dry-run` lists instead. One line per thing."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from stackbench.upkeep import leftovers, lock
from stackbench.errors import UsageError
from stackbench.states import RunStatus
from stackbench.store import Store


def cmd_clean(args: argparse.Namespace) -> int:
    run_lock = lock.RunLock()
    try:
        run_lock.acquire()
    except UsageError:
        # A lab measures now: it removes what it made itself, and its run is no crash.
        raise UsageError(f"a stackbench run is measuring now ({lock.holder() or 'pid unknown'})",
                         hint="clean when it is done (it removes what it made itself)") from None
    try:
        swept = leftovers.sweep(dry_run=args.dry_run)
        for left in swept.removed + swept.kept:
            print(left.line(args.dry_run))
        for left, why in swept.failed:
            print(f"could not remove {left.kind} {left.what} ({left.why}): {why}", file=sys.stderr)
        crashed = _crashed_runs(args.db, args.dry_run)
        for run_id in crashed:
            print(f"{'would mark' if args.dry_run else 'marked'} run {run_id} in {args.db} crashed (its lab is gone): "
                  f"finish it with `stackbench run --resume {run_id} --db {args.db}`")
        if not (swept.removed or swept.kept or swept.failed or crashed):
            print("nothing to clean: no lab left anything behind")
    finally:
        run_lock.release()
    return 1 if swept.failed else 0


def _crashed_runs(db: str, dry_run: bool) -> list[int]:
    """Runs the store says are running: with the lock held, their labs are gone."""
    if not Path(db).exists():
        return []  # clean never creates a store
    store = Store(db, must_exist=True)
    try:
        if dry_run:
            return [r["id"] for r in store.runs() if r["status"] == RunStatus.RUNNING]
        return store.mark_crashed()
    finally:
        store.close()
