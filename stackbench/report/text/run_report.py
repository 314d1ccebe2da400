"""What `run`, `show` and `scenario run` print for a stored run: the table (every cell,
or with repetitions a summary per stack and question), the caveats, and the verdicts
when the run has a baseline."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import summary, verdicts
from stackbench.report.text import table, verdicts as verdicts_text


def render(run: dict, cells: list[dict], out: TextIO, *, every_run: bool = False,
           baseline: str | None = None) -> None:
    checked = run.get("plan_checked") or {}
    baseline = baseline or checked.get("baseline")
    repeated = len({c["repetition"] for c in cells}) > 1
    if every_run or not repeated:
        table.render(run, cells, out)
    else:
        table.header(run, out)
        verdicts_text.render_summary(summary.summarize(cells), run.get("stop"), out)
        out.write(f"(every repetition: `stackbench show {run['id']} --all`)\n")
        table.warnings(cells, out)
    if baseline:
        verdicts_text.render(verdicts.decide(cells, baseline, band=checked.get("equivalence", 0.02)), out)
