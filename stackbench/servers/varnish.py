"""Varnish Cache as a child process: `varnishd -F` (foreground), VCL in the run directory.

Under setsid(1) $! is not varnishd (docs/servers.md, "Varnish"): setsid(1) forks when its
caller leads a process group. The supervisor calls setsid() itself in the forked child
(Popen(start_new_session=True)), which does not fork, so the leader is varnishd's manager
and -P's pid file says the same (the probe waits for that file; the test checks it).
"""

from __future__ import annotations

import json
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("varnish_mode", "cache", "cache: Varnish's default (PHP responses too); pass-php: .php passed to "
                                  "Apache, static files cached; pass: nothing cached (a plain proxy)",
         ("cache", "pass-php", "pass")),
    Knob("varnish_storage_mb", 64, "Varnish malloc storage size (MB)"),
    Knob("varnish_thread_pool_min", 100, "Varnish thread_pool_min (threads per pool kept ready; 2 pools)"),
    Knob("varnish_thread_pool_max", 5000, "Varnish thread_pool_max (threads per pool at most)"),
)
# varnishd compiles the VCL with gcc at start and on -C (docs/servers.md, "Varnish").
REQUIREMENTS = [Requirement("varnishd", "varnish"), Requirement("varnishstat", "varnish"), Requirement("gcc", "gcc")]
VCL = "varnish/default.vcl"
# The counters a cell's hit ratio is read from (varnishstat -1 -j), by what they count.
STAT_COUNTERS = {"hits": "MAIN.cache_hit", "misses": "MAIN.cache_miss", "passes": "MAIN.s_pass"}
STAT_TIMEOUT_S = 5.0


def parse_varnishstat(text: str) -> dict[str, int] | None:
    """varnishstat -j's document: its counters under "counters" (Varnish 6.5 and later)
    or at the top level (before), each {"value": N, ...}; None when one is missing."""
    try:
        doc = json.loads(text)
    except ValueError:
        return None
    counters = doc.get("counters", doc) if isinstance(doc, dict) else {}
    out = {}
    for key, name in STAT_COUNTERS.items():
        value = counters.get(name, {}).get("value") if isinstance(counters.get(name), dict) else None
        if not isinstance(value, int):
            return None
        out[key] = value
    return out


@dataclass
class Varnish(Server):
    backend_port: int = 0
    proxy_port: int | None = None  # with tls: a second listen address for hitch (PROXY protocol)

    def __post_init__(self) -> None:
        self.name = "varnishd"
        self.stop_signal = signal.SIGTERM  # the manager stops its child, then exits

    @property
    def pidfile(self) -> Path:
        return self.ctx.rundir / "run" / "varnishd.pid"

    def files(self) -> dict[str, str]:
        return {VCL: render("varnish.vcl.j2", **self.ctx.render_values(),
                            backend_port=self.backend_port, mode=self.knobs["varnish_mode"])}

    def check_argv(self) -> list[str]:
        # -C compiles the VCL and exits; -n keeps its scratch files in the run directory.
        return ["varnishd", "-C", "-f", str(self.ctx.rundir / VCL), "-n", str(self.ctx.rundir / "varnish-check")]

    def start_argv(self) -> list[str]:
        k = self.knobs
        return [
            "varnishd", "-F",
            "-a", f"{self.ctx.host}:{self.ctx.port}",
            "-T", "none",  # no management port: the lab stops it with a signal
            "-f", str(self.ctx.rundir / VCL),
            "-n", str(self.ctx.rundir / "varnish"),
            "-P", str(self.pidfile),
            "-s", f"malloc,{k['varnish_storage_mb']}m",
            "-p", f"timeout_idle={k['keepalive_timeout']}",
            # Drop idle back-end connections before Apache does (its KeepAliveTimeout is
            # the same knob), so Varnish never reuses one Apache is closing.
            "-p", f"backend_idle_timeout={max(1, k['keepalive_timeout'] - 1)}",
            "-p", f"thread_pool_min={k['varnish_thread_pool_min']}",
            "-p", f"thread_pool_max={k['varnish_thread_pool_max']}",
            *self._tls_argv(),
        ]

    def _tls_argv(self) -> list[str]:
        """With tls, hitch (servers/hitch.py) hands Varnish the connections it decrypted:
        on their own address, with the PROXY protocol (which carries the ALPN result), and
        HTTP/2 turned on for those that negotiated h2 (Varnish 7.1's default is off)."""
        if self.proxy_port is None:
            return []
        return ["-a", f"{self.ctx.host}:{self.proxy_port},PROXY", "-p", "feature=+http2"]

    def probe(self) -> Probe:
        port = tcp_probe(self.ctx.host, self.ctx.port)
        return lambda: self.pidfile.exists() and port()

    def log_paths(self) -> list[Path]:
        return []  # varnishd -F writes its errors to stdout, which the supervisor keeps

    def cache_counts(self) -> dict[str, int] | None:
        """varnishstat's counters of this instance (its -n directory): requests answered
        from the cache, fetched for it (misses, hit-for-miss among them), and passed
        (a request with a cookie: the built-in VCL's rule)."""
        try:
            proc = subprocess.run(["varnishstat", "-1", "-j", "-n", str(self.ctx.rundir / "varnish"),
                                   *(arg for name in STAT_COUNTERS.values() for arg in ("-f", name))],
                                  capture_output=True, text=True, timeout=STAT_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return parse_varnishstat(proc.stdout) if proc.returncode == 0 else None
