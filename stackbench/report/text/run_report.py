"""What `run`, `show` and `scenario run` print for a stored run: the table (every cell,
or with repetitions a summary per stack and question), the caveats, and the verdicts
when the run has a baseline — all of it from the run's analysis (analysis/run.py)."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis.run import RunAnalysis
from stackbench.report.text import (capacity as capacity_text, classes as classes_text, clients as clients_text,
                                    curves as curves_text, protocols as protocols_text, table,
                                    verdicts as verdicts_text)


def render(a: RunAnalysis, out: TextIO, *, every_run: bool = False, wide: bool = False) -> None:
    run = a.run
    levels = a.level_cells
    if every_run or not a.repeated:
        if every_run:
            table.render(run, a.cells, a.warnings_every, out, wide)
        elif levels:
            table.render(run, levels, a.warnings, out, wide)
        else:  # capacity searches only: each probe's shortfall is in its search's table
            table.header(run, out, a.warnings.machine)
    else:
        table.header(run, out, a.warnings.machine)
        verdicts_text.render_summary(a.summaries, run.stop, out, wide, a.verdicts)
        out.write(f"(every repetition: `stackbench show {run.id} --all`)\n")
        table.warnings(a.warnings_every, out)
    if a.clients:
        clients_text.render(a.clients, out)
    if a.walked:
        curves_text.render(a.curves, out)
    if a.capacity:
        capacity_text.render(a.capacity.results, a.capacity.slo, a.capacity.verdicts, out,
                             stacks=a.capacity.stacks)
    if a.verdicts and a.verdicts.verdicts:
        verdicts_text.render(a.verdicts, out)
    if a.protocols:
        verdicts_text.render(a.protocols, out, title="what TLS costs each stack, and what HTTP/2 changes: "
                                                     "HTTPS against clear HTTP/1.1, HTTP/2 against HTTPS where both were asked (else against clear HTTP/1.1), on the same stack, workload, level and connections")
    protocols_text.render(a.handshake_costs, out)
    if a.ramps:
        verdicts_text.render(a.ramps, out, title="the way down against the way up (each stack against itself)")
    if a.backgrounds:
        classes_text.render(a.classes, out)
        verdicts_text.render(a.backgrounds, out, title="the measured visitors alone against with other visitors "
                                                       "beside them (each stack against itself)")
