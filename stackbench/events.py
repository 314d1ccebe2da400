"""What a run reports while it goes (the observer the runner calls, the terminal's
progress line implements). Here, apart from both, so reports need not import the runner."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from stackbench.engine.result import Progress
    from stackbench.model.environment import ClientHost
    from stackbench.upkeep.leftovers import Swept
    from stackbench.errors import StackbenchError
    from stackbench.upkeep.pinning import Pinning
    from stackbench.planning.plan import Cell, Plan, StackVariant
    from stackbench.stacks.lifecycle import StackInstance
    from stackbench.states import RunStatus
    from stackbench.model.cell import StoredCell


class Events:
    """What a run reports while it goes. The default does nothing (tests, non-TTY)."""

    # What dead labs had left (removed now), and the runs they left `running` (crashed).
    def lab_tidied(self, swept: Swept, crashed: list[int]) -> None: ...
    def plan_started(self, run_id: int, plan: Plan, cells: list[Cell], pinning: Pinning) -> None: ...
    # The plan's clients, connected: each one's host, and for SSH hosts their CPU count
    # and clock offset (hosts/clients.py).
    def clients_ready(self, clients: list[ClientHost]) -> None: ...
    # The server's host, connected, its agent running (hosts/server.py): what it is.
    def server_ready(self, server: dict) -> None: ...
    def stack_starting(self, variant: StackVariant) -> None: ...
    def stack_ready(self, variant: StackVariant, instance: StackInstance) -> None: ...
    def cell_started(self, cell: Cell) -> None: ...
    def cell_progress(self, cell: Cell, progress: Progress) -> None: ...  # the engine's, about once a second
    def cell_finished(self, cell: Cell, record: StoredCell) -> None: ...
    def stack_failed(self, variant: StackVariant, error: StackbenchError) -> None: ...
    def rundir_kept(self, variant: StackVariant, path: Path) -> None: ...
    def plan_finished(self, run_id: int, status: RunStatus) -> None: ...
