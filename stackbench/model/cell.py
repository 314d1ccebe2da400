"""A cell as the store keeps it: where it sits in the plan, how it ended, what the engine
saw and what it cost the stack (cost.py). One type from write to read: the runner makes
one when a cell ends and hands it to the store (Store.record_cell), which gives the same
back — the EngineResult parsed from the stored document by the same parser.

Analysis and the reports read these attributes; none of them reads a store column or a
key of the engine's document (the store's row mapping and engine/result.py do)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from stackbench.engine.result import Caveat, EngineResult, Negotiated
from stackbench.model.cost import StoredCost
from stackbench.model.php import PhpState
from stackbench.model.visitors import VisitorClasses
from stackbench.model.warmup import StoredWarmup
from stackbench.upkeep.pinning import Pinning
from stackbench.states import CellStatus


@dataclass(frozen=True)
class StoredCell:
    id: int  # the store's row (0 until stored: Store.record_cell returns the cell with its own)
    run_id: int
    seq: int
    repetition: int
    stack_id: str
    stack_label: str
    knobs: dict[str, Any]  # every knob, defaults resolved
    workload: str
    concurrency: int  # closed loop: clients; open loop: the engine's connections
    keepalive: bool
    status: CellStatus
    error: str | None
    config_hash: str | None  # its config files, deduplicated in the store (None until stored, or none)
    versions: dict[str, str | None]
    pinning: Pinning  # the cores of the stack and of the engine
    engine: EngineResult | None  # None: the engine never ran (the server failed first)
    cost: StoredCost = field(default_factory=StoredCost)
    caveats: tuple[Caveat, ...] = ()
    php: PhpState | None = None  # PHP's state in force, read back while verifying
    load: str = "closed"  # closed | rate | stages | capacity (a search's probe)
    rate: float | None = None  # open loop: requests/s asked
    leg: str | None = None  # up | down in an up-then-down ramp
    step: int | None = None  # position in a walk on one running stack
    network: str = "loopback"  # the network profile between the measured visitors and the stack
    background: str = "none"  # visitor classes that loaded the stack at the same time
    classes: VisitorClasses | None = None  # what those classes got, and what the server held
    protocol: str = "http/1.1"  # asked: http/1.1 (clear text) | https | h2
    handshake: str | None = None  # TLS: keep-alive | resumed | full (None: clear text)
    streams: int | None = None  # HTTP/2: concurrent streams per connection
    # The stack's read-back over this protocol when it was verified: ALPN, version,
    # cipher, group (None: clear text, or not read; its connection count is 0).
    negotiated: Negotiated | None = None
    # How its stack was warmed before the measured window (None: no warm-up, or stored
    # before warm-ups were kept: store v13).
    warmup: StoredWarmup | None = None
    # Visits (a plan's [visit]): the share of the visitors who logged in, 0 to 1 (None:
    # not visits, or stored before v18, when there were none).
    logged_in: float | None = None

    @property
    def measured(self) -> bool:
        """The engine ran (a failed cell may still have what the engine saw)."""
        return self.engine is not None
