"""Progress while a plan runs. On a terminal: a bar for the plan (cells done / total,
elapsed, an ETA from the dry-run estimate corrected by how long the cells so far really
took) and a line for the running cell, rewritten in place. Elsewhere (a log, a pipe):
one line per finished cell, so a log shows progress. `--quiet`: errors only. `--json`:
one JSON object per finished cell on standard output, for scripts."""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from stackbench.errors import StackbenchError
from stackbench.events import Events
from stackbench.planning.plan import Cell, Plan, StackVariant
from stackbench.report.words.clients import clients_line, server_line
from stackbench.report.text.table import server_cores
from stackbench.report.text.style import Style
from stackbench.model.cell import StoredCell
from stackbench.engine.result import Progress
from stackbench.model.environment import ClientHost, HostFacts
from stackbench.units import format_rate, format_us
from stackbench.upkeep.pinning import Pinning

BAR = 24  # characters of the plan's bar
MODES = ("auto", "quiet", "json")
# A pass before or after the measured window, as the live line names it (the window: nothing).
PHASE_WORDS = {"warmup": "warming up ", "profile": "counting system calls "}


class TerminalProgress(Events):
    def __init__(self, stream: TextIO | None = None, mode: str = "auto", out: TextIO | None = None):
        # The streams as they are now, not as they were when this module was imported.
        stream, out = stream or sys.stderr, out or sys.stdout
        self.stream, self.out, self.mode = stream, out, mode
        self.live = mode == "auto" and stream.isatty()
        self.lines = mode == "auto" and not self.live
        self.style = Style(stream)
        self.plan: Plan | None = None
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()
        self.run_id: int | None = None
        self.reps = self.upto = ""
        self.estimate_s = 0.0  # the dry-run estimate of every cell
        self.estimated_done_s = 0.0  # … of the cells finished so far
        self.fresh: dict[int, bool] = {}  # by seq: is the cell the first of its stack start?
        self.cell_t0 = 0.0
        self.last: str | None = None  # the last finished cell's figures, beside the running one
        self.current = ""  # the running cell, in words

    # -- what the runner reports ------------------------------------------------------
    def lab_tidied(self, swept: Any, crashed: list[int]) -> None:
        # `swept`: upkeep/leftovers.py's Swept, read by its attributes (a report imports
        # no upkeep but the cores: docs/architecture.md).
        if self.mode == "quiet":
            return
        for left in swept.removed:
            self._say(self.style.dim(f"a lab that died had left this: {left.line()}"), always=True)
        for left, why in swept.failed:
            self._say(self.style.warn(f"could not remove {left.kind} {left.what} ({left.why}): {why}"), always=True)
        for run_id in crashed:
            self._say(self.style.warn(f"run {run_id} was still marked running, but its lab is gone: marked crashed "
                                      f"(finish it with `stackbench run --resume {run_id}`)"), always=True)

    def clients_ready(self, clients: list[ClientHost]) -> None:
        if self.mode != "quiet":
            self._say(self.style.dim("clients: " + clients_line(clients)), always=True)

    def server_ready(self, server: dict[str, Any]) -> None:
        if self.mode != "quiet":
            facts = HostFacts.from_dict(server)  # as the environment will store it
            self._say(self.style.dim(f"{facts.role or 'server'}: " + server_line(facts)), always=True)

    def plan_started(self, run_id: int, plan: Plan, cells: list[Cell], pinning: Pinning) -> None:
        self.run_id, self.plan = run_id, plan
        self.total, self.done = len(cells), 0  # a tuning's runs, then the plan's, each count from 0
        self.estimate_s = plan.seconds(cells)
        self.fresh = {c.seq: f for c, f in zip(cells, plan.fresh(cells))}  # the first cell of a stack start
        self.reps = self.upto = ""
        if plan.adaptive:
            # Adaptive repetitions: the cells up to the cap; the run usually stops earlier.
            self.reps, self.upto = f" of up to {plan.max_repetitions}", "≤"
        if self.live or self.lines:
            self._say(self.style.dim(f"run {run_id}: {self.upto}{self.total} cells (about {_clock(self.estimate_s)}"
                                     f"{' at most' if plan.adaptive else ''}), plan {plan.name}; server on "
                                     f"{server_cores(pinning)}, engine on {pinning.engine_cpus}"))

    def stack_starting(self, variant: StackVariant) -> None:
        self._status(f"starting {variant.label} …")

    def cell_started(self, cell: Cell) -> None:
        self.cell_t0 = time.monotonic()
        ka = cell.mode()  # "keep-alive", "no keep-alive", "https full handshakes", "h2 keep-alive"
        self.current = (f"rep {cell.repetition + 1}{self.reps} · {cell.stack.label} · {cell.workload} · "
                        f"{cell.level()} · {ka}")
        self._status(self.current)

    def cell_progress(self, cell: Cell, progress: Progress) -> None:
        """The running cell's figures so far, from the engine, about once a second."""
        self._status(f"{self.current}: {live_line(progress)}")

    def cell_finished(self, cell: Cell, record: StoredCell) -> None:
        # A capacity search's probes are not cells of the plan's count: the search is one.
        if not (cell.load == "capacity" and cell.rate is not None):
            self.done += 1
            self.estimated_done_s += self.plan.cell_seconds(cell, self.fresh.get(cell.seq, True)) if self.plan else 0.0
        if self.mode == "json":
            self.out.write(json.dumps(cell_json(self.run_id, cell, record)) + "\n")
            self.out.flush()
        elif self.lines:
            self._say(f"[{self.done}/{self.upto}{self.total}] {finished_line(cell, record)} "
                      f"({time.monotonic() - self.cell_t0:.1f} s)")
        elif self.live:
            self.last = finished_line(cell, record)

    def stack_failed(self, variant: StackVariant, error: StackbenchError) -> None:
        self._say(self.style.error(f"{variant.label} failed:\n{error.render()}"), always=True)

    def rundir_kept(self, variant: StackVariant, path: Path) -> None:
        self._say(self.style.dim(f"kept {variant.label}'s run directory: {path}"), always=True)

    def plan_finished(self, run_id: int, status: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()

    # -- drawing ------------------------------------------------------------------------
    def eta_s(self) -> float | None:
        """The estimate of what is left, scaled by how the cells so far compared with
        their estimate (a slow machine, long starts); None before the first cell."""
        elapsed = time.monotonic() - self.t0
        if not self.estimated_done_s:
            return None
        left = max(0.0, self.estimate_s - self.estimated_done_s)
        return left * elapsed / self.estimated_done_s

    def bar(self) -> str:
        share = self.done / self.total if self.total else 0.0
        full = round(BAR * share)
        eta = self.eta_s()
        return (f"[{'█' * full}{'░' * (BAR - full)}] {self.done}/{self.upto}{self.total} cells · "
                f"{_clock(time.monotonic() - self.t0)}" + ("" if eta is None else f" · ETA {_clock(eta)}"))

    def _status(self, text: str) -> None:
        if self.live:
            line = f"{self.bar()}  {text}" + (f"  · last: {self.last}" if self.last else "")
            self.stream.write("\r\033[K" + line[:shutil.get_terminal_size((120, 24)).columns - 1])
            self.stream.flush()

    def _say(self, text: str, always: bool = False) -> None:
        """A permanent line: progress lines off a terminal, and errors (always)."""
        if not (always or self.live or self.lines):
            return
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        self.stream.flush()


def live_line(p: Progress) -> str:
    """"warming up 2 s: 4,980 req/s now, …" / "3 s: 5,120 req/s now, 15,402 done, 3 errors".
    `p`: the engine's live progress (engine/process.py parses its lines), never stored."""
    errors = p.failed + p.non_2xx
    phase = PHASE_WORDS.get(p.phase, "")
    head = f"{phase}{p.elapsed_s:.0f} s: "
    return (head + f"{format_rate(p.per_s)} req/s now, {p.completed:,} done"
            + (f", {errors:,} errors" if errors else ""))


def finished_line(cell: Cell, record: StoredCell) -> str:
    r = record.engine
    mode = f"{cell.protocol} {cell.handshake}" if cell.tls else ('on' if cell.keepalive else 'off')
    head = f"{cell.stack.label} · {cell.workload} · {cell.level()} · {mode}"
    if r is None:
        return f"{head}: FAILED ({record.error})"
    failed = r.requests.failed + r.requests.non_2xx
    return (f"{head}: {format_rate(r.requests_per_s)} req/s, p99 {format_us(r.latency.p99_us)} ms"
            + (f", {failed:,} errors" if failed else "") + ("" if record.status == "ok" else " (FAILED)"))


def cell_json(run_id: int | None, cell: Cell, record: StoredCell) -> dict[str, Any]:
    """One finished cell for scripts (`run --json`): the figures a script would check."""
    r = record.engine
    return {
        "run_id": run_id, "seq": cell.seq, "repetition": cell.repetition, "stack": cell.stack.label,
        "workload": cell.workload, "load": cell.load, "concurrency": cell.concurrency, "rate": cell.rate,
        "leg": cell.leg, "step": cell.step, "keepalive": cell.keepalive, "protocol": cell.protocol,
        "handshake": cell.handshake, "spoken": r.protocol if r else None, "status": str(record.status.value),
        "error": record.error,
        "requests_per_s": r.requests_per_s if r else None, "p50_us": r.latency.p50_us if r else None,
        "p99_us": r.latency.p99_us if r else None, "completed": r.requests.completed if r else None,
        "failed": r.requests.failed if r else None, "non_2xx": r.requests.non_2xx if r else None,
        "not_sent": r.requests.not_sent if r else None,
        "caveats": [c.code for c in record.caveats],
    }


def _clock(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"

