"""apache-worker-fcgid: Apache 2.4 worker MPM, PHP as php-cgi processes that mod_fcgid
spawns on demand. Spawning is lazy and throttled (requests that find no free php-cgi wait
in 1-second steps; docs/servers.md, "Apache"): measure only after a warm-up."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack


class ApacheWorkerFcgid(Stack):
    id = "apache-worker-fcgid"
    description = "Apache 2.4 worker MPM + mod_fcgid (php-cgi processes spawned on demand)"
    # mod_ssl, and mod_http2 (worker allows it).
    serves = frozenset(PROTOCOLS)
    knobs = KEEPALIVE_KNOBS + apache.THREADED_KNOBS + (apache.MODULE_SET,) + apache.FCGID_KNOBS
    pool = apache.FCGID_POOL

    def requirements(self) -> list[Requirement]:
        return apache.REQUIREMENTS + apache.MOD_FCGID

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        return [apache.Apache(ctx, knobs, mpm="worker", php="fcgid")]
