"""A cell's warm-up, before its measured window: uncounted load of the cell's own shape,
for the plan's fixed time, or — the first cell of a stack start, with the plan's `steady` —
window after window until the stack's throughput holds (planning/steady.py decides), at
most the rule's cap.

Each window is a run of the engine of its own (a new set of connections, a second or
less), so the monitor's window stays exactly the measured one and each window's figure is
the engine's own count. What the warm-up took is kept with the cell (model/warmup.py):
on the first cell of a stack start, that is the start's time to steady.
"""

from __future__ import annotations

from typing import Callable

from stackbench.engine import EngineResult
from stackbench.model.warmup import StoredWarmup, WarmupWindow
from stackbench.planning import steady
from stackbench.planning.plan import Plan

# A load of `seconds` of the cell's shape, uncounted (runner/cell.py makes it).
Load = Callable[[float], EngineResult]


def warm(load: Load, plan: Plan, clients: int, fresh: bool,
         judged_from_s: float = 0.0) -> tuple[StoredWarmup | None, EngineResult | None]:
    """The warm-up the plan asks and its last load's result (what the measured window is
    sized from: runner/cell.py); (None, None) without one. `clients`: the requests the
    cell keeps in flight; `fresh`: its stack has just started — with `steady`, it is
    warmed until steady (the start's time to steady), else for the plan's `warmup`.
    `judged_from_s`: a stack known to warm up in steps for this long (a JVM's JIT:
    Stack.steady_after_s) is not judged before it, nor before the cap when the cap comes
    first — a plateau between its steps looks steady to any throughput rule."""
    rule = plan.steady if fresh else None
    if rule is None:
        if not plan.warmup_s:
            return None, None
        return StoredWarmup(plan.warmup_s, None, fresh), load(plan.warmup_s)
    windows: list[WarmupWindow] = []
    elapsed, length = 0.0, rule.window_s
    while True:
        length = steady.next_window_s(rule, windows[-1] if windows else None, clients, length)
        asked = min(length, rule.cap_s - elapsed)
        result = load(asked)
        # The engine's own measured time (its clients' start included), else what was asked.
        window = WarmupWindow(result.duration_us / 1e6 or asked, _responses(result))
        windows.append(window)
        elapsed += window.seconds
        capped = rule.cap_s - elapsed < steady.MIN_WINDOW_S
        settled = (capped or elapsed >= judged_from_s) and steady.is_steady(windows, rule.tolerance)
        if settled or capped:
            return StoredWarmup(round(elapsed, 6), settled, fresh, tuple(windows), rule.tolerance, rule.cap_s,
                                steady.change(windows)), result


def _responses(result: EngineResult) -> int:
    """What the window counts: responses, or whole pages in page mode (as a count window
    does: runner/cell.py)."""
    return result.pages.completed if result.pages is not None else result.requests.completed
