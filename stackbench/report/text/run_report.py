"""What `run`, `show` and `scenario run` print for a stored run: the table (every cell,
or with repetitions a summary per stack and question), the caveats, and the verdicts
when the run has a baseline."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import backgrounds, capacity_results, clients as clients_analysis, curves, questions, ramps, summary, verdicts
from stackbench.report.text import capacity as capacity_text, classes as classes_text, clients as clients_text, curves as curves_text, table, verdicts as verdicts_text


def render(run: dict, cells: list[dict], out: TextIO, *, every_run: bool = False,
           baseline: str | None = None, searches: list[dict] | None = None, wide: bool = False) -> None:
    vs = verdicts.for_run(run, cells, baseline)
    levels = questions.levels(cells)
    repeated = len({c["repetition"] for c in cells}) > 1
    if every_run or not repeated:
        if levels or every_run:
            table.render(run, cells if every_run else levels, out, wide)
        else:  # capacity searches only: each probe's shortfall is in its search's table
            table.header(run, out)
    else:
        table.header(run, out)
        verdicts_text.render_summary(summary.summarize(cells), run.get("stop"), out, wide, vs)
        out.write(f"(every repetition: `stackbench show {run['id']} --all`)\n")
        table.warnings(cells, out)
    spread = clients_analysis.of(cells)
    if spread:
        clients_text.render(spread, out)
    if _walked(run):
        curves_text.render(curves.of(cells), out)
    found = capacity_results.results(run, cells, searches or [])
    if found:
        slo, _ = capacity_results.plan_parts(run)
        base = baseline or (run.get("plan_checked") or {}).get("baseline")
        capacity_text.render(found, slo, capacity_results.decide(found, base) if base else [], out)
    if vs and vs.verdicts:
        verdicts_text.render(vs, out)
    legs = ramps.decide(cells)
    if legs:
        verdicts_text.render(legs, out, title="the way down against the way up (each stack against itself)")
    beside = backgrounds.decide(cells)
    if beside:
        classes_text.render(cells, out)
        verdicts_text.render(beside, out, title="the measured visitors alone against with other visitors beside them "
                                                "(each stack against itself)")


def _walked(run: dict) -> bool:
    """Curves are shown for what a plan walked or swept: ramps, stages, rate sweeps."""
    load = (run.get("plan_checked") or {}).get("load") or {}
    return bool(load.get("walk")) or load.get("kind") in ("rate", "stages")
