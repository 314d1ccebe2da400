"""`stackbench report [RUN…] [--sizing ID] [-o FILE]`: the stored runs as one self-contained
HTML file (report/html/): the answers, the charts with their numbers, and how to reproduce
them — with, for each tuned stack, the stored tuning it took, reviewed (analysis/tuning.py),
and above them each sizing whose sizes the runs measured (`--sizing ID` adds all its runs)."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from stackbench.analysis import tuning
from stackbench.analysis.run import RunAnalysis, analyze
from stackbench.commands import sizing
from stackbench.errors import StackbenchError, UsageError
from stackbench.report.html import page
from stackbench.store import Store


def cmd_report(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    named = [store.sizing(i) for i in dict.fromkeys(args.sizing or [])]
    for s in named:
        if not any(r.run_id is not None for r in s.runs):  # none yet, or every size's search skipped
            what = "measured" if not s.runs else "searched (each one's tuning found its CPU busy)"
            raise UsageError(f"sizing {s.id} has no size {what} yet", hint="`stackbench sizings ID` prints its answer")
    searched = [r.run_id for s in named for r in s.runs if r.run_id is not None]
    run_ids = list(dict.fromkeys([*args.runs, *searched])) or [store.latest_run_id()]
    if run_ids == [None]:
        raise StackbenchError(f"no runs in {args.db}", hint="`stackbench run` makes one")
    runs = [analyze(store.run(i), store.cells(i), store.search_rows(i)) for i in run_ids]
    sized = [sizing.read(store, s) for s in sizing.of_runs(store, run_ids)]
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    text = page.render(runs, store, now, tunings(store, runs), sized)
    default = (f"report-sizing-{'-'.join(str(s.id) for s in named)}.html" if named and not args.runs
               else f"report-{'-'.join(map(str, run_ids))}.html")
    out = Path(args.output or default)
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror}", hint="name another file with -o") from None
    print(f"wrote {out} ({len(text.encode()) / 1024:,.0f} KiB): open it in a browser; it needs no network",
          file=sys.stderr)
    return 0


def tunings(store: Store, runs: list[RunAnalysis]) -> dict[int, dict[str, tuning.Review]]:
    """By run id: each tuned stack's stored tuning (the checked plan names it), reviewed
    from its runs' cells, by the stack's label; in a tuning's own candidates run (or its
    second stage's), that tuning, by the stack's id. A tuning no longer stored is left out."""
    stored = {t.id: t for t in store.tunings()}
    out: dict[int, dict[str, tuning.Review]] = {}
    for a in runs:
        run_id = a.run.id
        named = [(label, stored[i]) for label, i in a.run.checked.tunings.items() if i in stored]
        named += [(t.stack_id, t) for t in stored.values() if run_id in (*t.candidate_run_ids, t.keepalive_run_id)]
        found = {}
        for name, t in named:
            second = t.keepalive_run_id
            candidates = [c for i in t.candidate_run_ids
                          for c in (a.stored_cells if i == run_id else store.cells(i))]
            if candidates:
                found[name] = tuning.review(t, candidates, store.cells(second) if second else None)
        if found:
            out[run_id] = found
    return out
