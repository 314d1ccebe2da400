"""What the load's clients did over a run (pure): when a plan spreads its load over
several clients (hosts.client), each cell's merged engine result keeps every client's
share and how far apart they began (engine/merge.py). Here, per client, the totals
over the run's cells, and the worst start spread of any cell."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Iterable

from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class ClientTotals:
    host: str
    cells: int
    completed: int
    failed: int
    offset_us: int | None  # its clock minus the lab's (SSH hosts)
    uncertainty_us: int | None
    cpus: int | None


@dataclass(frozen=True)
class Clients:
    clients: list[ClientTotals]
    worst_spread_us: int | None  # the largest start spread of any cell, on the lab's clock
    median_spread_us: int | None
    clock_uncertainty_us: int  # ± this on every spread (the offsets' uncertainty)


def of(cells: Iterable[StoredCell]) -> Clients | None:
    totals: dict[str, ClientTotals] = {}
    spreads: list[int] = []
    uncertainty = 0
    for cell in cells:
        if cell.engine is None or not cell.engine.client_shares:
            continue
        sync = cell.engine.start_sync
        if sync is not None and sync.spread_us is not None:
            spreads.append(sync.spread_us)
        uncertainty = max(uncertainty, sync.clock_uncertainty_us if sync is not None else 0)
        for c in cell.engine.client_shares:
            t = totals.get(c.host) or ClientTotals(c.host, 0, 0, 0, c.offset_us, c.offset_uncertainty_us, c.cpus)
            totals[c.host] = replace(t, cells=t.cells + 1, completed=t.completed + c.completed,
                                     failed=t.failed + c.failed)
    if not totals:
        return None
    spreads.sort()
    return Clients(list(totals.values()), spreads[-1] if spreads else None,
                   spreads[len(spreads) // 2] if spreads else None, uncertainty)
