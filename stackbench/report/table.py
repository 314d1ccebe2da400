"""The summary table of a stored run: one row per cell, rows of the same question
(workload × concurrency × keep-alive) next to each other so stacks compare at a glance."""

from __future__ import annotations

from typing import TextIO

from stackbench import metrics
from stackbench.report.style import Style
from stackbench.units import format_us

COLUMNS = ("#", "workload", "conc", "keep-alive", "stack", "req/s", "mean ms", "p50 ms", "p99 ms", "failed", "non-2xx",
           "unserved", "mem MB", "CPU µs/req", "calls/req")
NUMERIC = set(COLUMNS) - {"#", "workload", "keep-alive", "stack"}


def rows(cells: list[dict]) -> list[tuple[str, ...]]:
    ordered = sorted(cells, key=lambda c: (c["workload"], c["concurrency"], not c["keepalive"], c["seq"]))
    out = []
    for c in ordered:
        if c["status"] != "ok" and c["engine"] is None:
            out.append((str(c["seq"]), c["workload"], str(c["concurrency"]), _ka(c), c["stack_label"], "FAILED")
                       + ("-",) * (len(COLUMNS) - 6))
            continue
        rps = c["requests_per_s"]
        out.append((
            str(c["seq"]), c["workload"], str(c["concurrency"]), _ka(c), c["stack_label"] + ("" if c["status"] == "ok" else " (FAILED)"),
            "-" if rps is None else f"{rps:,.0f}",
            format_us(c["latency_mean_us"]), format_us(c["latency_p50_us"]), format_us(c["latency_p99_us"]),
            str(c["requests_failed"]), str(c["non_2xx"]), _unserved(c),
            _num(metrics.memory_peak_bytes(c), 1 / 2**20, 1), _num(metrics.cpu_us_per_request(c), 1, 0),
            _num(metrics.syscalls_per_request(c), 1, 1),
        ))
    return out


def render(run: dict, cells: list[dict], out: TextIO) -> None:
    style = Style(out)
    body = rows(cells)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(COLUMNS)]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.rjust(w) if h in NUMERIC else v.ljust(w)
                         for v, w, h in zip(values, widths, COLUMNS)).rstrip()

    env = run["environment"]
    pin = env.get("pinning", {})
    out.write(style.bold(f"run {run['id']} · plan {run['plan_name']} · {run['status']} · {run['started_at']}") + "\n")
    if run.get("error"):
        out.write(style.error(f"error: {run['error']}") + "\n")
    out.write(style.dim(f"{env.get('cpu_model') or 'unknown CPU'} × {env.get('cpu_count')}, kernel {env.get('kernel')}; "
                        f"server on cores {pin.get('server_cpus')}, engine on cores {pin.get('engine_cpus')}") + "\n\n")
    out.write(style.bold(line(COLUMNS)) + "\n")
    previous = None
    for r in body:
        group = r[1:4]
        if previous is not None and group != previous:
            out.write("\n")
        previous = group
        out.write(line(r) + "\n")

    out.write(style.dim("\nunserved = connections that got no response in the measured phase: the latencies "
                        "describe only the clients that were served") + "\n")
    out.write(style.dim(f"# = cell: `stackbench explain {run['id']}:A {run['id']}:B` compares two cells' costs") + "\n")
    notes = _notes(cells)
    if notes:
        out.write("\n")
        for text in notes:
            out.write(style.warn(f"warning: {text}") + "\n")


def _notes(cells: list[dict]) -> list[str]:
    """Each distinct warning once, with the cells it concerns."""
    seen: dict[str, list[str]] = {}
    for c in cells:
        if c["error"]:
            seen.setdefault(f"{c['stack_label']}: {c['error']}", [])
        for w in c["warnings"] or []:
            seen.setdefault(w, []).append(f"{c['stack_label']} {c['workload']} c={c['concurrency']} {_ka(c)}")
    out = []
    for text, where in seen.items():
        if where:
            more = f" (+{len(where) - 2} more)" if len(where) > 2 else ""
            text = f"{text} [{'; '.join(where[:2])}{more}]"
        out.append(text)
    return out


def _unserved(cell: dict) -> str:
    """Connections that got no response at all: their clients' latency is in no column,
    so a row that served 11 of 32 clients must not look like the best one."""
    n = (cell["engine"] or {}).get("connections_without_response")
    if n is None:
        return "-"
    return f"{n}/{cell['concurrency']} !" if n else "0"


def _num(value: float | None, scale: float, digits: int) -> str:
    return "-" if value is None else f"{value * scale:,.{digits}f}"


def _ka(cell: dict) -> str:
    return "on" if cell["keepalive"] else "off"
