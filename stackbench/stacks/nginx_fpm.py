"""nginx-fpm: nginx in front, PHP-FPM behind it over a unix socket (or TCP)."""

from __future__ import annotations

from typing import Any

from stackbench.stacks.base import Context, Requirement, Server, Stack
from stackbench.stacks.servers import nginx, phpfpm
from stackbench.stacks.servers.common import KEEPALIVE_KNOBS


class NginxFpm(Stack):
    id = "nginx-fpm"
    description = "nginx + PHP-FPM (FastCGI over a unix socket or TCP)"
    knobs = KEEPALIVE_KNOBS + nginx.KNOBS + phpfpm.KNOBS

    def requirements(self) -> list[Requirement]:
        return nginx.REQUIREMENTS + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm(ctx, knobs, tcp_port=ctx.aux_port("php-fpm") if knobs["fpm_listen"] == "tcp" else None)
        return [fpm, nginx.Nginx(ctx, knobs, php_upstream=fpm.upstream)]
