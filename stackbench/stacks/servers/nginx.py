"""nginx as a child process: `nginx -p RUNDIR/ -c CONF` with `daemon off`."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.stacks.base import Knob, Requirement, Server, render
from stackbench.supervise import Probe, tcp_probe

KNOBS = (
    Knob("nginx_workers", 0, "nginx worker processes; 0 = one per core given to the server"),
    Knob("nginx_worker_connections", 4096, "connections per nginx worker"),
)
REQUIREMENTS = [Requirement("nginx", "nginx")]
CONF = "nginx/nginx.conf"


@dataclass
class Nginx(Server):
    php_upstream: str = ""  # fastcgi_pass target, e.g. unix:/run/dir/php-fpm.sock

    def __post_init__(self) -> None:
        self.name = "nginx"
        # SIGQUIT = graceful shutdown; SIGTERM = fast. Fast is what we want at the end of
        # a cell: nothing is in flight any more.
        self.stop_signal = signal.SIGTERM

    def files(self) -> dict[str, str]:
        workers = self.knobs["nginx_workers"] or len(self.ctx.cpus) or 1
        return {CONF: render(
            "nginx.conf.j2",
            **self.ctx.render_values(),
            workers=workers,
            worker_connections=self.knobs["nginx_worker_connections"],
            keepalive_timeout=self.knobs["keepalive_timeout"],
            keepalive_requests=self.knobs["keepalive_requests"],
            php_upstream=self.php_upstream,
        )}

    def _base_argv(self) -> list[str]:
        return ["nginx", "-p", f"{self.ctx.rundir}/", "-c", str(self.ctx.rundir / CONF)]

    def check_argv(self) -> list[str]:
        return self._base_argv() + ["-t", "-q"]

    def start_argv(self) -> list[str]:
        return self._base_argv()

    def probe(self) -> Probe:
        return tcp_probe("127.0.0.1", self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "nginx-error.log"]

    def status_url(self) -> str:
        return f"http://127.0.0.1:{self.ctx.port}/stackbench/nginx-status"
