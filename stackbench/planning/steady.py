"""A stack start's warm-up that lasts until the stack is steady (the plan's `steady` key),
not a fixed time.

A stack fresh from its start is not the stack production runs: a JVM's JIT compiles its
hot code over tens of seconds (Jetty on one core: its compiler busy for ~45 s of load),
PHP's opcache compiles each script on its first request, a prefork Apache spawns children
while the first clients wait. So the first cell of each stack start is warmed by a series
of back-to-back windows of its own load (`window`, 1 s), and measured once the stack's
throughput stopped moving (the start's time to steady); the start's later cells find it
warm and have the plan's fixed `warmup`:

    of the windows so far, forget the first third (the cold start); of the rest (at
    least a second of load), the later half's throughput is within ±`tolerance` of the
    earlier half's.

A fixed look-back ("the last three windows within ±5 %") is fooled by a JIT's plateaus:
Jetty + FPM held 3.6–3.7k req/s for three seconds at 6–8 s, then climbed to 4.6k by 25 s
and ~10k once its compiler was done (bench/RESULTS.md, "Steady state before measuring").
A look-back that grows with the warm-up (the windows after its first third) asks a stack
that has been warming for 20 s to have been flat for ~13 s, and one steady at once to be
flat for a second or two windows: at least MIN_WINDOWS windows and MIN_JUDGED_S judged,
so 3 s with 1 s windows, 1.25 s with 0.25 s ones (`least_s`).

A window that completed fewer responses than the cell has clients (a page slower than the
window) cannot say how fast the stack is: the next one is twice as long. The warm-up
stops at `cap` whatever the windows say; a stack still moving then is measured anyway and
its cell says so (the `not_steady` caveat: a fact about the stack, not a failure).

Pure: the runner measures the windows (runner/warmup.py), this decides.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, Sequence

from stackbench.errors import PlanError
from stackbench.units import parse_duration_s, parse_share

MIN_WINDOWS = 3
# The judged windows (those after the first third) span at least this much load, so their
# halves are half a second apart or more: with 0.2 s windows, three would compare two
# consecutive fifths of a second, and a JIT still gaining 20 % a second gains 4 % there —
# inside the tolerance (Jetty on static files was called steady, cold, at 0.6 s:
# bench/RESULTS.md, "Steady state before measuring").
MIN_JUDGED_S = 1.0
KEYS = {"window", "tolerance", "cap"}
# The shortest window: the engine's start and its clients' first connections take a few
# milliseconds of each window.
MIN_WINDOW_S = 0.1
MAX_WINDOW_S = 10.0
MAX_CAP_S = 3600.0
MAX_TOLERANCE = 0.5


@dataclass(frozen=True)
class Steady:
    """How a steady warm-up is judged: windows of `window_s`, throughput within
    ±`tolerance`, at most `cap_s` of load."""

    window_s: float = 1.0
    tolerance: float = 0.05
    cap_s: float = 30.0

    def describe(self) -> str:
        return f"{self.window_s:g} s windows until throughput holds within ±{self.tolerance:.0%}, at most {self.cap_s:g} s"


class Window(Protocol):
    """One warm-up window (model/warmup.py's WarmupWindow): how long its load lasted and
    what it completed."""

    @property
    def seconds(self) -> float: ...

    @property
    def completed(self) -> int: ...


def _rate(windows: Sequence[Window]) -> float:
    """Responses a second over several windows (their lengths may differ)."""
    seconds = sum(w.seconds for w in windows)
    return sum(w.completed for w in windows) / seconds if seconds > 0 else 0.0


def halves(windows: Sequence[Window]) -> tuple[Sequence[Window], Sequence[Window]] | None:
    """The earlier and the later half of the windows after the first third (the middle
    one left out when they are odd); None before MIN_WINDOWS, or while those windows span
    less than MIN_JUDGED_S."""
    n = len(windows)
    if n < MIN_WINDOWS:
        return None
    rest = windows[n // 3:]
    if sum(w.seconds for w in rest) < MIN_JUDGED_S - 1e-9:
        return None
    h = len(rest) // 2
    return rest[:h], rest[len(rest) - h:]


def least_s(window_s: float) -> float:
    """The shortest steady warm-up with windows of `window_s`: a stack steady at once."""
    n = MIN_WINDOWS
    while (n - n // 3) * window_s < MIN_JUDGED_S - 1e-9:
        n += 1
    return n * window_s


def change(windows: Sequence[Window]) -> float | None:
    """The later half's throughput against the earlier half's, as a share (+0.08: 8 %
    higher); 0.0 when neither served anything; None before MIN_WINDOWS, or when only
    the later half served (a stack just beginning to answer)."""
    split = halves(windows)
    if split is None:
        return None
    early, late = (_rate(w) for w in split)
    if early == 0:
        return 0.0 if late == 0 else None
    return late / early - 1


def is_steady(windows: Sequence[Window], tolerance: float) -> bool:
    """Has the stack's throughput stopped moving (the module docstring)? A stack that
    served nothing in either half is steady at nothing: its measured window says it
    failed the load, the warm-up does not wait for the cap."""
    moved = change(windows)
    return moved is not None and abs(moved) <= tolerance


def next_window_s(rule: Steady, last: Window | None, clients: int, previous_s: float) -> float:
    """The next window's length: the rule's, doubled after one that completed fewer
    responses than there are clients."""
    if last is not None and last.completed < clients:
        return min(previous_s * 2, MAX_WINDOW_S)
    return previous_s if last is not None else rule.window_s


def parse(table: Any, fail: Callable[[str], PlanError]) -> Steady | None:
    """The plan's `steady` key: a Steady for `steady = true` (the defaults) or a table
    changing them, e.g. { window = "1s", tolerance = "5%", cap = "30s" }; None without it
    (`steady = false` too): every cell warmed for the plan's fixed `warmup` alone."""
    if table is None or table is False:
        return None
    if table is True:
        table = {}
    if not isinstance(table, dict):
        raise fail('steady takes true or a table, e.g. steady = { window = "1s", tolerance = "5%", cap = "30s" }')
    unknown = sorted(set(table) - KEYS)
    if unknown:
        raise fail(f"steady has no key {unknown[0]!r} (it takes {', '.join(sorted(KEYS))})")
    default = Steady()
    try:
        window = parse_duration_s(table.get("window", default.window_s))
        cap = parse_duration_s(table.get("cap", default.cap_s))
        tolerance = parse_share(table.get("tolerance", default.tolerance))
    except ValueError as e:
        raise fail(f"steady: {e} (e.g. steady = {{ window = \"1s\", tolerance = \"5%\", cap = \"30s\" }})") from None
    if not MIN_WINDOW_S <= window <= MAX_WINDOW_S:
        raise fail(f"steady.window must be between {MIN_WINDOW_S * 1000:g}ms and {MAX_WINDOW_S:g}s")
    if tolerance > MAX_TOLERANCE:
        raise fail(f"steady.tolerance must be at most {MAX_TOLERANCE:.0%}")
    if not MIN_WINDOWS * window <= cap <= MAX_CAP_S:
        raise fail(f"steady.cap must hold at least {MIN_WINDOWS} windows ({MIN_WINDOWS * window:g}s) and be at most 1h")
    return Steady(window, tolerance, cap)
