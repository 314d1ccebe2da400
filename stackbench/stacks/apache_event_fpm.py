"""apache-event-fpm: Apache 2.4 event MPM, PHP in PHP-FPM via mod_proxy_fcgi (unix socket
or TCP)."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache, phpfpm
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack


class ApacheEventFpm(Stack):
    id = "apache-event-fpm"
    description = "Apache 2.4 event MPM + PHP-FPM (mod_proxy_fcgi over a unix socket or TCP)"
    # mod_ssl, and mod_http2 (event allows it).
    serves = frozenset(PROTOCOLS)
    knobs = KEEPALIVE_KNOBS + apache.THREADED_KNOBS + (apache.MODULE_SET,) + phpfpm.KNOBS
    pool = phpfpm.POOL

    def requirements(self) -> list[Requirement]:
        return apache.REQUIREMENTS + [apache.MOD_PROXY_FCGI] + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        # mod_proxy_fcgi's spelling: a unix socket needs a dummy fcgi://localhost part.
        handler = (f"proxy:fcgi://{ctx.host}:{fpm.tcp_port}" if fpm.tcp
                   else f"proxy:unix:{fpm.socket_path}|fcgi://localhost")
        return [fpm, apache.Apache(ctx, knobs, mpm="event", php="fpm", fpm_handler=handler)]
