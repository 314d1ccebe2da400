"""lighttpd-fpm: lighttpd (one event-driven process) + PHP-FPM (unix socket or TCP)."""

from stackbench.servers import lighttpd, phpfpm
from stackbench.servers.common import KEEPALIVE_KNOBS
from stackbench.stacks.fpm_front import FpmFrontStack


class LighttpdFpm(FpmFrontStack):
    id = "lighttpd-fpm"
    description = "lighttpd + PHP-FPM (mod_fastcgi over a unix socket or TCP)"
    knobs = KEEPALIVE_KNOBS + lighttpd.KNOBS + phpfpm.KNOBS
    pool = phpfpm.POOL
    front_requirements = lighttpd.REQUIREMENTS
    front_class = lighttpd.Lighttpd
