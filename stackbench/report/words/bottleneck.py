"""Which side was the bottleneck, in words and figures (analysis/bottleneck.py): the
`limit` column of the terminal's tables, the busy shares `--wide` adds, the notes that
explain them, and the rows the HTML report shows — one wording for both."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis.bottleneck import MACHINE, Bottleneck, BottleneckSummary
from stackbench.units import format_cpus, format_num

LIMIT_COLUMNS = ("limit",)
# --wide: each side's busy share over the measured window, and the engine's CPU per
# request (the stack's own is the table's "CPU µs/req").
BUSY_COLUMNS = ("engine busy", "engine µs/req", "server busy")

LIMIT_NOTE = ("limit = the side that was the bottleneck, from how busy each one's cores were over the measured window "
              "(at its limit from 90 %): server = the stack's cores (the figures are the stack's); engine = the load "
              "engine's busiest thread, while the server had headroom (the figures measure the client: such a run "
              "is invalid); both = both at their limit (the throughput is a lower bound of the stack's); neither = "
              "neither at its CPU limit: latency (one client at a time, a shaped network) or a server that waited "
              "(a sleeping script, a pool smaller than the clients, its database) held the load back — or something "
              "outside the lab (a VM's host) slowed both; machine = under a machine profile, the stack and its services "
              "(the database) together kept the machine's CPU (its cores, or its CPU quota) ≥ 90 % busy: the small "
              "machine was the limit, whatever the stack's own share")
WIDE_NOTE = ("engine busy = the load engine's busiest thread as a share of one core; server busy = the stack's CPU "
             "as a share of its cores; engine µs/req = the load engine's CPU per completed request (CPU µs/req is "
             "the stack's)")
NARROW_NOTE = "`--wide`: how busy each side was, and the engine's CPU per request"
SUMMARY_NOTE = ("limit and busy over repetitions: every measured run counts, invalid ones too (an engine at its "
                "limit is what makes a run invalid); busy figures are medians")


def shown(found: Sequence[Bottleneck | BottleneckSummary | None]) -> bool:
    """The columns are worth showing: some cell has a side's share (older stores and
    cells without a cgroup have neither)."""
    return any(b is not None and (b.engine_busy is not None or b.server_busy is not None) for b in found)


def side_word(side: str, machine_cpus: float | None) -> str:
    """A side as the column says it: "server", "neither"; the machine with its CPU, "machine
    (its 1 CPU)", "machine (its 0.5 CPU quota)"."""
    if side != MACHINE or machine_cpus is None:
        return side
    quota = "" if float(machine_cpus).is_integer() else " quota"
    return f"machine (its {format_cpus(machine_cpus)}{quota})"


def word(b: Bottleneck | None) -> str:
    return "-" if b is None or b.side is None else side_word(b.side, b.machine_cpus)


def summary_word(s: BottleneckSummary | None) -> str:
    """"server" when every measured run agrees, else each side's runs: "both 3/5, server 2/5"."""
    if s is None or not s.sides:
        return "-"
    if s.side is not None and s.sides[0][1] == s.runs:
        return side_word(s.side, s.machine_cpus)
    return ", ".join(f"{side_word(side, s.machine_cpus)} {n}/{s.runs}" for side, n in s.sides)


def tally(found: Sequence[Bottleneck | None]) -> str:
    """Which side limited the runs, over all of them: "the server in 58 of 72 runs, neither
    in 14" (most first); "" when no run's side is known."""
    sides: dict[str, int] = {}
    for b in found:
        if b is not None and b.side is not None:
            sides[b.side] = sides.get(b.side, 0) + 1
    if not sides:
        return ""
    (top, n), *rest = sorted(sides.items(), key=lambda kv: (-kv[1], kv[0]))
    name = {"server": "the server", "engine": "the load engine"}
    return (f"{name.get(top, top)} in {n} of {len(found)} runs"
            + "".join(f", {name.get(side, side)} in {k}" for side, k in rest))


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def busy_values(b: Bottleneck | BottleneckSummary | None) -> dict[str, str]:
    """The --wide columns' text for a cell or a summary (medians)."""
    if b is None:
        return {c: "-" for c in BUSY_COLUMNS}
    return {"engine busy": share(b.engine_busy), "engine µs/req": format_num(b.engine_cpu_us_per_request, 1, 1),
            "server busy": share(b.server_busy)}


# The HTML report's table (report/html/bottleneck.py): both sides' figures, the stack's
# CPU per request beside the engine's.
FIGURE_HEAD = ("engine busy", "engine µs/req", "server busy", "server µs/req", "limit")


def figure_values(b: Bottleneck | BottleneckSummary | None) -> tuple[str, ...]:
    """FIGURE_HEAD's cells for one run (its side) or a summary (medians; each side's runs)."""
    if b is None:
        return ("-",) * len(FIGURE_HEAD)
    busy = busy_values(b)
    limit = summary_word(b) if isinstance(b, BottleneckSummary) else word(b)
    return (*(busy[c] for c in BUSY_COLUMNS),  # FIGURE_HEAD begins with the --wide columns
            format_num(b.server_cpu_us_per_request, 1, 0), limit)
