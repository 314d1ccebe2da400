"""nginx-proxy-apache: nginx serves static files itself and proxies .php to Apache prefork
+ mod_php on a back-end port, with or without HTTP/1.1 keep-alive to Apache."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache, nginx
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack

BACKEND_KNOBS = apache.PREFORK_KNOBS + (apache.MODULE_SET, apache.MODPHP_OPCACHE)


def proxied_apache(ctx: Context, knobs: dict[str, Any], *, cache_ttl: int | None = None) -> list[Server]:
    """Apache prefork + mod_php on a back-end port, then nginx in front of it."""
    backend = apache.Apache(ctx, knobs, mpm="prefork", php="mod_php", listen_port=ctx.aux_port("apache"))
    keepalive = 0
    if knobs["proxy_keepalive"]:
        keepalive = knobs["upstream_keepalive"]
        nginx.check_upstream_pool(nginx.worker_count(ctx, knobs), keepalive,
                                  knobs["max_request_workers"], "max_request_workers")
    front = nginx.Nginx(ctx, knobs, proxy_upstream=f"{ctx.host}:{backend.port}",
                        upstream_keepalive=keepalive, cache_ttl=cache_ttl)
    return [backend, front]


class NginxProxyApache(Stack):
    id = "nginx-proxy-apache"
    description = "nginx (static files) proxying PHP to Apache 2.4 prefork + mod_php"
    # nginx terminates TLS; Apache behind it stays clear text.
    serves = frozenset(PROTOCOLS)
    knobs = KEEPALIVE_KNOBS + nginx.KNOBS + nginx.PROXY_KEEPALIVE_KNOBS + BACKEND_KNOBS
    pool = apache.PROXIED_PREFORK_POOL

    def requirements(self) -> list[Requirement]:
        return nginx.REQUIREMENTS + apache.REQUIREMENTS + [apache.MOD_PHP]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        return proxied_apache(ctx, knobs)
