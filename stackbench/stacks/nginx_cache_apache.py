"""nginx-cache-apache: nginx-proxy-apache plus a proxy_cache micro-cache on the PHP
responses. Every cached location says what the cache did in `X-Cache` (HIT, MISS, ...),
so a cached stack is never mistaken for a fast one."""

from __future__ import annotations

from typing import Any

from stackbench.servers import apache, nginx
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack
from stackbench.stacks.nginx_proxy_apache import BACKEND_KNOBS, proxied_apache


class NginxCacheApache(Stack):
    id = "nginx-cache-apache"
    description = "nginx proxy_cache micro-cache in front of Apache 2.4 prefork + mod_php (static from nginx)"
    # nginx terminates TLS; Apache behind it stays clear text.
    serves = frozenset(PROTOCOLS)
    count_headers = ("X-Cache",)
    knobs = KEEPALIVE_KNOBS + nginx.KNOBS + (nginx.CACHE_TTL,) + nginx.PROXY_KEEPALIVE_KNOBS + BACKEND_KNOBS
    pool = apache.PROXIED_PREFORK_POOL

    def requirements(self) -> list[Requirement]:
        return nginx.REQUIREMENTS + apache.REQUIREMENTS + [apache.MOD_PHP]

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        return proxied_apache(ctx, knobs, cache_ttl=knobs["cache_ttl"])
