"""What `run`, `show` and `scenario run` print for a stored run: the table (every cell,
or with repetitions a summary per stack and question), the caveats, and the verdicts
when the run has a baseline."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis import summary, verdicts
from stackbench.report.text import table, verdicts as verdicts_text


def render(run: dict, cells: list[dict], out: TextIO, *, every_run: bool = False,
           baseline: str | None = None) -> None:
    vs = verdicts.for_run(run, cells, baseline)
    repeated = len({c["repetition"] for c in cells}) > 1
    if every_run or not repeated:
        table.render(run, cells, out)
    else:
        table.header(run, out)
        verdicts_text.render_summary(summary.summarize(cells), run.get("stop"), out)
        out.write(f"(every repetition: `stackbench show {run['id']} --all`)\n")
        table.warnings(cells, out)
    if vs:
        verdicts_text.render(vs, out)
