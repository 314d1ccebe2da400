"""`stackbench report [RUN…] [-o FILE]`: the stored runs as one self-contained HTML file
(report/html/): the answers, the charts with their numbers, and how to reproduce them."""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from pathlib import Path

from stackbench.analysis.run import analyze
from stackbench.errors import StackbenchError, UsageError
from stackbench.report.html import page
from stackbench.store import Store


def cmd_report(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    run_ids = list(dict.fromkeys(args.runs)) or [store.latest_run_id()]
    if run_ids == [None]:
        raise StackbenchError(f"no runs in {args.db}", hint="`stackbench run` makes one")
    runs = [analyze(store.run(i), store.cells(i), store.search_rows(i)) for i in run_ids]
    now = dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")
    text = page.render(runs, store, now)
    out = Path(args.output or f"report-{'-'.join(map(str, run_ids))}.html")
    try:
        out.write_text(text, encoding="utf-8")
    except OSError as e:
        raise UsageError(f"cannot write {out}: {e.strerror}", hint="name another file with -o") from None
    print(f"wrote {out} ({len(text.encode()) / 1024:,.0f} KiB): open it in a browser; it needs no network",
          file=sys.stderr)
    return 0
