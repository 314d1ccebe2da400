"""A run's warnings in words (analysis/run_warnings.py decides them): one sentence each,
the same in the terminal and the HTML report — where they happened is laid out by each."""

from __future__ import annotations

import json
import shlex

from stackbench.analysis import stats
from stackbench.analysis.run_warnings import CaveatGroup, ErrorGroup, NoisyMachine, NoVerdicts
from stackbench.engine.result import CacheHits
from stackbench.report.words.caveats import cache_hits, engine_bound_note, sentence


def noisy(n: NoisyMachine) -> str:
    return (f"this machine's CPU speed varied by a CV of {n.cv:.0%} before the run (a fixed loop timed on the "
            "server's core): something outside the lab — on a VM, the host's other guests — changes its speed, and "
            f"no run is steadier than that: expect wide intervals, and differences smaller than about {n.blurred:.0%} "
            "to come out as 'no significant difference' (a dedicated machine gives tighter verdicts)")


def error(e: ErrorGroup) -> str:
    return f"{e.stack_label}: {e.error}"


def caveat(group: CaveatGroup) -> str:
    """A kind of caveat once: its sentence with the first cell's figures (and saying so
    when the others' differ), and for the engine's saturation the runs that stay valid."""
    shares = [c.facts.share or 0.0 for _, c in group.cells if isinstance(c.facts, CacheHits)]
    if group.varies and shares and isinstance(group.first.facts, CacheHits):
        # a cache's one figure as its range (a logged-in share's cells hit less than the others)
        text = cache_hits(group.first.facts.header, min(shares), max(shares))
    else:
        text = sentence(group.first)
        if group.varies:
            text += f" (figures of the first of {len(group.cells)} runs)"
    bound = group.engine_bound
    if bound is not None:
        text += engine_bound_note(list(bound.busy), bound.runs)
    return text


def no_verdicts_why(nv: NoVerdicts) -> str:
    if not nv.baseline_named:
        return "its plan names no baseline stack to compare the others with"
    return (f"each cell was measured {nv.repetitions} time(s); a verdict needs at least {stats.MIN_RUNS} valid runs a "
            "side (the run is the unit of replication, never the request)")


def plan_lines(nv: NoVerdicts) -> list[str]:
    """What to add to the plan for verdicts."""
    return ([] if nv.baseline_named else [f"baseline = {toml_string(nv.suggested)}"]) + (
        [] if nv.enough else ['repetitions = 5        # or "auto": more runs until the CI is narrow'])


def show_now(nv: NoVerdicts, run_id: int) -> str | None:
    """The command that prints verdicts from this run now (enough repetitions already)."""
    return f"stackbench show {run_id} --baseline {shlex.quote(nv.suggested)}" if nv.enough else None


def toml_string(value: str) -> str:
    """A label as a plan would quote it (a TOML basic string is JSON's)."""
    return json.dumps(value, ensure_ascii=False)
