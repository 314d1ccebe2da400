"""Apache httpd 2.4 as a child process: `apache2 -f CONF -DFOREGROUND`, with our own
config (never Debian's apache2.conf, which needs apache2ctl's environment)."""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.stacks.base import Knob, Requirement, Server, render
from stackbench.supervise import Probe, tcp_probe

MODULES = "/usr/lib/apache2/modules"
# Prefork defaults are Debian's mpm_prefork.conf.
PREFORK_KNOBS = (
    Knob("start_servers", 5, "Apache prefork StartServers"),
    Knob("min_spare_servers", 5, "Apache prefork MinSpareServers"),
    Knob("max_spare_servers", 10, "Apache prefork MaxSpareServers"),
    Knob("max_request_workers", 150, "Apache MaxRequestWorkers (and ServerLimit)"),
)
ALLOW_OVERRIDE = Knob("allow_override", "None", "AllowOverride from / down; All adds a .htaccess to the docroot",
                      ("None", "All"))
REQUIREMENTS = [Requirement("apache2", "apache2")]
MOD_PHP = Requirement(f"{MODULES}/libphp8.2.so", "libapache2-mod-php8.2")
CONF = "apache/apache2.conf"

# What AllowOverride All finds in the docroot. Harmless, but Apache must open and parse it.
HTACCESS = b"# stackbench: present so that AllowOverride All has a file to read\nDirectoryIndex index.html index.php\n"


@dataclass
class Apache(Server):
    mpm: str = "prefork"
    php: str = "mod_php"  # or "none"

    def __post_init__(self) -> None:
        self.name = "apache2"
        # SIGTERM: stop now (~0.2 s). SIGWINCH would wait for keep-alive clients.
        self.stop_signal = signal.SIGTERM
        if self.knobs.get("allow_override") == "All":
            self.extra_docroot_files = {".htaccess": HTACCESS}

    def files(self) -> dict[str, str]:
        k = self.knobs
        return {CONF: render(
            "apache2.conf.j2",
            **self.ctx.render_values(),
            mpm=self.mpm,
            php=self.php,
            start_servers=k.get("start_servers"),
            min_spare_servers=k.get("min_spare_servers"),
            max_spare_servers=k.get("max_spare_servers"),
            max_request_workers=k.get("max_request_workers"),
            keepalive_timeout=k["keepalive_timeout"],
            keepalive_requests=k["keepalive_requests"],
            allow_override=k.get("allow_override", "None"),
        )}

    def check_argv(self) -> list[str]:
        return ["apache2", "-f", str(self.ctx.rundir / CONF), "-t"]

    def start_argv(self) -> list[str]:
        return ["apache2", "-f", str(self.ctx.rundir / CONF), "-DFOREGROUND"]

    def env(self) -> dict[str, str]:
        # A clean environment: nothing of apache2ctl's APACHE_* is needed by our config.
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}

    def probe(self) -> Probe:
        return tcp_probe("127.0.0.1", self.ctx.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "apache-error.log"]

    def status_url(self) -> str:
        return f"http://127.0.0.1:{self.ctx.port}/stackbench/server-status?auto"
