"""`stackbench explain A B`: what two cells cost, side by side, and where their system
call profiles differ most (e.g. AllowOverride All vs None: the .htaccess lookups)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, TextIO

from stackbench.analysis import figures, metrics, questions
from stackbench.analysis.figures import CellFigures
from stackbench.model.cell import StoredCell
from stackbench.model.cost import ProcessMemory
from stackbench.report.text.style import Style
from stackbench.report.words.verdicts import signed
from stackbench.units import MiB

TOP_CALLS = 12


@dataclass(frozen=True)
class CellExtras:
    """What the store keeps of a cell beside it, read one cell at a time."""

    processes: list[ProcessMemory]  # right after the load (Store.processes)
    syscalls: dict[str, int]  # by call name, with "total" and "other" (Store.syscalls)

Row = tuple[str, Callable[[CellFigures], float | None], str]

ROWS: list[Row] = [
    ("requests/s", lambda f: f.requests_per_s, "{:,.0f}"),
    ("latency p50 ms", lambda f: _ms(f.latency_p50_us), "{:.2f}"),
    ("latency p99 ms", lambda f: _ms(f.latency_p99_us), "{:.2f}"),
    ("connections without a response", lambda f: f.unserved.without_response if f.unserved else None, "{:,.0f}"),
    ("stack CPU µs/request", lambda f: f.cpu_us_per_request, "{:,.1f}"),
    ("engine CPU µs/request", lambda f: f.engine_cpu_us_per_request, "{:,.1f}"),
    # how close each side came to its limit (analysis/bottleneck.py; ≥ 90 % = at it)
    ("engine busy % (its busiest thread)", lambda f: _pct(f.bottleneck.engine_busy if f.bottleneck else None), "{:.0f}"),
    ("server busy % (of its cores)", lambda f: _pct(f.bottleneck.server_busy if f.bottleneck else None), "{:.0f}"),
    ("memory peak MiB (anon + shmem)", lambda f: _mib(f.memory_peak_bytes), "{:,.1f}"),
    ("memory peak MiB (cgroup, with cache)", lambda f: _mib(f.cgroup_peak_bytes), "{:,.1f}"),
    ("processes (max)", lambda f: f.procs_max, "{:,.0f}"),
    ("threads (max)", lambda f: f.threads_max, "{:,.0f}"),
    ("system calls/request (profile pass)", lambda f: f.syscalls_per_request, "{:,.1f}"),
]


def render(a: StoredCell, b: StoredCell, extra_a: CellExtras, extra_b: CellExtras, out: TextIO) -> None:
    """`extra_*`: each cell's processes and system calls, from the store."""
    style = Style(out)
    out.write(style.bold(f"A: {_name(a)}\nB: {_name(b)}") + "\n\n")
    fa, fb = figures.of(a), figures.of(b)
    _table(out, style, ["", "A", "B", "B vs A"],
           [[label, _fmt(get(fa), fmt), _fmt(get(fb), fmt), _delta(get(fa), get(fb))] for label, get, fmt in ROWS])

    pss_a, pss_b = metrics.per_process_pss(extra_a.processes), metrics.per_process_pss(extra_b.processes)
    if pss_a or pss_b:
        split = all(g.own_total_bytes is not None for g in [*pss_a.values(), *pss_b.values()])
        out.write("\n" + style.bold("memory per process after the load: its own (anon + shmem PSS, which adds up to "
                                     "the cgroup's anon + shmem)" if split else
                                     "memory per process (PSS after the load; PSS also counts file-backed pages "
                                     "such as shared libraries, which the anon + shmem peak does not)") + "\n")
        rows = []
        for comm in sorted(set(pss_a) | set(pss_b)):
            ga, gb = pss_a.get(comm), pss_b.get(comm)
            rows.append([comm, _proc(ga), _proc(gb)])
        _table(out, style, ["process", "A: count × mean MiB", "B: count × mean MiB"], rows)

    diff = metrics.syscall_differences(a, extra_a.syscalls, b, extra_b.syscalls, TOP_CALLS)
    if diff:
        out.write("\n" + style.bold("system calls per request, largest differences first") + "\n")
        _table(out, style, ["call", "A", "B", "B − A"],
               [[n, f"{va:.2f}", f"{vb:.2f}", f"{vb - va:+.2f}"] for n, va, vb in diff])
    else:
        out.write("\n" + style.dim("system calls were not counted for either cell") + "\n")


def _table(out: TextIO, style: Style, head: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(r[0].ljust(widths[0]) if i == 0 else r[i].rjust(widths[i]) for i in range(len(r)))

    out.write(style.bold(line(head)) + "\n")
    for r in rows:
        out.write(line(r) + "\n")


def _name(c: StoredCell) -> str:
    q = questions.of(c)
    mode = questions.spoken_label(c) + " " + q.mode().split(" ", 1)[1] if q.tls else \
        f"keep-alive {'on' if c.keepalive else 'off'}"
    return f"run {c.run_id} cell {c.seq}: {c.stack_label} · {c.workload} · {q.level()} · {mode}"


def _fmt(v: float | None, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def _delta(a: float | None, b: float | None) -> str:
    """B against A as the verdicts word a change: '+3.1 %', or ten times apart a multiple."""
    if a is None or b is None or a == 0:
        return "-"
    return signed(b / a)


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000


def _pct(share: float | None) -> float | None:
    return None if share is None else 100 * share


def _mib(b: float | None) -> float | None:
    return None if b is None else b / MiB


def _proc(g: metrics.ProcessGroup | None) -> str:
    """"17 × 1.0": its own memory (anon + shmem PSS) where PSS was split, else PSS."""
    if not g:
        return "-"
    mean = g.own_mean_bytes if g.own_mean_bytes is not None else g.pss_mean_bytes
    return f"{g.count} × {mean / MiB:.1f}"
