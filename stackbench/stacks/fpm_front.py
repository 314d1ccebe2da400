"""A stack family that is one front server speaking FastCGI to a PHP-FPM pool, where the
front needs nothing but the pool (lighttpd, h2o, Caddy): declared, not re-coded."""

from __future__ import annotations

from typing import Any

from stackbench.servers import phpfpm
from stackbench.servers.base import Context, Requirement, Server
from stackbench.stacks.base import PROTOCOLS, Stack


class FpmFrontStack(Stack):
    # lighttpd (mod_openssl, h2proto), h2o and Caddy all terminate TLS and speak HTTP/2.
    serves = frozenset(PROTOCOLS)
    front_requirements: list[Requirement]
    front_class: type  # a Server taking (ctx, knobs, fpm=PhpFpm)

    def requirements(self) -> list[Requirement]:
        return self.front_requirements + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        return [fpm, self.front_class(ctx, knobs, fpm=fpm)]
