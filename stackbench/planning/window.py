"""Each cell's measured window, sized to the work: long against the response time.

A closed loop's throughput counted as the responses inside a window of fixed length moves
in steps of one response: with n responses in it, a step is 1/n of the figure. Sixteen
WordPress clients on one core (a page every ~1.3 s) complete two pages each in 3 s, and
every run reads 10.7 req/s whatever the stack's CPU per page — an interval of zero width
that called two stacks "equivalent" while one used 1.2x the CPU of the other
(docs/methods.md, "Windows sized to the work"). So where the plan's window would hold
too few responses — fewer than `resolve_count` in all (a step over half the equivalence
band), or fewer than MIN_PER_CLIENT a client — the cell is measured by a count instead: the engine's `-n` of as many responses as the plan's window would
hold and at least MIN_PER_CLIENT a client. That window ends when the last of them ended
(at a response, or at a failure past the deadline), so its length moves with the stack's
speed and count / length has no step, and no request is cut off by the window's end. A
count window is capped (`cap_s`): where the cap ends it first, it is a fixed window
again, and the verdict says when its figure could not resolve the question
(analysis/verdicts.py) rather than guess.

How fast the stack answers is known from the cell's warm-up, or from the same question's
earlier repetition on the same stack in this run, or — a level climbed to on the same stack
start (restart = "stack") — from the level before (runner/cell.py); a cell that knows none
(the first cell of a plan without warm-up) keeps the plan's window.

A stack that left clients waiting at the end of its last window gets no count: a count
ends only when every request out has ended, so once the clients it served had their
share and stopped, the ones it held back were let in and served — prefork's children
held by kept-alive clients looked fair (Apache mod_php at 64 WordPress clients: 56 of 64
waiting at the end of a 4 s window, none at the end of a count: bench/RESULTS.md,
"Tuning"). It gets the longest fixed window instead (`cap_s`), long against its response
time, in which a client held back is seen as one (analysis/outcomes.py).
A window that completed nothing, shorter than the deadline (the plan's `timeout`), is
measured on before the stack is judged: the load again, for one second past the deadline
(`measure_on`), when every request out has ended — answered, or failed at the deadline.
No response in it is no "slower": it fails the load (analysis/outcomes.py). A fixed window,
not a count, for the reason above: clients held back are to be seen as such. Unless the
stack, alone at the same question, answered so fast that each client's turn would have come
many times over in the window it just served nobody in (a prefork Apache whose children slow
visitors hold): then it held them back, and a longer wait tells nothing more.
Pure: the runner measures, this decides.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Responses a client completes in a count window at least. The count ends at a response,
# so this is not about steps: it keeps the start (every client's first request sent at
# once, its connection new) and the end (the last requests out while the others wait)
# a third of the window or less. Four kept the opcache and http2 quick forms over two
# minutes (125 s and 124 s: bench/RESULTS.md, "Slow pages measured right").
MIN_PER_CLIENT = 3
# A count window lasts at most this many times the plan's window (and at most until one
# second past the deadline, when every request still out has failed), so a slow stack
# cannot make a run many times longer than its dry run said.
MAX_STRETCH = 4.0


@dataclass(frozen=True)
class Pace:
    """How a stack answered a cell's load when last seen: responses a second (0: none),
    whether it failed the load (errors over 1 %, a server that died), and how many
    clients were still waiting for their first response when its window ended."""

    per_s: float
    failing: bool = False
    waiting: int = 0


@dataclass(frozen=True)
class Window:
    """The engine's window for a cell: `duration_s`, or with `requests` a count whose
    window ends when the last of them ended, at most `duration_s` long."""

    duration_s: float
    requests: int | None = None

    @property
    def counted(self) -> bool:
        return self.requests is not None


def resolve_count(band: float) -> int:
    """Responses a fixed window needs so that one of them is at most half the
    equivalence band of the figure: 100 for ±2 %."""
    return math.ceil(2 / band)


def cap_s(duration_s: float, timeout_s: float) -> float:
    """The longest a count window may last: MAX_STRETCH plan windows, but no longer than
    one second past the deadline — by then every request of the window has ended."""
    return max(duration_s, min(MAX_STRETCH * duration_s, timeout_s + 1.0))


def size(duration_s: float, timeout_s: float, band: float, clients: int, pace: Pace | None) -> Window:
    """The window of a closed-loop cell of `clients` connections whose plan window is
    `duration_s`, given how fast the stack answered (None: not known yet)."""
    if pace is None or pace.failing:
        # Not known yet; or the stack failed this load last time (a database the OOM killer
        # took, error pages): a failure is an answer no finer count improves.
        return Window(duration_s)
    if pace.waiting:
        # Clients left waiting: slow or held back, a long fixed window tells which (a
        # count would let the held-back ones in at its end: the module docstring).
        return Window(cap_s(duration_s, timeout_s))
    expected = pace.per_s * duration_s
    if expected >= max(resolve_count(band), MIN_PER_CLIENT * clients):
        return Window(duration_s)
    return Window(cap_s(duration_s, timeout_s), max(MIN_PER_CLIENT * clients, math.ceil(expected)))


def measure_on(duration_s: float, timeout_s: float) -> Window | None:
    """The window a stack that completed nothing in one of `duration_s` is measured on for:
    to one second past the deadline; None when that window reached the deadline already."""
    if duration_s >= timeout_s:
        return None
    return Window(timeout_s + 1.0)


def describe(duration_s: float, timeout_s: float, band: float) -> str:
    """The rule, for the dry run."""
    return (f"windows: {duration_s:g} s where the stack answers {resolve_count(band)} responses in it and "
            f"{MIN_PER_CLIENT} a client; a slower one is measured by a count of responses instead (at least "
            f"{MIN_PER_CLIENT} a client, the window ending at the last one, at most "
            f"{cap_s(duration_s, timeout_s):g} s), so its throughput moves in no step of one response"
            + ("" if measure_on(duration_s, timeout_s) is None else
               f"; one that completed nothing is measured on for {timeout_s + 1.0:g} s, past the {timeout_s:g} s "
               "timeout, before it is judged (not when alone it answered its clients many times over in that "
               "window)"))
