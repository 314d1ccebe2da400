"""One run's network: a topology for each stack start that is not on loopback (the
stack's namespace, a client namespace per visitor class, their links), each profile
calibrated the first time the run uses it, and everything removed when the start ends
— also on Ctrl-C or an error (a kill -9 leaves it to the next lab's sweep, leftovers.py).

A stage of the run, so here: it follows the plan and keeps each calibration in the run's
stored record; the namespaces, links and the calibration itself are network/'s."""

from __future__ import annotations

from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from stackbench.network import calibrate
from stackbench.network.topology import Topology
from stackbench.network.visitors import members

if TYPE_CHECKING:
    from stackbench.planning.plan import Cell, Plan
    from stackbench.store import Store

MEASURED = "measured"  # the side of the visitors whose figures are the cell's


class NetworkSession:
    def __init__(self, plan: "Plan", store: "Store", run_id: int, cpus: list[int] | None = None):
        """`cpus`: where the forwarders run — the load engine's cores, so emulating the
        network never takes the server's CPU."""
        self.plan, self.store, self.run_id, self.cpus = plan, store, run_id, cpus
        self.calibrated: set[str] = set(store.run(run_id).network or {})  # a resumed run's, already stored
        self.starts = 0

    @contextmanager
    def start(self, cell: "Cell") -> Iterator[Topology | None]:
        """The topology for the stack start that serves `cell` (None on loopback)."""
        profile = self.plan.profile(cell.network)
        if not profile.namespaced:
            yield None
            return
        classes = {MEASURED: profile}
        for name in members(cell.background):
            visitor = self.plan.visitors[name]
            classes[name] = self.plan.profile(visitor.network or cell.network)
        sysctls = {"net.ipv4.tcp_wmem": self.plan.server_tcp_wmem} if self.plan.server_tcp_wmem else {}
        topo = Topology.build(classes, sysctls, index=self.starts % 10, cpus=self.cpus)
        self.starts += 1
        try:
            for side in topo.sides.values():
                if side.profile.name not in self.calibrated:
                    self.store.add_calibration(self.run_id, side.profile.name, calibrate.link(topo, side))
                    self.calibrated.add(side.profile.name)
            yield topo
        finally:
            topo.close()
