"""`stackbench timeline RUN:SEQ`: one cell second by second — what the engine saw
(requests, errors, p50/p99) next to what the stack did (processes, threads, memory, CPU)
on the same wall clock. Prefork spawning children under load shows here."""

from __future__ import annotations

from typing import TextIO

from stackbench.report.style import Style

MiB = 2**20


def rows(cell: dict, samples: list[dict]) -> list[list[str]]:
    doc = cell["engine"] or {}
    start = doc.get("started_unix_us")
    if start is None:
        return []
    out = []
    for sec in doc.get("timeline") or []:
        lo, hi = start + sec["t_s"] * 1_000_000, start + (sec["t_s"] + 1) * 1_000_000
        inside = [s for s in samples if lo <= s["t_unix_us"] < hi]
        before = [s for s in samples if s["t_unix_us"] < lo]
        first = before[-1] if before else (inside[0] if inside else None)
        last = inside[-1] if inside else None
        cpu = None
        if first and last and last["cpu_usage_us"] is not None and first["cpu_usage_us"] is not None:
            span = last["t_unix_us"] - first["t_unix_us"]
            cpu = (last["cpu_usage_us"] - first["cpu_usage_us"]) / span if span else None
        procs = max((s["procs"] for s in inside if s["procs"] is not None), default=None)
        threads = max((s["threads"] for s in inside if s["threads"] is not None), default=None)
        mem = max((s["mem_rss_bytes"] + (s["mem_shmem_bytes"] or 0) for s in inside
                   if s["mem_rss_bytes"] is not None), default=None)
        out.append([str(sec["t_s"]), f"{sec['requests']:,}", str(sec["errors"]), _ms(sec["p50_us"]),
                    _ms(sec["p99_us"]), _v(procs), _v(threads), "-" if mem is None else f"{mem / MiB:.1f}",
                    "-" if cpu is None else f"{cpu:.0%}"])
    return out


HEAD = ["s", "requests", "errors", "p50 ms", "p99 ms", "procs", "threads", "mem MB", "stack CPU"]


def render(cell: dict, samples: list[dict], out: TextIO) -> None:
    style = Style(out)
    out.write(style.bold(f"run {cell['run_id']} cell {cell['seq']}: {cell['stack_label']} · {cell['workload']} · "
                         f"c={cell['concurrency']} · keep-alive {'on' if cell['keepalive'] else 'off'}") + "\n")
    body = rows(cell, samples)
    if not body:
        out.write("no timeline stored for this cell\n")
        return
    widths = [max(len(r[i]) for r in [HEAD] + body) for i in range(len(HEAD))]
    out.write(style.bold("  ".join(h.rjust(w) for h, w in zip(HEAD, widths))) + "\n")
    for r in body:
        out.write("  ".join(v.rjust(w) for v, w in zip(r, widths)) + "\n")
    out.write(style.dim("stack CPU: share of one core (100 % = one core busy); mem: processes' anonymous + shared")
              + "\n")


def _ms(us: int | None) -> str:
    return "-" if us is None else f"{us / 1000:.2f}"


def _v(x: int | None) -> str:
    return "-" if x is None else str(x)
