"""`stackbench sizings [ID]`: the stored sizings (a plan's [sizing]), or one's answer read
again from its sizes' runs (analysis/sizing.py; report/text/sizing.py)."""

from __future__ import annotations

import argparse
import sys
from typing import TextIO

from stackbench.analysis import capacity_results
from stackbench.analysis import sizing as sizing_analysis
from stackbench.report.text import sizing as sizing_text
from stackbench.store import Store


def cmd_sizings(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    if args.id is not None:
        show(store, args.id, sys.stdout)
        return 0
    found = store.sizings()
    if not found:
        print("no sizings stored (a plan with a [sizing] table, or `stackbench scenario run sizing`, makes one)")
    for s in found:
        sizes = ", ".join(r.size for r in s.runs)
        print(f"{s.id:>3}  {s.created_at}  {s.name}: {s.target_rate:g} requests/s on {sizes or 'no size yet'}")
    return 0


def show(store: Store, sizing_id: int, out: TextIO) -> None:
    """A stored sizing's answer, read from its sizes' runs."""
    s = store.sizing(sizing_id)
    per_size, slo = {}, None
    for r in s.runs:
        run = store.run(r.run_id)
        parts = capacity_results.plan_parts(run)
        slo = parts[0].describe() if parts else slo
        per_size[r.size] = sizing_analysis.of_run(s, r.size, run, store.cells(r.run_id), store.search_rows(r.run_id))
    sizing_text.render(sizing_analysis.answer(s, per_size), slo, out)


