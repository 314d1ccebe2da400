"""Progress while a plan runs: one line, rewritten in place, on a terminal only."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from stackbench.plan import Cell, Plan, StackVariant
from stackbench.events import Events
from stackbench.report.text.style import Style
from stackbench.store import CellRecord


class TerminalProgress(Events):
    def __init__(self, stream: TextIO = sys.stderr):
        self.stream = stream
        self.live = stream.isatty()
        self.style = Style(stream)
        self.total = 0
        self.done = 0
        self.t0 = time.monotonic()
        self.run_id: int | None = None
        self.reps = self.upto = ""

    def _status(self, text: str) -> None:
        if self.live:
            self.stream.write("\r\033[K" + text)
            self.stream.flush()

    def _say(self, text: str) -> None:
        """A permanent line (errors): always shown, on a terminal or not."""
        if self.live:
            self.stream.write("\r\033[K")
        self.stream.write(text + "\n")
        self.stream.flush()

    def plan_started(self, run_id, plan: Plan, cells: list[Cell], pinning) -> None:
        self.run_id = run_id
        self.total = len(cells)
        self.reps = self.upto = ""
        if plan.adaptive:
            # Adaptive repetitions: the cells up to the cap; the run usually stops earlier.
            self.reps, self.upto = f" of up to {plan.max_repetitions}", "≤"
        if self.live:
            self._say(self.style.dim(f"run {run_id}: {self.upto}{self.total} cells, plan {plan.name}; "
                                     f"server on cores {pinning.server_cpus}, engine on {pinning.engine_cpus}"))

    def stack_starting(self, variant: StackVariant) -> None:
        self._status(f"[{self.done}/{self.upto}{self.total}] starting {variant.label} …")

    def cell_started(self, cell: Cell) -> None:
        ka = "keep-alive" if cell.keepalive else "no keep-alive"
        elapsed = time.monotonic() - self.t0
        self._status(f"[{self.done + 1}/{self.upto}{self.total}] rep {cell.repetition + 1}{self.reps} · {cell.stack.label} · "
                     f"{cell.workload} · {cell.level()} · {ka}  ({elapsed:.0f} s)")

    def cell_finished(self, cell: Cell, record: CellRecord) -> None:
        self.done += 1

    def stack_failed(self, variant: StackVariant, error) -> None:
        self._say(self.style.error(f"{variant.label} failed:\n{error.render()}"))

    def rundir_kept(self, variant: StackVariant, path) -> None:
        self._say(self.style.dim(f"kept {variant.label}'s run directory: {path}"))

    def plan_finished(self, run_id: int, status: str) -> None:
        if self.live:
            self.stream.write("\r\033[K")
            self.stream.flush()
