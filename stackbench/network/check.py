"""Before a plan that leaves loopback starts anything: what its namespaces need is here
(root, iproute2's ip and tc, and the forwarder when a profile delays), each missing piece
one sentence with its fix."""

from __future__ import annotations

import os
import shutil

from stackbench.errors import UsageError
from stackbench.network.netns import NetworkError


def require(plan) -> None:
    if os.geteuid() != 0:
        raise UsageError("network profiles other than loopback make network namespaces, which needs root",
                         hint="run as root, or use network = \"loopback\"")
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            raise NetworkError(f"`{tool}` is not installed; the lab's namespaces need it",
                               hint="apt install iproute2 (scripts/setup.sh does)")
    if any(p.delayed for p in plan.links.values()):
        from stackbench.network import tunnel
        tunnel.binary()  # a clear error with its fix when the forwarder is not built
