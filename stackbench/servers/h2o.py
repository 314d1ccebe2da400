"""h2o as a child process: `h2o -c CONF` (foreground by default), PHP through PHP-FPM.

h2o keeps a root-owned helper (a perl backtrace annotator) in its process group
(docs/servers.md, "h2o"); stopping the group stops it too.
"""

from __future__ import annotations

import os
import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.servers.tls_policy import openssl_conf
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("h2o_threads", 0, "h2o num-threads; 0 = one per core given to the server"),
    Knob("h2o_max_connections", 4096, "h2o max-connections"),
)
REQUIREMENTS = [Requirement("h2o", "h2o")]
CONF = "h2o/h2o.conf"
OPENSSL_CNF = "h2o/openssl.cnf"


@dataclass
class H2o(Server):
    fpm: PhpFpm | None = None

    def __post_init__(self) -> None:
        self.name = "h2o"
        self.stop_signal = signal.SIGTERM

    def files(self) -> dict[str, str]:
        assert self.fpm is not None
        tls = {OPENSSL_CNF: openssl_conf(self.ctx.tls)} if self.ctx.tls else {}
        return {**tls, CONF: render(
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

    def env(self) -> dict[str, str] | None:
        if not self.ctx.tls:
            return None
        # The part of the TLS policy h2o has no directive for (tls_policy.openssl_conf).
        return {**os.environ, "OPENSSL_CONF": str(self.ctx.rundir / OPENSSL_CNF)}

    def check_argv(self) -> list[str]:
        return ["h2o", "-t", "-c", str(self.ctx.rundir / CONF)]

    def start_argv(self) -> list[str]:
        return ["h2o", "-c", str(self.ctx.rundir / CONF)]

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "h2o-error.log"]
