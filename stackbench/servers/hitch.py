"""hitch (Debian's TLS proxy for Varnish) as a child process: `hitch --config CONF` in the
foreground. It terminates TLS on the stack's TLS port and speaks the PROXY protocol to
Varnish's second listen address (`-a …,PROXY`), which Varnish needs because it has no TLS
of its own (docs/servers.md, "hitch"). It reads its key as root, before it drops to the
worker user.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.tls_policy import openssl_conf
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("hitch_workers", 0, "hitch worker processes (with tls); 0 = one per core given to the server"),
)
REQUIREMENTS = [Requirement("hitch", "hitch")]
CONF = "hitch/hitch.conf"
OPENSSL_CNF = "hitch/openssl.cnf"


@dataclass
class Hitch(Server):
    backend_port: int = 0  # Varnish's PROXY-protocol listen port

    def __post_init__(self) -> None:
        self.name = "hitch"
        self.stop_signal = signal.SIGTERM

    def files(self) -> dict[str, str]:
        assert self.ctx.tls is not None, "hitch serves only a stack with tls"
        return {
            CONF: render("hitch.conf.j2", **self.ctx.render_values(), backend_port=self.backend_port,
                         workers=self.knobs.get("hitch_workers") or len(self.ctx.cpus) or 1),
            # Tickets off has no hitch option (tls_policy.openssl_conf).
            OPENSSL_CNF: openssl_conf(self.ctx.tls),
        }

    def prepare(self) -> None:
        self.give_to_worker("tmp/hitch-ocsp/")

    def check_argv(self) -> list[str]:
        return ["hitch", "--test", f"--config={self.ctx.rundir / CONF}"]

    def start_argv(self) -> list[str]:
        return ["hitch", f"--config={self.ctx.rundir / CONF}"]

    def env(self) -> dict[str, str]:
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C",
                "OPENSSL_CONF": str(self.ctx.rundir / OPENSSL_CNF)}

    def probe(self) -> Probe:
        assert self.ctx.tls is not None
        return tcp_probe(self.ctx.host, self.ctx.tls.port)

    def log_paths(self) -> list[Path]:
        return []  # hitch in the foreground logs to stderr, which the supervisor keeps
