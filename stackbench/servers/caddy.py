"""Caddy as a child process: `caddy run --adapter caddyfile --config Caddyfile`.

Caddy never drops privileges, so as root it is started (and checked) under setpriv as the
worker user, with HOME and XDG_* in the run directory, where it writes its state
(docs/servers.md, "Caddy"). It reads the TLS key as that user too: the key is handed
to it (0600).

Session tickets cannot be turned off in a Caddyfile (only in Caddy's JSON:
apps.tls.session_tickets.disabled): with tickets = false the Caddyfile is adapted to
JSON by Caddy itself (`caddy adapt`) and that one key added; Caddy then runs the JSON,
and both files are stored with the cell.
"""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stackbench.errors import ConfigCheckFailed
from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("caddy_gomaxprocs", 0, "GOMAXPROCS for Caddy; 0 = Go's default (the cores given to the server)"),
)
REQUIREMENTS = [Requirement("caddy", "caddy"), Requirement("setpriv", "util-linux")]
CONF = "caddy/Caddyfile"
JSON_CONF = "caddy/caddy.json"  # only with tickets off (see above)
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
        caddyfile = render("Caddyfile.j2", **self.ctx.render_values(),
                           keepalive_timeout=self.knobs["keepalive_timeout"], upstream=upstream)
        if not self._runs_json:
            return {CONF: caddyfile}
        return {CONF: caddyfile, JSON_CONF: _without_tickets(caddyfile)}

    @property
    def _runs_json(self) -> bool:
        return self.ctx.tls is not None and not self.ctx.tls.tickets

    def prepare(self) -> None:
        self.give_to_worker(HOME)
        if self.ctx.tls:
            self.ctx.tls.certificates.give_key_to(self.ctx.user)

    def _as_worker(self) -> list[str]:
        if not self.ctx.user:
            return []
        return ["setpriv", "--reuid", self.ctx.user, "--regid", self.ctx.user, "--init-groups"]

    def _config_args(self) -> list[str]:
        if self._runs_json:
            return ["--config", str(self.ctx.rundir / JSON_CONF)]
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


def _without_tickets(caddyfile: str) -> str:
    """Caddy's own JSON for `caddyfile`, with TLS session tickets disabled."""
    res = subprocess.run(["caddy", "adapt", "--adapter", "caddyfile", "--config", "/dev/stdin"],
                         input=caddyfile.encode(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                         env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "HOME": "/nonexistent"})
    if res.returncode != 0:
        raise ConfigCheckFailed("caddy could not adapt its Caddyfile to JSON (caddy adapt)",
                                detail=res.stderr.decode(errors="replace").strip() or "(no output)")
    config = json.loads(res.stdout)
    config.setdefault("apps", {}).setdefault("tls", {})["session_tickets"] = {"disabled": True}
    return json.dumps(config, indent=2, sort_keys=True) + "\n"
