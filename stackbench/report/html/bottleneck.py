"""Which side was the bottleneck of each cell — the load engine, the server, both, or
neither — with each side's busy share and CPU per request: per stack and question over
its repetitions, and every run in a table folded under it (the terminal's words:
report/words/bottleneck.py). Placed with the verdicts, folded under one line that tallies
the runs: it says which figures describe the stacks and which the client."""

from __future__ import annotations

from html import escape

from stackbench.report.html import tables
from stackbench.report.html.figure import Context
from stackbench.report.words import bottleneck as words
from stackbench.report.words.verdicts import question_name


def render(ctx: Context) -> str:
    a = ctx.analysis
    if not words.shown([c.figures.bottleneck for c in a.cells]):
        return ""  # no side's share was recorded (an older store, no cgroup): nothing to say
    rows = [(question_name(s.question), s.stack_label, str(s.bottleneck.runs if s.bottleneck else 0),
             *words.figure_values(s.bottleneck)) for s in a.summaries]
    every = [(f"{c.figures.run_id}:{c.figures.seq}", question_name(c.figures.question), c.figures.stack_label,
              *words.figure_values(c.figures.bottleneck)) for c in a.cells]
    note = words.LIMIT_NOTE + "; " + words.WIDE_NOTE + (
        ". Over repetitions: " + words.SUMMARY_NOTE.split(": ", 1)[1] if a.repeated else "")
    tally = words.tally([c.figures.bottleneck for c in a.cells])
    return (f'<details class="limit" id="{ctx.anchor("limit")}"><summary><strong>Which side was the limit</strong>'
            + (f": {escape(tally)}" if tally else "") + "</summary>"
            + (tables.table(("question", "stack", "runs", *words.FIGURE_HEAD), rows) if a.repeated else "")
            + f'<p class="note">{escape(note[0].upper() + note[1:])}.</p>'
            + (tables.numbers(("cell", "question", "stack", *words.FIGURE_HEAD), every, "every run")
               if a.repeated else tables.table(("cell", "question", "stack", *words.FIGURE_HEAD), every))
            + "</details>")
