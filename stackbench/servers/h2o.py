"""h2o as a child process: `h2o -c CONF` (foreground by default), PHP through PHP-FPM.

h2o keeps a root-owned helper (a perl backtrace annotator) in its process group
(FIELD-NOTES); stopping the group stops it too.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("h2o_threads", 0, "h2o num-threads; 0 = one per core given to the server"),
    Knob("h2o_max_connections", 4096, "h2o max-connections"),
)
REQUIREMENTS = [Requirement("h2o", "h2o")]
CONF = "h2o/h2o.conf"


@dataclass
class H2o(Server):
    fpm: PhpFpm | None = None

    def __post_init__(self) -> None:
        self.name = "h2o"
        self.stop_signal = signal.SIGTERM

    def files(self) -> dict[str, str]:
        assert self.fpm is not None
        return {CONF: render(
            "h2o.conf.j2", **self.ctx.render_values(),
            threads=self.knobs["h2o_threads"] or len(self.ctx.cpus) or 1,
            max_connections=self.knobs["h2o_max_connections"],
            keepalive_timeout=self.knobs["keepalive_timeout"],
            fpm_tcp_port=self.fpm.tcp_port if self.fpm.tcp else None,
            fpm_socket=str(self.fpm.socket_path),
        )}

    def prepare(self) -> None:
        # h2o buffers large responses in files there, as the worker user.
        self.give_to_worker("tmp/h2o/")

    def check_argv(self) -> list[str]:
        return ["h2o", "-t", "-c", str(self.ctx.rundir / CONF)]

    def start_argv(self) -> list[str]:
        return ["h2o", "-c", str(self.ctx.rundir / CONF)]

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "h2o-error.log"]
