"""lighttpd as a child process: `lighttpd -D -f CONF`, PHP through PHP-FPM."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("lighttpd_max_connections", 4096, "lighttpd server.max-connections (it runs one process, no workers)"),
)
# mod_openssl (HTTPS) is packaged apart from lighttpd.
REQUIREMENTS = [Requirement("lighttpd", "lighttpd"),
                Requirement("/usr/lib/lighttpd/mod_openssl.so", "lighttpd-mod-openssl")]
CONF = "lighttpd/lighttpd.conf"
ERROR_LOG = "logs/lighttpd-error.log"


@dataclass
class Lighttpd(Server):
    fpm: PhpFpm | None = None

    def __post_init__(self) -> None:
        self.name = "lighttpd"
        self.stop_signal = signal.SIGTERM  # immediate; SIGINT would wait for clients

    def files(self) -> dict[str, str]:
        assert self.fpm is not None
        return {CONF: render(
            "lighttpd.conf.j2", **self.ctx.render_values(),
            max_connections=self.knobs["lighttpd_max_connections"],
            keepalive_timeout=self.knobs["keepalive_timeout"],
            keepalive_requests=self.knobs["keepalive_requests"],
            fpm_tcp_port=self.fpm.tcp_port if self.fpm.tcp else None,
            fpm_socket=str(self.fpm.socket_path),
        )}

    def prepare(self) -> None:
        # lighttpd opens its error log after dropping privileges (docs/servers.md,
        # "lighttpd"), and writes its temp files then too: a ~100 KB PHP response was
        # cut at 64 KB while the temp directory was root's.
        self.give_to_worker(ERROR_LOG, "tmp/lighttpd/")

    def check_argv(self) -> list[str]:
        return ["lighttpd", "-tt", "-f", str(self.ctx.rundir / CONF)]

    def start_argv(self) -> list[str]:
        return ["lighttpd", "-D", "-f", str(self.ctx.rundir / CONF)]

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / ERROR_LOG]
