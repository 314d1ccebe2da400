"""The states a run and a cell can be in, as stored (the strings are the store's)."""

from __future__ import annotations

import enum


class RunStatus(enum.StrEnum):
    RUNNING = "running"
    COMPLETE = "complete"
    INTERRUPTED = "interrupted"  # Ctrl-C or SIGTERM: `run --resume` can finish it
    FAILED = "failed"  # a server failed; the other stacks' cells were measured
    # Its lab died without a word (kill -9, OOM, power cut): found still `running` by the
    # next lab that took the run lock. `run --resume` can finish it.
    CRASHED = "crashed"


class CellStatus(enum.StrEnum):
    OK = "ok"
    FAILED = "failed"  # the server failed before or during the load; `error` says why
