"""jetty-fpm: Jetty 9.4 (Debian's jars) + PHP-FPM, over TCP only: Jetty 9.4's FastCGI
client cannot use a unix socket (servers/jetty.py, docs/servers.md, "Jetty")."""

from __future__ import annotations

from typing import Any

from stackbench.errors import UsageError
from stackbench.servers import jetty, phpfpm
from stackbench.servers.base import Knob
from stackbench.servers.common import keepalive_knobs
from stackbench.stacks.fpm_front import FpmFrontStack

TCP_ONLY = Knob("fpm_listen", "tcp", "how Jetty reaches PHP-FPM: TCP only (Jetty 9.4's FastCGI client has no "
                                     "unix sockets)", ("tcp",))


class JettyFpm(FpmFrontStack):
    id = "jetty-fpm"
    description = "Jetty 9.4 + PHP-FPM (FastCGIProxyServlet over TCP)"
    knobs = (keepalive_knobs(requests_unsupported_by="Jetty") + jetty.KNOBS
             + tuple(TCP_ONLY if k.name == TCP_ONLY.name else k for k in phpfpm.KNOBS))
    pool = phpfpm.POOL
    front_requirements = jetty.REQUIREMENTS
    front_class = jetty.Jetty
    # The JVM's JIT: its compiler busy for ~45 s of load on one core before the throughput
    # stops climbing (docs/servers.md, "A JIT to warm").
    steady_after_s = 45.0

    def resolve_knobs(self, given: dict[str, Any]) -> dict[str, Any]:
        if given.get("fpm_listen") == "unix":
            raise UsageError("jetty-fpm cannot reach PHP-FPM on a unix socket: Jetty 9.4's FastCGI client "
                             "(FastCGIProxyServlet) connects over TCP only",
                             hint='leave fpm_listen out, or set fpm_listen = "tcp"')
        knobs = super().resolve_knobs(given)
        jetty.check_knobs(knobs)
        return knobs
