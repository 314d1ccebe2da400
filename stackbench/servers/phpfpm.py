"""PHP-FPM as a child process: `php-fpm8.2 -F -y CONF`."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackbench.servers.base import Context, Knob, Pool, Requirement, Server, render
from stackbench.upkeep.supervise import Probe, tcp_probe, unix_probe

BINARY = "php-fpm8.2"
# Defaults are Debian's www.conf (dynamic, 5 children), i.e. what a user gets out of the
# box; a tuned production pool is one plan line away (e.g. pm_start_servers = 100).
KNOBS = (
    Knob("pm", "dynamic", "PHP-FPM process manager", ("static", "dynamic", "ondemand")),
    Knob("pm_max_children", 5, "PHP-FPM pm.max_children"),
    Knob("pm_start_servers", 2, "PHP-FPM pm.start_servers (dynamic)"),
    Knob("pm_min_spare_servers", 1, "PHP-FPM pm.min_spare_servers (dynamic)"),
    Knob("pm_max_spare_servers", 3, "PHP-FPM pm.max_spare_servers (dynamic)"),
    Knob("opcache", True, "PHP opcache on or off"),
    Knob("fpm_listen", "unix", "how the front reaches PHP-FPM", ("unix", "tcp")),
)
# A sized pool: `pm = static`, every child started up front (what the PHP-FPM manual
# advises for a box given to one site), so no child is forked under the load.
POOL = Pool("PHP-FPM children", "php-fpm", lambda n: {"pm": "static", "pm_max_children": n}, one="PHP-FPM child")
REQUIREMENTS = [Requirement(BINARY, "php8.2-fpm"), Requirement("/etc/php/8.2/mods-available/opcache.ini", "php8.2-opcache")]
CONF = "php-fpm/php-fpm.conf"


@dataclass
class PhpFpm(Server):
    tcp_port: int | None = None  # used when fpm_listen = "tcp"
    # The front routes /stackbench/fpm-status to FPM's status page (nginx does): then the
    # lab polls busy/idle workers and the listen queue through it.
    status_via_front: bool = False

    def __post_init__(self) -> None:
        self.name = "php-fpm"
        self.stop_signal = signal.SIGQUIT  # graceful; FPM stops in a few ms either way

    def status_url(self) -> str | None:
        return f"http://{self.ctx.host}:{self.ctx.port}/stackbench/fpm-status" if self.status_via_front else None

    @classmethod
    def for_stack(cls, ctx: Context, knobs: dict[str, Any]) -> "PhpFpm":
        """The pool of an FPM stack, on a unix socket or on a second free TCP port."""
        return cls(ctx, knobs, tcp_port=ctx.aux_port("php-fpm") if knobs["fpm_listen"] == "tcp" else None)

    @property
    def tcp(self) -> bool:
        return self.knobs["fpm_listen"] == "tcp"

    @property
    def socket_path(self) -> Path:
        return self.ctx.rundir / "run" / "php-fpm.sock"

    @property
    def listen(self) -> str:
        if self.knobs["fpm_listen"] == "tcp":
            return f"{self.ctx.host}:{self.tcp_port}"
        return str(self.socket_path)

    @property
    def upstream(self) -> str:
        """The address as nginx's fastcgi_pass spells it."""
        return self.listen if self.knobs["fpm_listen"] == "tcp" else f"unix:{self.socket_path}"

    def files(self) -> dict[str, str]:
        k = self.knobs
        return {CONF: render(
            "php-fpm.conf.j2",
            **self.ctx.render_values(),
            listen=self.listen,
            pm=k["pm"],
            pm_max_children=k["pm_max_children"],
            pm_start_servers=k["pm_start_servers"],
            pm_min_spare_servers=k["pm_min_spare_servers"],
            pm_max_spare_servers=k["pm_max_spare_servers"],
            opcache=k["opcache"],
        )}

    def _base_argv(self) -> list[str]:
        # opcache's lock file defaults to /tmp: keep it in the run directory.
        return [BINARY, "-y", str(self.ctx.rundir / CONF),
                "-d", f"opcache.lockfile_path={self.ctx.rundir / 'tmp'}"]

    def check_argv(self) -> list[str]:
        return self._base_argv() + ["-t"]

    def start_argv(self) -> list[str]:
        return self._base_argv() + ["-F"]

    def probe(self) -> Probe:
        if self.knobs["fpm_listen"] == "tcp":
            return tcp_probe(self.ctx.host, self.tcp_port)
        return unix_probe(self.socket_path)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "php-fpm.log"]
