"""h2o-fpm: h2o + PHP-FPM (FastCGI over a unix socket or TCP)."""

from __future__ import annotations

from typing import Any

from stackbench.stacks.base import Context, Requirement, Server, Stack
from stackbench.stacks.servers import h2o, phpfpm
from stackbench.stacks.servers.common import keepalive_knobs


class H2oFpm(Stack):
    id = "h2o-fpm"
    description = "h2o + PHP-FPM (FastCGI over a unix socket or TCP)"
    knobs = keepalive_knobs(requests_unsupported_by="h2o") + h2o.KNOBS + phpfpm.KNOBS

    def requirements(self) -> list[Requirement]:
        return h2o.REQUIREMENTS + phpfpm.REQUIREMENTS

    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        fpm = phpfpm.PhpFpm.for_stack(ctx, knobs)
        return [fpm, h2o.H2o(ctx, knobs, fpm=fpm)]
