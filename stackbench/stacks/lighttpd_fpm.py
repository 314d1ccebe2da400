"""lighttpd-fpm: lighttpd (one event-driven process) + PHP-FPM (unix socket or TCP)."""

from __future__ import annotations

from typing import Any

from stackbench.stacks.base import Context, Requirement, Server, Stack
from stackbench.stacks.servers import lighttpd, phpfpm
from stackbench.stacks.servers.common import KEEPALIVE_KNOBS


class LighttpdFpm(Stack):
    id = "lighttpd-fpm"
    description = "lighttpd + PHP-FPM (mod_fastcgi over a unix socket or TCP)"
    knobs = KEEPALIVE_KNOBS + lighttpd.KNOBS + phpfpm.KNOBS

    def requirements(self) -> list[Requirement]:
        return lighttpd.REQUIREMENTS + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        return [fpm, lighttpd.Lighttpd(ctx, knobs, fpm=fpm)]
