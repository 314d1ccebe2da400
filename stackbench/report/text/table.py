"""The summary table of a stored run: one row per cell, rows of the same question
(workload × concurrency × keep-alive) next to each other so stacks compare at a glance."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis import cells as cells_mod
from stackbench.analysis.cells import CellAnalysis
from stackbench.analysis.figures import CellFigures, Unserved
from stackbench.analysis.outcomes import FAILED, INVALID, SERVED, Outcome
from stackbench.analysis.questions import Question
from stackbench.analysis.run_warnings import NoisyMachine, Warnings
from stackbench.model.plan import LOOPBACK
from stackbench.model.run import StoredRun
from stackbench.report.network import lines as network_lines
from stackbench.report.text import legend
from stackbench.report.text.legend import wrap
from stackbench.report.text.style import Style
from stackbench.report.words import bottleneck as bottleneck_text, warnings as warning_words
from stackbench.report.words.clients import server_line
from stackbench.report.words.machine import machine_words
from stackbench.states import CellStatus
from stackbench.upkeep.pinning import Pinning
from stackbench.units import MiB, format_num as _num, format_rate, format_us

COLUMNS = ("#", "workload", "load", "keep-alive", "stack", "req/s", "mean ms", "p50 ms", "p99 ms", "failed", "non-2xx",
           "unserved", "mem MiB", "CPU µs/req", "calls/req")
# The default table answers the question in 120 columns; --wide shows every column.
NARROW = ("#", "workload", "load", "keep-alive", "stack", "req/s", "p99 ms", "errors", "unserved", "mem MiB",
          "CPU µs/req")
NUMERIC = (set(COLUMNS) | {"errors"}) - {"#", "workload", "load", "keep-alive", "stack"}
INVALID_MARK = "×"  # after a cell's number: an invalid measurement (never in a verdict)


# Shown only when a cell of the run is over TLS: the protocol asked ("h2 → http/1.1" when
# the stack answered HTTP/2 in HTTP/1.1); the keep-alive column then says a TLS cell's
# handshake mode (on = keep-alive, resumed, full: a new connection per request).
PROTOCOL_COLUMNS = ("protocol",)
HANDSHAKE_COLUMNS = ("hs p50 ms", "hs p99 ms")  # --wide: the client's TLS handshake time per connection
# Shown only when a cell of the run has them: PHP's opcache as read back from PHP, and
# the workload's services (a database) beside the stack's own cost.
PHP_COLUMNS = ("opcache",)
SERVICE_COLUMNS = ("db MiB", "db µs/req")
# Visits (a plan's [visit]): complete visits a second, a visit's duration, pages a visit.
VISIT_COLUMNS = ("visits/s", "visit p50 s", "visit p99 s", "pages/visit")
# A machine profile's memory limit: processes the OOM killer took (stackbench/planning/machine.py).
MACHINE_COLUMNS = ("OOM kills",)
NUMERIC |= (set(SERVICE_COLUMNS) | set(VISIT_COLUMNS) | set(MACHINE_COLUMNS) | set(HANDSHAKE_COLUMNS)
            | set(bottleneck_text.BUSY_COLUMNS))
PAGE_MARK = " pg"  # after a throughput: page views/s (page mode)
# A way of failing, or a reason a run is invalid, in a word (tables, summaries).
SHORT = {"unserved": "unserved", "target_down": "down", "no_requests": "nothing", "requests_failed": "errors",
         "non_2xx": "non-2xx", "not_sent": "unsent", "server_died": "died", "oom_killed": "OOM",
         "engine_saturated": "engine", "cpu_steal": "steal", "not_measured": "not run"}
# How each repetition ended (analysis/outcomes.py), shown when one did not simply serve.
OUTCOME_COLUMNS = ("outcome",)
OUTCOME_NOTE = ("outcome: served; engine-bound = the load engine at its limit while the server's cores were busy "
                "too (≥ its throughput: a lower bound, its latency left out of verdicts); FAILS = the stack failed "
                "the load (how: unserved clients, errors, non-2xx, unsent due requests, nothing served, target down, "
                "server died, OOM kills) — a result that enters verdicts as a loss; invalid = the measurement failed "
                "(engine = the generator at its limit while the server had headroom, steal = the hypervisor took "
                "the server's core, not run = the stack never came up): never in a verdict")


def columns(cells: Sequence[CellAnalysis], wide: bool = True) -> tuple[str, ...]:
    fs = [c.figures for c in cells]
    base: tuple[str, ...] = COLUMNS if wide else NARROW
    if any(f.question.tls for f in fs):  # a run that asked only clear HTTP/1.1 needs no protocol column
        at = base.index("keep-alive")
        base = base[:at] + PROTOCOL_COLUMNS + base[at:] + (HANDSHAKE_COLUMNS if wide else ())
    if any(f.visits_per_s is not None for f in fs):  # visits beside the pages they viewed
        at = base.index("req/s") + 1
        base = base[:at] + (VISIT_COLUMNS if wide else VISIT_COLUMNS[:2]) + base[at:]
    if bottleneck_text.shown([f.bottleneck for f in fs]):  # which side was the limit, next to the costs
        base += (bottleneck_text.BUSY_COLUMNS if wide else ()) + bottleneck_text.LIMIT_COLUMNS
    return (base + (PHP_COLUMNS if any(f.php_opcache is not None for f in fs) else ())
            + (SERVICE_COLUMNS if any(f.service_memory_peak_bytes is not None for f in fs) else ())
            + (MACHINE_COLUMNS if any(f.oom_kills is not None for f in fs) else ())
            + (OUTCOME_COLUMNS if any(_plain(c.outcome) is False for c in cells) else ()))


def _plain(o: Outcome) -> bool:
    """Nothing an outcome column would add: served at the stack's own limit — or never
    measured, which the row's FAILED already says."""
    return (o.kind == SERVED and not o.engine_bound) or o.invalid_reasons == ("not_measured",)


def rows(cells: Sequence[CellAnalysis], cols: tuple[str, ...] | None = None) -> list[tuple[str, ...]]:
    cols = cols or columns(cells)
    out = []
    for group in cells_mod.group(cells).values():
        for c in group:
            values = _values(c.figures, not c.valid)
            out.append(tuple(values.get(col, "-") for col in cols))
    return out


def outcome_words(o: Outcome | None) -> str:
    """One repetition's outcome, shortly: "served", "engine-bound", "FAILS: unserved,OOM",
    "invalid: engine" (SHORT: a word for each way and reason)."""
    if o is None:
        return "-"
    if o.kind == INVALID:
        return "invalid: " + ",".join(SHORT.get(r, r) for r in o.invalid_reasons)
    if o.kind == FAILED:
        return "FAILS: " + ",".join(SHORT.get(f.code, f.code) for f in o.failures)
    return "engine-bound" if o.engine_bound else "served"


def _values(f: CellFigures, invalid: bool = False) -> dict[str, str]:
    """Every column's text for one cell (a table picks the columns it shows)."""
    q = f.question
    v = {"#": str(f.seq) + (INVALID_MARK if invalid else ""), "workload": q.workload, "load": q.level(),
         "keep-alive": keepalive_words(q), "protocol": f.protocol, "stack": f.stack_label,
         "outcome": outcome_words(f.outcome)}
    if not f.measured:
        return {**v, "req/s": "FAILED"}
    errors = None if f.requests_failed is None else f.requests_failed + (f.non_2xx or 0)
    bound = "≥" if f.outcome is not None and f.outcome.engine_bound else ""
    return {**v,
            "stack": f.stack_label + ("" if f.status == CellStatus.OK else " (FAILED)"),
            "req/s": bound + format_rate(f.throughput) + (PAGE_MARK if f.page_mode else ""),
            "mean ms": format_us(f.latency_mean_us), "p50 ms": format_us(f.p50_us), "p99 ms": format_us(f.p99_us),
            "failed": _int(f.requests_failed), "non-2xx": _int(f.non_2xx), "errors": _int(errors),
            "unserved": _unserved(f.unserved),
            "mem MiB": _num(f.memory_peak_bytes, 1 / MiB, 1), "CPU µs/req": _num(f.cpu_us_per_request, 1, 0),
            "calls/req": _num(f.syscalls_per_request, 1, 1),
            "opcache": "-" if f.php_opcache is None else _ka(f.php_opcache),
            "db MiB": _num(f.service_memory_peak_bytes, 1 / MiB, 1),
            "db µs/req": _num(f.service_cpu_us_per_request, 1, 0),
            "OOM kills": _int(f.oom_kills),
            "visits/s": format_rate(f.visits_per_s), "visit p50 s": _num(f.visit_p50_us, 1e-6, 2),
            "visit p99 s": _num(f.visit_p99_us, 1e-6, 2), "pages/visit": _num(f.pages_per_visit, 1, 2),
            "hs p50 ms": format_us(f.handshake_p50_us), "hs p99 ms": format_us(f.handshake_p99_us),
            "limit": bottleneck_text.word(f.bottleneck), **bottleneck_text.busy_values(f.bottleneck)}


def render(run: StoredRun, cells: Sequence[CellAnalysis], warned: Warnings, out: TextIO, wide: bool = False,
           explain: bool = True) -> None:
    """The table under the run's header (`header`), its legend, and the warnings.
    `warned`: the errors and caveats of these same cells (RunAnalysis.warnings or
    .warnings_every); `explain`: every note in full, else a short legend."""
    style = Style(out)
    cols = columns(cells, wide)
    body = rows(cells, cols)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(cols)]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.rjust(w) if h in NUMERIC else v.ljust(w)
                         for v, w, h in zip(values, widths, cols)).rstrip()

    out.write(style.bold(line(cols)) + "\n")
    previous = None
    grouped_by = [cols.index(c) for c in ("workload", "load", "protocol", "keep-alive") if c in cols]
    for r in body:
        group = tuple(r[i] for i in grouped_by)
        if previous is not None and group != previous:
            out.write("\n")
        previous = group
        out.write(line(r) + "\n")

    page_mode = any(PAGE_MARK in r[cols.index("req/s")] for r in body)
    invalid = any(INVALID_MARK in r[0] for r in body)
    if not explain:
        out.write("\n")
        legend.short(["#", "×" if invalid else "", "pg" if page_mode else "", *cols], out)
        warnings(warned, out)
        return
    notes = ["", "unserved = connections that got no response in the measured phase: the latencies describe only "
             "the clients that were served",
             f"# = cell: `stackbench explain {run.id}:A {run.id}:B` compares two cells' costs"]
    if not wide:
        notes.append("errors = failed + non-2xx responses; `stackbench show RUN --wide`: mean and p50 latency, "
                     "failed and non-2xx apart, system calls per request")
    notes += footnotes(cols, page_mode)
    if invalid:
        notes.append(f"{INVALID_MARK} after # = an invalid measurement (the outcome column and a warning below say "
                     "why): shown, never part of a verdict")
    if OUTCOME_COLUMNS[0] in cols:
        notes.append(OUTCOME_NOTE)
    for note in notes:
        out.write(style.dim(wrap(note)) + "\n")
    warnings(warned, out)


def footnotes(cols: tuple[str, ...], page_mode: bool) -> list[str]:
    """What the optional columns and marks mean (shared with the summary)."""
    notes = []
    if page_mode:
        notes.append(f"{PAGE_MARK.strip()} = page views per second (page mode: the page and all its assets); "
                     "p50/p99 are then page load times")
    if VISIT_COLUMNS[0] in cols:
        notes.append("visits/s = complete visits a second (a visitor's pages with their assets, think times and "
                     "login); visit = its duration from its start to its last page's last byte, think times "
                     "included; req/s (pg) and p50/p99 are then the visits' page views and page load times")
    if bottleneck_text.LIMIT_COLUMNS[0] in cols:
        notes.append(bottleneck_text.LIMIT_NOTE + ("; " + bottleneck_text.WIDE_NOTE
                                                   if bottleneck_text.BUSY_COLUMNS[0] in cols
                                                   else " (" + bottleneck_text.NARROW_NOTE + ")"))
    if PROTOCOL_COLUMNS[0] in cols:
        notes.append("protocol = what the visitors were asked to speak: http/1.1 (clear text), https (HTTP/1.1 over "
                     "TLS), h2 (HTTP/2 over TLS); \"h2 → http/1.1\" = the stack negotiated HTTP/1.1 when asked for "
                     "HTTP/2 (a result, not a failure). Over TLS keep-alive says the handshake mode: on = one "
                     "handshake per kept connection, resumed / full = a new connection per request, resuming a "
                     "session ticket / with a full handshake"
                     + ("; hs = the client's TLS handshake time per connection" if HANDSHAKE_COLUMNS[0] in cols
                        else ""))
    if PHP_COLUMNS[0] in cols:
        notes.append("opcache = what PHP itself reported while the stack was verified, not what the knob asked for")
    if MACHINE_COLUMNS[0] in cols:
        notes.append("OOM kills = processes of the stack the kernel's OOM killer took under the machine profile's "
                     "memory limit, in the measured window and just before it (start, warm-up)")
    if SERVICE_COLUMNS[0] in cols:
        notes.append("db = the workload's database (MariaDB, a child process of the lab) in its own cgroup: "
                     "peak memory, CPU per page request; a page costs the stack's figures plus these")
    return notes


def header(run: StoredRun, out: TextIO, noisy: NoisyMachine | None = None) -> None:
    """`noisy`: the machine was too noisy for tight verdicts (run_warnings.Warnings.machine)."""
    style = Style(out)
    env = run.environment
    pin = env.pinning
    out.write(style.bold(f"run {run.id} · plan {run.plan_name} · {run.status} · {run.started_at}") + "\n")
    if run.error:
        out.write(style.error(f"error: {run.error}") + "\n")
    stick = f" (yardstick {env.server_yardstick.score:.0f})" if env.server_yardstick else ""
    out.write(style.dim(f"{env.cpu_model or 'unknown CPU'} × {env.cpu_count}, kernel {env.kernel}; "
                        f"server on {server_cores(pin)}{stick}, engine on cores {pin.engine_cpus if pin else None}")
              + "\n")
    if env.server_host:  # the stack ran on another host (hosts.server)
        out.write(style.bold(f"server {server_line(env.server_host)}") + "\n")
    if env.db_host:  # its database on a host of its own (hosts.db)
        out.write(style.bold(f"database {server_line(env.db_host, 'the database')}") + "\n")
    nets = network_lines(run.checked.profiles, run.network)
    if nets != network_lines((LOOPBACK,), None):  # loopback alone goes without saying
        for line in nets:
            out.write(style.dim(f"network {line}") + "\n")
    if env.machine_profile:
        out.write(style.bold(f"machine profile: {machine_words(env.machine_profile)}") + "\n")
    if env.cpu_idle:  # runs since the lab holds idle cores polled on a VM (upkeep/idle.py)
        out.write(style.dim(f"idle cores: {env.cpu_idle.why}") + "\n")
    if noisy is not None:
        out.write(style.warn(wrap("warning: " + warning_words.noisy(noisy))) + "\n")


def server_cores(pin: Pinning | None) -> str:
    """"cores [0]", or "ssh:web1's cores [0]" when the stack ran on another host."""
    cores = pin.server_cpus if pin else None
    return f"{pin.server_host}'s cores {cores}" if pin and pin.server_host else f"cores {cores}"


def warnings(warned: Warnings, out: TextIO) -> None:
    style = Style(out)
    notes = _notes(warned)
    if notes:
        out.write("\n")
        for text in notes:
            # Prose wrapped to the table's 120 columns, continuation lines indented.
            out.write(style.warn(wrap(f"warning: {text}")) + "\n")


def _notes(warned: Warnings) -> list[str]:
    """Each kind of caveat once (report/words/warnings.py words it), with the cells it
    concerns; a server's error once per message."""
    out = [warning_words.error(e) for e in warned.errors]
    for group in warned.caveats:
        where = list(dict.fromkeys(_where(c.figures) for c, _ in group.cells))
        more = f" (+{len(where) - 2} more)" if len(where) > 2 else ""
        out.append(f"{warning_words.caveat(group)} [{'; '.join(where[:2])}{more}]")
    return out


def _where(f: CellFigures) -> str:
    q = f.question
    return f"{f.stack_label} {q.workload} {q.level()} {q.mode()}"


def _unserved(u: Unserved | None) -> str:
    if u is None:
        return "-"
    return f"{u.without_response}/{u.connections} !" if u.without_response else "0"


def _int(value: int | None) -> str:
    return "-" if value is None else str(value)


def mode_words(q: Question, protocol: str) -> str:
    """Protocol and keep-alive in one column (the summary over repetitions): "on", "off",
    "https on", "https full", "h2 → http/1.1 on"."""
    ka = keepalive_words(q)
    return ka if not q.tls else f"{protocol} {ka}"


def keepalive_words(q: Question) -> str:
    """The keep-alive column: on / off, or over TLS the handshake mode (on, resumed, full)."""
    if q.tls and q.handshake and q.handshake != "keep-alive":
        return q.handshake
    return _ka(q.keepalive)


def _ka(keepalive: bool) -> str:
    return "on" if keepalive else "off"
