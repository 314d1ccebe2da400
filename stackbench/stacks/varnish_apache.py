"""varnish-apache: Varnish in front of Apache 2.4 prefork + mod_php (cache / pass); with tls,
hitch in front of Varnish terminates it (PROXY protocol to Varnish's second address)."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache, hitch, varnish
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import keepalive_knobs
from stackbench.stacks.base import PROTOCOLS, Stack

BACKEND_KNOBS = apache.PREFORK_KNOBS + (apache.MODULE_SET, apache.MODPHP_OPCACHE)


class VarnishApache(Stack):
    id = "varnish-apache"
    description = "Varnish Cache in front of Apache 2.4 prefork + mod_php (X-Cache: HIT / MISS / PASS)"
    # hitch terminates TLS (ALPN h2 too) and hands Varnish the PROXY protocol.
    serves = frozenset(PROTOCOLS)
    count_headers = ("X-Cache",)
    knobs = keepalive_knobs(requests_unsupported_by="Varnish",
                                note=" (Apache behind it uses it)") + varnish.KNOBS + hitch.KNOBS + BACKEND_KNOBS
    pool = apache.PROXIED_PREFORK_POOL

    def requirements(self) -> list[Requirement]:
        return varnish.REQUIREMENTS + hitch.REQUIREMENTS + apache.REQUIREMENTS + [apache.MOD_PHP]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        backend = apache.Apache(ctx, knobs, mpm="prefork", php="mod_php", listen_port=ctx.aux_port("apache"))
        if ctx.tls is None:
            return [backend, varnish.Varnish(ctx, knobs, backend_port=backend.port)]
        proxy_port = ctx.aux_port("varnish-proxy")
        return [backend, varnish.Varnish(ctx, knobs, backend_port=backend.port, proxy_port=proxy_port),
                hitch.Hitch(ctx, knobs, backend_port=proxy_port)]
