"""varnish-apache: Varnish in front of Apache 2.4 prefork + mod_php (cache / pass)."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache, varnish
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import keepalive_knobs
from stackbench.stacks.base import Stack

BACKEND_KNOBS = apache.PREFORK_KNOBS + (apache.MODULE_SET, apache.MODPHP_OPCACHE)


class VarnishApache(Stack):
    id = "varnish-apache"
    description = "Varnish Cache in front of Apache 2.4 prefork + mod_php (X-Cache: HIT / MISS / PASS)"
    count_headers = ("X-Cache",)
    knobs = keepalive_knobs(requests_unsupported_by="Varnish",
                                note=" (Apache behind it uses it)") + varnish.KNOBS + BACKEND_KNOBS

    def requirements(self) -> list[Requirement]:
        return varnish.REQUIREMENTS + apache.REQUIREMENTS + [apache.MOD_PHP]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        backend = apache.Apache(ctx, knobs, mpm="prefork", php="mod_php", listen_port=ctx.aux_port("apache"))
        return [backend, varnish.Varnish(ctx, knobs, backend_port=backend.port)]
