"""caddy-fpm: Caddy 2 + PHP-FPM (reverse_proxy with the fastcgi transport)."""

from stackbench.servers import caddy, phpfpm
from stackbench.servers.common import keepalive_knobs
from stackbench.stacks.fpm_front import FpmFrontStack


class CaddyFpm(FpmFrontStack):
    id = "caddy-fpm"
    description = "Caddy 2 + PHP-FPM (FastCGI over a unix socket or TCP)"
    knobs = keepalive_knobs(requests_unsupported_by="Caddy") + caddy.KNOBS + phpfpm.KNOBS
    pool = phpfpm.POOL
    front_requirements = caddy.REQUIREMENTS
    front_class = caddy.Caddy
