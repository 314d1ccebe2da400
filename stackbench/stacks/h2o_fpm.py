"""h2o-fpm: h2o + PHP-FPM (FastCGI over a unix socket or TCP)."""

from stackbench.servers import h2o, phpfpm
from stackbench.servers.common import keepalive_knobs
from stackbench.stacks.fpm_front import FpmFrontStack


class H2oFpm(FpmFrontStack):
    id = "h2o-fpm"
    description = "h2o + PHP-FPM (FastCGI over a unix socket or TCP)"
    knobs = keepalive_knobs(requests_unsupported_by="h2o") + h2o.KNOBS + phpfpm.KNOBS
    pool = phpfpm.POOL
    front_requirements = h2o.REQUIREMENTS
    front_class = h2o.H2o
