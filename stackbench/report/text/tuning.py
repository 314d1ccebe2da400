"""A tuning on the terminal: the question, what the memory probe found, every candidate's
figure with its interval, the choice and why (and, on a mix with slow requests, what one
costs the other visitors), and the line a plan takes."""

from __future__ import annotations

import json
from typing import TextIO

from stackbench.analysis.tuning import Review, Trial
from stackbench.report.text import grid
from stackbench.report.words import tuning as words


def render(r: Review, out: TextIO) -> None:
    t = r.tuning
    out.write(f"{words.question(r)}\n")
    out.write(f"memory: {words.memory(t.memory)}\n")
    runs = len(r.trials[0].failures) if r.trials else 0
    out.write(f"\ncandidates, {runs} runs each (figure: responses a second, geometric mean [95 % interval]):\n")
    chosen = r.choice.chosen
    rows = [_row(tr, tr is chosen, tr is r.choice.best) for tr in r.trials]
    for line in grid.lines(("candidate", "figure", "interval", "served", "peak memory", ""), rows,
                           ("candidate", "interval", "served", "")):
        out.write("  " + line + "\n")
    out.write("\n" + words.why(r) + "\n")
    cost = words.slow_cost(t)
    if cost:
        out.write(cost + "\n")
    out.write(f"  knobs = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in t.knobs.items())} }}\n")
    runs_ids = [x for x in (t.probe_run_id, *t.candidate_run_ids, t.keepalive_run_id) if x]
    out.write(f"stored as tuning {t.id} (runs {', '.join(map(str, runs_ids))}); a plan's [[stacks]] entry for "
              f"{t.stack_id} takes it with knobs = \"tuned\" for the same question\n")


def _row(tr: Trial, chosen: bool, best: bool) -> tuple[str, ...]:
    center = tr.center
    interval = tr.interval()
    mark = "← chosen" if chosen else "← best" if best else ""
    if chosen and best:
        mark = "← chosen, the best"
    return (words.candidate(tr), f"{center:.3g}" if center is not None else "—",
            f"[{interval[0]:.3g}, {interval[1]:.3g}]" if interval else "", words.served(tr),
            words.mib(tr.peak_mem_bytes) if tr.peak_mem_bytes else "", mark)
