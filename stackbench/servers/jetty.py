"""Jetty 9.4 as a child process: `java @java.args org.eclipse.jetty.xml.XmlConfiguration
jetty.xml run.xml`, static files by its DefaultServlet, PHP through its FastCGIProxyServlet
to PHP-FPM.

Why XmlConfiguration and not a jetty.base under start.jar: one JVM whose options are ours
(start.jar forks a second JVM to apply -Xmx unless they are on its own command line), and
nothing read from Debian's jetty.home, whose etc/ is /etc/jetty9. The classpath names the
jars of libjetty9-java and libjetty9-extra-java one by one, so what runs is exactly those.

PHP-FPM is reached over TCP only: FastCGIProxyServlet builds its own HTTP client on
HttpClientTransportOverFCGI, which connects a java.nio SocketChannel to a host and port;
Jetty 9.4's unix-socket client (jetty-unixsocket) speaks HTTP, not FastCGI
(docs/servers.md, "Jetty").

Jetty has no config checker: the check is a dry start (check.xml) on the stack's own
ports, which are still free then. Jetty does not drop privileges itself, so as root the
JVM runs as the worker user under setpriv, like Caddy.
"""

from __future__ import annotations

import re
import signal
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackbench.errors import UsageError
from stackbench.servers import certificates
from stackbench.servers.base import Knob, Requirement, Server, render
from stackbench.servers.phpfpm import PhpFpm
from stackbench.servers.tls_policy import GROUPS_JAVA, TLS13_SUITES
from stackbench.servers.workers import as_worker
from stackbench.upkeep.supervise import Probe, tcp_probe

KNOBS = (
    Knob("jetty_min_threads", 8, "threads Jetty's pool keeps even when idle (QueuedThreadPool minThreads; "
                                 "Jetty's default 8)"),
    Knob("jetty_max_threads", 200, "most threads in Jetty's one pool, which serves every request, static or "
                                   "PHP, and runs its acceptors and selectors (maxThreads; Jetty's default 200)"),
    Knob("jetty_acceptors", 1, "threads accepting connections on each listener (ServerConnector acceptors; "
                               "Jetty itself picks 1 below 16 cores; 0 = its selectors accept)"),
    Knob("jvm_heap_max_mib", 0, "the JVM's -Xmx in MiB; 0 = the JVM's default, a quarter of the memory it "
                                "sees (the machine's, or a machine profile's limit)"),
    Knob("jvm_heap_min_mib", 0, "the JVM's -Xms in MiB; 0 = the JVM's default"),
)
JARS = "/usr/share/java"
SERVER_JAR = f"{JARS}/jetty9-server.jar"
# libjetty9-java: the server, servlets, HTTP/2 and ALPN; libjetty9-extra-java: the
# FastCGI proxy; servlet-api.jar comes with them (libservlet-api-java).
REQUIREMENTS = [Requirement("java", "openjdk-17-jre-headless"), Requirement(SERVER_JAR, "libjetty9-java"),
                Requirement(f"{JARS}/jetty9-fcgi-server.jar", "libjetty9-extra-java"),
                Requirement("setpriv", "util-linux")]
CLASSPATH = [f"{JARS}/{jar}.jar" for jar in (
    "servlet-api", "jetty9-util", "jetty9-io", "jetty9-http", "jetty9-server", "jetty9-security",
    "jetty9-servlet", "jetty9-xml", "jetty9-client", "jetty9-proxy", "jetty9-fcgi-client", "jetty9-fcgi-server",
    "jetty9-alpn-server", "jetty9-alpn-java-server", "jetty9-http2-common", "jetty9-http2-hpack",
    "jetty9-http2-server")]
MAIN = "org.eclipse.jetty.xml.XmlConfiguration"
ARGS = "jetty/java.args"
CONF = "jetty/jetty.xml"
CHECK = "jetty/check.xml"
RUN = "jetty/run.xml"
KEYSTORE = "jetty/keystore.p12"
# Java's PKCS12 keystore must have a password; the file's mode (0600, the worker's) is
# what protects the key in it, as it does the PEM key it is made from.
KEYSTORE_PASSWORD = "stackbench"
LISTEN_BACKLOG = 511  # nginx's and Apache's default (Java's is 50: jetty.xml.j2 says why not)
TMP = "tmp/jetty/"
LOGS = "logs/jetty/"


def check_knobs(knobs: dict[str, Any]) -> None:
    """What the knobs say of each other; the rest (threads enough for the acceptors and
    selectors, a heap Jetty starts in) is the dry start's to find."""
    if knobs["jetty_max_threads"] < 1:
        raise UsageError("knob 'jetty_max_threads' must be at least 1")
    if knobs["jetty_min_threads"] > knobs["jetty_max_threads"]:
        raise UsageError(f"knob 'jetty_min_threads' ({knobs['jetty_min_threads']}) is above jetty_max_threads "
                         f"({knobs['jetty_max_threads']}): Jetty's pool cannot keep more threads than it may have")
    low, high = knobs["jvm_heap_min_mib"], knobs["jvm_heap_max_mib"]
    if low and high and low > high:
        raise UsageError(f"knob 'jvm_heap_min_mib' ({low}) is above jvm_heap_max_mib ({high}): "
                         "the JVM refuses an initial heap larger than its maximum")


@dataclass
class Jetty(Server):
    fpm: PhpFpm | None = None

    def __post_init__(self) -> None:
        self.name = "jetty"
        self.stop_signal = signal.SIGTERM  # the JVM exits at once (no graceful stop is configured)

    def files(self) -> dict[str, str]:
        assert self.fpm is not None and self.fpm.tcp, "Jetty reaches PHP-FPM over TCP only"
        values = self.ctx.render_values()
        k = self.knobs
        conf = render("jetty.xml.j2", **values,
                      min_threads=k["jetty_min_threads"], max_threads=k["jetty_max_threads"],
                      acceptors=k["jetty_acceptors"], keepalive_timeout=k["keepalive_timeout"],
                      listen_backlog=LISTEN_BACKLOG,
                      fpm_host=self.ctx.host, fpm_port=self.fpm.tcp_port,
                      fpm_connections=k["pm_max_children"],
                      keystore=str(self.ctx.rundir / KEYSTORE), keystore_password=KEYSTORE_PASSWORD,
                      tls13_suites=list(TLS13_SUITES))
        return {ARGS: self._java_args(), CONF: conf,
                CHECK: render("jetty-run.xml.j2", stack_label=self.ctx.stack_label, check=True),
                RUN: render("jetty-run.xml.j2", stack_label=self.ctx.stack_label, check=False)}

    def _java_args(self) -> str:
        """The JVM's options, one a line (java's @argfile: `#` starts a comment)."""
        rundir, k = self.ctx.rundir, self.knobs
        lines = [f"# Rendered by stackbench ({self.ctx.stack_label}): the JVM's options for Jetty.",
                 "# No /tmp/hsperfdata_USER/PID: a file outside the run directory, left behind when the JVM is killed.",
                 "-XX:-UsePerfData",
                 f"-Djava.io.tmpdir={rundir / TMP}",
                 f"-XX:ErrorFile={rundir / LOGS / 'hs_err_pid%p.log'}"]
        if k["jvm_heap_min_mib"]:
            lines.append(f"-Xms{k['jvm_heap_min_mib']}m")
        if k["jvm_heap_max_mib"]:
            lines.append(f"-Xmx{k['jvm_heap_max_mib']}m")
        lines += ["# Warnings and errors only (on the output the lab drains), as the other fronts log.",
                  "-Dorg.eclipse.jetty.LEVEL=WARN"]
        if self.ctx.tls:
            lines += ["# The fair TLS policy's groups (servers/tls_policy.py); JSSE has no per-listener setting.",
                      f"-Djdk.tls.namedGroups={','.join(GROUPS_JAVA)}"]
            if not self.ctx.tls.tickets:
                lines += ["# Tickets off: no stateless tickets, and no TLS 1.3 resumption at all; TLS 1.2 still",
                          "# resumes from JSSE's own session cache, which has no switch (docs/methods/fair-tls.md).",
                          "-Djdk.tls.server.enableSessionTicketExtension=false",
                          "-Djdk.tls.server.disableExtensions=pre_shared_key"]
        lines += ["-cp", ":".join(CLASSPATH)]
        return "\n".join(lines) + "\n"

    def prepare(self) -> None:
        # The JVM writes its temporary files and a crash log there, as the worker user.
        self.give_to_worker(TMP, LOGS)
        if self.ctx.tls:  # the JVM reads it as the worker user
            certificates.pkcs12(self.ctx.tls.certificates, self.ctx.rundir / KEYSTORE, KEYSTORE_PASSWORD)
            self.give_to_worker(KEYSTORE)

    def _java(self, run_xml: str) -> list[str]:
        rundir = self.ctx.rundir
        return as_worker(self.ctx.user, ["java", f"@{rundir / ARGS}", MAIN, str(rundir / CONF), str(rundir / run_xml)])

    def check_argv(self) -> list[str]:
        return self._java(CHECK)

    def start_argv(self) -> list[str]:
        return self._java(RUN)

    def check_detail(self, output: str) -> str:
        """A failed dry start prints Jetty's log of the error, then the exception that
        ended the JVM, each with Java's stack traces: the exception's chain of messages
        says what is wrong; the frames only say where in Jetty."""
        lines = [line for line in output.splitlines() if not _FRAME.match(line)]
        start = next((i for i, line in enumerate(lines) if line.startswith("Exception in thread")), 0)
        return "\n".join(lines[start:])

    def env(self) -> dict[str, str]:
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}

    def probe(self) -> Probe:
        # Ready once every listener accepts: Jetty opens them one after the other.
        ports = [self.ctx.port] + ([self.ctx.tls.port] if self.ctx.tls else [])
        probes = [tcp_probe(self.ctx.host, port) for port in ports]
        return lambda: all(probe() for probe in probes)

    def log_paths(self) -> list[Path]:
        # Jetty logs on its output, which the supervisor keeps; a crash log would be in LOGS.
        return []


_FRAME = re.compile(r"^\s+(at |\.\.\. \d+ more)")
