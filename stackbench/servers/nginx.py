"""nginx as a child process: `nginx -p RUNDIR/ -c CONF` with `daemon off`.

Three roles: FastCGI front of PHP-FPM, reverse proxy of an Apache back end (static files
served by nginx itself), and the same proxy with a proxy_cache micro-cache.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackbench.errors import UsageError
from stackbench.servers.base import Context, Knob, Requirement, Server, render
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("nginx_workers", 0, "nginx worker processes; 0 = one per core given to the server"),
    Knob("nginx_worker_connections", 4096, "connections per nginx worker"),
)
FASTCGI_KEEPALIVE_KNOBS = (
    Knob("fastcgi_keep_conn", False, "keep FastCGI connections to PHP-FPM open between requests "
                                     "(fastcgi_keep_conn on + upstream keepalive)"),
    Knob("upstream_keepalive", 2, "idle FastCGI connections each nginx worker keeps (with fastcgi_keep_conn); "
                                  "nginx workers x this must stay below pm_max_children"),
)
PROXY_KEEPALIVE_KNOBS = (
    Knob("proxy_keepalive", False, "HTTP/1.1 keep-alive from nginx to Apache (off: a new connection per request)"),
    Knob("upstream_keepalive", 8, "idle connections to Apache each nginx worker keeps (with proxy_keepalive); "
                                  "each holds a prefork child, so nginx workers x this must stay below "
                                  "max_request_workers"),
)
CACHE_TTL = Knob("cache_ttl", 1, "seconds nginx caches a 200 from Apache that sets no caching headers "
                                 "(micro-cache; 0 = never cached)")
REQUIREMENTS = [Requirement("nginx", "nginx")]
CONF = "nginx/nginx.conf"


def worker_count(ctx: Context, knobs: dict[str, Any]) -> int:
    return knobs["nginx_workers"] or len(ctx.cpus) or 1


def check_upstream_pool(workers: int, keepalive: int, pool: int, pool_knob: str) -> None:
    """Idle kept-alive upstream connections each hold a back-end process (an FPM child, a
    prefork child). When nginx can keep as many as the pool has, new requests find no free
    process and wait for a timeout (60 s seen with FPM; docs/servers.md, "nginx"). Refuse
    such a plan."""
    if workers * keepalive >= pool:
        raise UsageError(
            f"nginx would keep up to {workers} workers x {keepalive} idle upstream connections = "
            f"{workers * keepalive}, which can hold all {pool} back-end processes ({pool_knob}): "
            "new requests would then stall until a timeout",
            hint=f"lower upstream_keepalive or nginx_workers, or raise {pool_knob} above {workers * keepalive}",
        )


@dataclass
class Nginx(Server):
    php_upstream: str = ""  # fastcgi_pass target, e.g. unix:/run/dir/php-fpm.sock
    proxy_upstream: str = ""  # or an HTTP back end (host:port) that .php is proxied to
    upstream_keepalive: int = 0  # idle upstream connections per worker; 0 = none kept
    cache_ttl: int | None = None  # proxy_cache micro-cache TTL; None = no cache

    def __post_init__(self) -> None:
        self.name = "nginx"
        # SIGQUIT = graceful shutdown; SIGTERM = fast. Fast is what we want at the end of
        # a cell: nothing is in flight any more.
        self.stop_signal = signal.SIGTERM

    def files(self) -> dict[str, str]:
        ka = self.knobs["keepalive_timeout"]
        return {CONF: render(
            "nginx.conf.j2",
            **self.ctx.render_values(),
            workers=worker_count(self.ctx, self.knobs),
            worker_connections=self.knobs["nginx_worker_connections"],
            keepalive_timeout=ka,
            keepalive_requests=self.knobs["keepalive_requests"],
            php_upstream=self.php_upstream,
            proxy_upstream=self.proxy_upstream,
            upstream_keepalive=self.upstream_keepalive,
            # Close idle upstream connections before the back end does (Apache: the same
            # keepalive_timeout), so nginx never reuses one the back end is closing.
            upstream_keepalive_timeout=max(1, ka - 1),
            cache_ttl=self.cache_ttl,
        )}

    def _base_argv(self) -> list[str]:
        return ["nginx", "-p", f"{self.ctx.rundir}/", "-c", str(self.ctx.rundir / CONF)]

    def check_argv(self) -> list[str]:
        return self._base_argv() + ["-t", "-q"]

    def start_argv(self) -> list[str]:
        return self._base_argv()

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "nginx-error.log"]

    def status_url(self) -> str:
        return f"http://{self.ctx.host}:{self.ctx.port}/stackbench/nginx-status"
