"""caddy-fpm: Caddy 2 + PHP-FPM (reverse_proxy with the fastcgi transport)."""

from __future__ import annotations

from typing import Any

from stackbench.stacks.base import Context, Requirement, Server, Stack
from stackbench.stacks.servers import caddy, phpfpm
from stackbench.stacks.servers.common import keepalive_knobs


class CaddyFpm(Stack):
    id = "caddy-fpm"
    description = "Caddy 2 + PHP-FPM (FastCGI over a unix socket or TCP)"
    knobs = keepalive_knobs(requests_unsupported_by="Caddy") + caddy.KNOBS + phpfpm.KNOBS

    def requirements(self) -> list[Requirement]:
        return caddy.REQUIREMENTS + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        return [fpm, caddy.Caddy(ctx, knobs, fpm=fpm)]
