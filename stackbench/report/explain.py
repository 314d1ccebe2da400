"""`stackbench explain A B`: what two cells cost, side by side, and where their system
call profiles differ most (e.g. AllowOverride All vs None: the .htaccess lookups)."""

from __future__ import annotations

from typing import Callable, TextIO

from stackbench import metrics
from stackbench.report.style import Style

MiB = 2**20
TOP_CALLS = 12

Row = tuple[str, Callable[[dict, dict], float | None], str]

ROWS: list[Row] = [
    ("requests/s", lambda c, x: c["requests_per_s"], "{:,.0f}"),
    ("latency p50 ms", lambda c, x: _ms(c["latency_p50_us"]), "{:.2f}"),
    ("latency p99 ms", lambda c, x: _ms(c["latency_p99_us"]), "{:.2f}"),
    ("connections without a response", lambda c, x: (c["engine"] or {}).get("connections_without_response"),
     "{:,.0f}"),
    ("stack CPU µs/request", lambda c, x: metrics.cpu_us_per_request(c), "{:,.1f}"),
    ("engine CPU µs/request", lambda c, x: metrics.engine_cpu_us_per_request(c), "{:,.1f}"),
    ("memory peak MB (anon + shmem)", lambda c, x: _mb(metrics.memory_peak_bytes(c)), "{:,.1f}"),
    ("memory peak MB (cgroup, with cache)", lambda c, x: _mb(c["mem_peak_bytes"]), "{:,.1f}"),
    ("processes (max)", lambda c, x: c["procs_max"], "{:,.0f}"),
    ("threads (max)", lambda c, x: c["threads_max"], "{:,.0f}"),
    ("system calls/request (profile pass)", lambda c, x: metrics.syscalls_per_request(c), "{:,.1f}"),
]


def render(a: dict, b: dict, extra_a: dict, extra_b: dict, out: TextIO) -> None:
    """`extra_*` hold the cell's processes and syscalls from the store."""
    style = Style(out)
    out.write(style.bold(f"A: {_name(a)}\nB: {_name(b)}") + "\n\n")
    _table(out, style, ["", "A", "B", "B vs A"],
           [[label, _fmt(fa(a, extra_a), fmt), _fmt(fa(b, extra_b), fmt), _delta(fa(a, extra_a), fa(b, extra_b))]
            for label, fa, fmt in ROWS])

    pss_a, pss_b = metrics.per_process_pss(extra_a["processes"]), metrics.per_process_pss(extra_b["processes"])
    if pss_a or pss_b:
        out.write("\n" + style.bold("memory per process (PSS after the load; PSS also counts file-backed "
                                     "pages such as shared libraries, which the anon + shmem peak does not)") + "\n")
        rows = []
        for comm in sorted(set(pss_a) | set(pss_b)):
            ga, gb = pss_a.get(comm), pss_b.get(comm)
            rows.append([comm, _proc(ga), _proc(gb)])
        _table(out, style, ["process", "A: count × mean MB", "B: count × mean MB"], rows)

    calls_a, calls_b = _per_request(a, extra_a["syscalls"]), _per_request(b, extra_b["syscalls"])
    if calls_a and calls_b:
        names = (set(calls_a) | set(calls_b)) - {"total"}
        diff = sorted(names, key=lambda n: -abs(calls_b.get(n, 0) - calls_a.get(n, 0)))[:TOP_CALLS]
        out.write("\n" + style.bold("system calls per request, largest differences first") + "\n")
        _table(out, style, ["call", "A", "B", "B − A"],
               [[n, f"{calls_a.get(n, 0):.2f}", f"{calls_b.get(n, 0):.2f}",
                 f"{calls_b.get(n, 0) - calls_a.get(n, 0):+.2f}"] for n in diff]
               + [["total", f"{calls_a.get('total', 0):.2f}", f"{calls_b.get('total', 0):.2f}",
                   f"{calls_b.get('total', 0) - calls_a.get('total', 0):+.2f}"]])
    else:
        out.write("\n" + style.dim("system calls were not counted for both cells") + "\n")


def _per_request(cell: dict, calls: dict[str, int]) -> dict[str, float]:
    out = {}
    for name, count in calls.items():
        v = metrics.syscalls_per_request(cell, count)
        if v is not None:
            out[name] = v
    return out


def _table(out: TextIO, style: Style, head: list[str], rows: list[list[str]]) -> None:
    widths = [max(len(r[i]) for r in [head] + rows) for i in range(len(head))]

    def line(r: list[str]) -> str:
        return "  ".join(r[0].ljust(widths[0]) if i == 0 else r[i].rjust(widths[i]) for i in range(len(r)))

    out.write(style.bold(line(head)) + "\n")
    for r in rows:
        out.write(line(r) + "\n")


def _name(c: dict) -> str:
    return (f"run {c['run_id']} cell {c['seq']}: {c['stack_label']} · {c['workload']} · c={c['concurrency']} · "
            f"keep-alive {'on' if c['keepalive'] else 'off'}")


def _fmt(v: float | None, fmt: str) -> str:
    return "-" if v is None else fmt.format(v)


def _delta(a: float | None, b: float | None) -> str:
    if a is None or b is None or a == 0:
        return "-"
    return f"{(b - a) / a:+.1%}"


def _ms(us: float | None) -> float | None:
    return None if us is None else us / 1000


def _mb(b: float | None) -> float | None:
    return None if b is None else b / MiB


def _proc(g: dict | None) -> str:
    return "-" if not g else f"{g['count']} × {g['pss_mean_bytes'] / MiB:.1f}"
