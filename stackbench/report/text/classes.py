"""Visitor classes side by side: per stack and level, the measured visitors alone and
with the other classes beside them — their throughput and p99, what the other classes
got, and what the server held (busy workers from its own status page, processes from
its cgroup). Medians over the repetitions; every run is in `show --all` and `export`."""

from __future__ import annotations

import statistics
from typing import Iterable, Mapping, TextIO

from stackbench.analysis import questions
from stackbench.report.text import grid
from stackbench.report.text.style import Style
from stackbench.units import format_rate, format_us

HEAD = ("stack", "level", "visitors", "req/s", "p99 ms", "others: done", "others p99 ms", "busy", "procs")


def _median(values: Iterable[float | None]) -> float | None:
    got = [v for v in values if v is not None]
    return statistics.median(got) if got else None


def _num(v: float | None, fmt=lambda x: f"{x:,.0f}") -> str:
    return "-" if v is None else fmt(v)


def rows(cells: list[Mapping]) -> list[tuple[str, ...]]:
    groups: dict[tuple, list[Mapping]] = {}
    for c in sorted(questions.levels(cells), key=lambda c: (c["stack_label"], questions.of(c).sort_key(), c["seq"])):
        q = questions.of(c)
        groups.setdefault((c["stack_label"], q), []).append(c)
    out = []
    for (label, q), group in groups.items():
        others = [{k: v for k, v in (c.get("classes") or {}).items() if k != "server"} for c in group]
        done = _median(sum(o.get("completed") or 0 for o in x.values()) if x else None for x in others)
        other_p99 = _median(max((o["latency_p99_us"] for o in x.values() if o.get("latency_p99_us")), default=None)
                            if x else None for x in others)
        servers = [(c.get("classes") or {}).get("server") or {} for c in group]
        busy = _median(sum(x.get("busy_max", {}).values()) or None for x in servers)
        silent = busy is None and any(x.get("unanswered") for x in servers)
        level = questions.Question(q.workload, q.concurrency, q.keepalive, q.rate, q.leg, q.network).level()
        out.append((label, f"{q.workload} {level}", "alone" if q.background == "none" else f"+{q.background}",
                    _num(_median(c.get("requests_per_s") for c in group), format_rate),
                    _num(_median(c.get("latency_p99_us") for c in group), lambda v: format_us(v)),
                    _num(done) if q.background != "none" else "",
                    _num(other_p99, lambda v: format_us(v)) if q.background != "none" else "",
                    "no answer" if silent else _num(busy), _num(_median(c.get("procs_max") for c in group))))
    return out


def render(cells: list[Mapping], out: TextIO) -> None:
    style = Style(out)
    out.write("\n" + style.bold("visitor classes: the measured visitors alone and with others beside them "
                                "(medians over repetitions)") + "\n")
    for line in grid.lines(HEAD, rows(cells), text_columns=("stack", "level", "visitors")):
        out.write(line + "\n")
    out.write(style.dim("busy = the most workers the servers had busy at once, from their own status pages "
                        "(Apache busy workers + PHP-FPM active processes + nginx connections being written); a "
                        "server whose every worker is held cannot answer its status page (\"no answer\": not "
                        "once in the window), so look at procs (the stack's processes) too") + "\n")
