"""Caddy as a child process: `caddy run --adapter caddyfile --config Caddyfile`.

Caddy never drops privileges, so as root it is started (and checked) under setpriv as the
worker user, with HOME and XDG_* in the run directory, where it writes its state
(FIELD-NOTES).
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("caddy_gomaxprocs", 0, "GOMAXPROCS for Caddy; 0 = Go's default (the cores given to the server)"),
)
REQUIREMENTS = [Requirement("caddy", "caddy"), Requirement("setpriv", "util-linux")]
CONF = "caddy/Caddyfile"
HOME = "caddy/"


@dataclass
class Caddy(Server):
    fpm: PhpFpm | None = None

    def __post_init__(self) -> None:
        self.name = "caddy"
        self.stop_signal = signal.SIGTERM  # graceful, bounded by grace_period

    def files(self) -> dict[str, str]:
        assert self.fpm is not None
        upstream = f"{self.ctx.host}:{self.fpm.tcp_port}" if self.fpm.tcp else f"unix/{self.fpm.socket_path}"
        return {CONF: render("Caddyfile.j2", **self.ctx.render_values(),
                             keepalive_timeout=self.knobs["keepalive_timeout"], upstream=upstream)}

    def prepare(self) -> None:
        self.give_to_worker(HOME)

    def _as_worker(self) -> list[str]:
        if not self.ctx.user:
            return []
        return ["setpriv", "--reuid", self.ctx.user, "--regid", self.ctx.user, "--init-groups"]

    def _config_args(self) -> list[str]:
        return ["--adapter", "caddyfile", "--config", str(self.ctx.rundir / CONF)]

    def check_argv(self) -> list[str]:
        return self._as_worker() + ["caddy", "validate"] + self._config_args()

    def start_argv(self) -> list[str]:
        return self._as_worker() + ["caddy", "run"] + self._config_args()

    def env(self) -> dict[str, str]:
        home = str(self.ctx.rundir / HOME)
        env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C",
               "HOME": home, "XDG_CONFIG_HOME": home, "XDG_DATA_HOME": home}
        if self.knobs["caddy_gomaxprocs"]:
            env["GOMAXPROCS"] = str(self.knobs["caddy_gomaxprocs"])
        return env

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / HOME / "caddy.log"]
