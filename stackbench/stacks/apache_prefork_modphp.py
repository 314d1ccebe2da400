"""apache-prefork-modphp: Apache 2.4 prefork with PHP embedded (mod_php).

mod_php only works with prefork: Debian's libphp is "not compiled to be threadsafe".
"""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack


class ApachePreforkModphp(Stack):
    id = "apache-prefork-modphp"
    description = "Apache 2.4 prefork + mod_php (PHP inside every Apache child)"
    # mod_ssl; h2 is asked of mod_http2 too, which refuses it under prefork: ALPN answers
    # http/1.1, read back as the result (docs/servers.md, "TLS and HTTP/2 in these packages").
    serves = frozenset(PROTOCOLS)
    knobs = KEEPALIVE_KNOBS + apache.PREFORK_KNOBS + (apache.ALLOW_OVERRIDE, apache.MODULE_SET,
                                                      apache.MODPHP_OPCACHE)
    pool = apache.PREFORK_POOL

    def requirements(self) -> list[Requirement]:
        return apache.REQUIREMENTS + [apache.MOD_PHP]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        return [apache.Apache(ctx, knobs, mpm="prefork", php="mod_php")]
