"""nginx-fpm: nginx in front, PHP-FPM behind it over a unix socket (or TCP), optionally
with kept-alive FastCGI connections (fastcgi_keep_conn)."""

from __future__ import annotations

from typing import Any

from stackbench.servers import nginx, phpfpm
from stackbench.servers.base import Context, Requirement, Server
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.base import PROTOCOLS, Stack


class NginxFpm(Stack):
    id = "nginx-fpm"
    description = "nginx + PHP-FPM (FastCGI over a unix socket or TCP)"
    # nginx terminates TLS (ssl, http2 on the listen line).
    serves = frozenset(PROTOCOLS)
    knobs = KEEPALIVE_KNOBS + nginx.KNOBS + nginx.FASTCGI_KEEPALIVE_KNOBS + phpfpm.KNOBS
    pool = phpfpm.POOL

    def requirements(self) -> list[Requirement]:
        return nginx.REQUIREMENTS + phpfpm.REQUIREMENTS

    def resolve_knobs(self, given: dict[str, Any]) -> dict[str, Any]:
        knobs = super().resolve_knobs(given)
        if knobs["fastcgi_keep_conn"] and knobs["nginx_workers"]:  # else known only at start
            nginx.check_upstream_pool(knobs["nginx_workers"], knobs["upstream_keepalive"],
                                      knobs["pm_max_children"], "pm_max_children")
        return knobs

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        fpm.status_via_front = True  # nginx.conf routes /stackbench/fpm-status to it
        keepalive = 0
        if knobs["fastcgi_keep_conn"]:
            keepalive = knobs["upstream_keepalive"]
            nginx.check_upstream_pool(nginx.worker_count(ctx, knobs), keepalive,
                                      knobs["pm_max_children"], "pm_max_children")
        return [fpm, nginx.Nginx(ctx, knobs, php_upstream=fpm.upstream, upstream_keepalive=keepalive)]
