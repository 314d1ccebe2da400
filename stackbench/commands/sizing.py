"""`stackbench sizings [ID] [--core N]`: the stored sizings (a plan's [sizing]), or one's
answer read again from its sizes' runs (analysis/sizing.py; report/text/sizing.py), its
CPUs rescaled to a core of yardstick N when asked. `read` and `of_runs` also give `report`
and `export` the sizings their runs measured."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Iterable, TextIO

from stackbench.analysis import capacity_results
from stackbench.analysis import sizing as sizing_analysis
from stackbench.errors import UsageError
from stackbench.model.sizing import StoredSizing
from stackbench.planning import tune as tune_plan
from stackbench.report.text import sizing as sizing_text
from stackbench.store import Store


def cmd_sizings(args: argparse.Namespace) -> int:
    if args.core is not None and args.id is None:
        raise UsageError("--core rescales one sizing's answer: name it (`stackbench sizings ID --core N`)",
                         hint="`stackbench sizings` lists them")
    store = Store(args.db, must_exist=True)
    if args.id is not None:
        show(store, args.id, sys.stdout, args.core)
        return 0
    found = store.sizings()
    if not found:
        print("no sizings stored (a plan with a [sizing] table, or `stackbench scenario run sizing`, makes one)")
    for s in found:
        sizes = ", ".join(r.size for r in s.runs)
        core = f"; a core of yardstick {s.yardstick.score:.0f}" if s.yardstick else ""
        unit = "visits/s" if s.visit is not None else "requests/s"
        print(f"{s.id:>3}  {s.created_at}  {s.name}: {s.target_rate:.3g} {unit} on {sizes or 'no size yet'}{core}")
    return 0


def show(store: Store, sizing_id: int, out: TextIO, core: float | None = None) -> None:
    """A stored sizing's answer, read from its sizes' runs; `core`: rescaled to a core of
    that yardstick (default: the plan's `core`, if any)."""
    sizing_text.render(*read(store, store.sizing(sizing_id), core), out)


def read(store: Store, s: StoredSizing,
         core: float | None = None) -> tuple[sizing_analysis.SizingAnswer, str | None]:
    """A stored sizing's answer from its sizes' runs, and its SLO in words (each size's plan
    has the sizing's SLO); the terminal, the HTML report and the export show the same."""
    slo = None
    measured: dict[str, list[sizing_analysis.SizeCapacity]] = {}
    skipped: dict[str, dict[str, sizing_analysis.SizeCapacity]] = {}
    for r in s.runs:  # a size may hold two runs (`until_enough`'s stacks reach it at different steps)
        for stack, tuning_id in r.skipped.items():
            t = store.tuning(tuning_id)
            cells = [c for run_id in t.candidate_run_ids for c in store.cells(run_id)]
            c = sizing_analysis.of_tuning(s, r.size, stack, t, cells)
            label = tune_plan.tuned_label(stack, t.stack_id, t.chosen_size, t.one_request)
            skipped.setdefault(r.size, {})[stack] = replace(c, label=label)
        if r.run_id is None:
            measured.setdefault(r.size, [])
            continue
        run = store.run(r.run_id)
        parts = capacity_results.plan_parts(run)
        slo = parts[0].describe() if parts else slo
        tunings = {i: store.tuning(i) for i in run.checked.tunings.values()}
        found = sizing_analysis.of_run(s, r.size, run, store.cells(r.run_id), store.search_rows(r.run_id), tunings)
        ran = [v.label for v in run.checked.stacks]
        measured.setdefault(r.size, []).extend(c for c in found if any(sizing_analysis.as_measured(c.stack, m)
                                                                       for m in ran))
    per_size = {size: sizing_analysis.of_size(s, size, found, skipped.get(size, {})) for size, found in measured.items()}
    return sizing_analysis.answer(s, per_size, core), slo


def of_runs(store: Store, run_ids: Iterable[int]) -> list[StoredSizing]:
    """The stored sizings one of these runs measured a size of, in the sizings' order."""
    wanted = set(run_ids)
    return [s for s in store.sizings() if any(r.run_id is not None and r.run_id in wanted for r in s.runs)]
