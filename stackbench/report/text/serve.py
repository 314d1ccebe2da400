"""`stackbench serve` on the terminal: where the stack answers (clear text, and HTTPS with
the CA to trust), what it runs and on which cores, commands to try against it; a plain
line while it starts and one when it is gone (no progress bar: nothing is measured)."""

from __future__ import annotations

import shlex
from typing import Mapping, TextIO

from stackbench.model.serving import ServedStack
from stackbench.planning.machine import MachineProfile
from stackbench.planning.plan import StackVariant
from stackbench.report.text.progress import TerminalProgress
from stackbench.report.text.style import Style

# The tools the examples call, and the Debian package that has each.
TOOLS = {"curl": "curl", "ab": "apache2-utils", "wrk": "wrk", "h2load": "nghttp2-client"}
CLIENTS = 16  # the examples' connections: a load, not a single visitor
SECONDS = 10  # each load's length: by time, not a count of requests, so a slow page ends too


class ServeProgress(TerminalProgress):
    """What a dead lab had left (swept now), and a plain line as the stack starts."""

    def stack_starting(self, variant: StackVariant) -> None:
        self._say(self.style.dim(f"starting {variant.label} …"), always=True)


def render(stack: ServedStack, machine: MachineProfile | None, seconds: float | None,
           installed: Mapping[str, bool], out: TextIO) -> None:
    """`installed`: which of TOOLS this machine has (an example whose tool is missing
    says which package has it)."""
    style = Style(out)
    tls = "h2" if "h2" in stack.protocols else "https" if stack.tls_url else None
    width = max(len(w) for w in stack.paths)
    out.write(f"{style.bold(stack.label)} is up: {stack.description}\n\n")
    for wid, paths in stack.paths.items():
        more = f"  (+ {len(paths) - 1} more: its assets)" if len(paths) > 1 else ""
        out.write(f"  {wid:<{width}}  {stack.url}{paths[0]}{more}\n")
        if stack.tls_url:
            out.write(f"  {'':<{width}}  {stack.tls_url}{paths[0]}\n")
    out.write("\n")
    rows = []
    if stack.tls_url:
        rows += [("over TLS", _tls_words(stack)),
                 ("CA to trust", f"{stack.ca_file}  (curl --cacert; a browser: import it as an authority)")]
    rows.append(("run directory", f"{stack.rundir}  (configs: {', '.join(stack.files)}; logs/)"))
    if not str(stack.docroot).startswith(str(stack.rundir)):
        rows.append(("docroot", str(stack.docroot)))
    if stack.logins is not None:
        rows.append(("log in", f"{stack.url}{stack.login_path}  (the readers and this start's passwords: "
                               f"{stack.logins}, yours alone)"))
    rows.append(("processes", "  ·  ".join(f"{name} {' '.join(map(str, pids))}" for name, pids in stack.pids.items())))
    rows.append(("cores", _cores(stack)))
    if machine is not None:
        rows.append(("machine", machine.describe()))
    rows.append(("run lock", "held: a measuring run on this machine refuses to start until this stops"))
    for name, text in rows:
        out.write(f"{style.dim(f'{name:<13}')}  {text}\n")
    out.write(f"\n{style.bold('try')}\n")
    for tool, line in examples(stack, tls):
        missing = "" if installed.get(tool, True) else style.dim(f"   (not installed: apt-get install {TOOLS[tool]})")
        out.write(f"  {line}{missing}\n")
    until = f"for {seconds:g} s, or until Ctrl-C" if seconds is not None else "until Ctrl-C (or SIGTERM)"
    out.write(f"\nup {until}; then every server, cgroup and the run directory are removed\n")


def stopped(stack: ServedStack, out: TextIO) -> None:
    out.write(f"stopped {stack.label}: no server process, cgroup or run directory left\n")


def examples(stack: ServedStack, tls: str | None) -> list[tuple[str, str]]:
    """(tool, command line): curl on each URL, then SECONDS of load over CLIENTS connections
    from ab, wrk and h2load on the asked protocol's URL — on the load engine's cores, so the tools
    do not take the servers' cores (unless both share the only one)."""
    path = next(iter(stack.paths.values()))[0]
    clear = stack.url + path
    secure = f"{stack.tls_url}{path}" if stack.tls_url else None
    ca = shlex.quote(str(stack.ca_file))
    shared = bool(set(stack.server_cpus) & set(stack.engine_cpus))
    pin = "" if shared or not stack.engine_cpus else f"taskset -c {','.join(map(str, stack.engine_cpus))} "
    lines = [("curl", f"curl -i {clear}")]
    if secure:
        lines.append(("curl", f"curl -i {'--http2 ' if tls == 'h2' else ''}--cacert {ca} {secure}"))
    target = secure or clear
    lines += [("ab", f"{pin}ab -k -c {CLIENTS} -t {SECONDS} {target}"),
              ("wrk", f"{pin}wrk -t 1 -c {CLIENTS} -d {SECONDS}s {target}")]
    if tls == "h2":
        lines.append(("h2load", f"{pin}h2load -c {CLIENTS} -m 10 -D {SECONDS} {secure}"))
    else:
        lines.append(("h2load", f"{pin}h2load --h1 -c {CLIENTS} -D {SECONDS} {target}"))
    return lines


def _tls_words(stack: ServedStack) -> str:
    """"HTTP/1.1, and HTTP/2 (ALPN h2); TLSv1.3 TLS_AES_128_GCM_SHA256 X25519", or what the
    front chose when offered h2."""
    chosen = stack.h2.alpn if stack.h2 else None
    protocols = ("HTTP/1.1, and HTTP/2 (ALPN h2)" if chosen == "h2"
                 else f"HTTP/1.1 (offered h2, the front chose {chosen or 'no ALPN protocol'})")
    agreed = stack.https or stack.h2
    suite = " ".join(x for x in (agreed.version, agreed.cipher, agreed.group) if x) if agreed else ""
    return protocols + (f"; {suite}" if suite else "")


def _cores(stack: ServedStack) -> str:
    servers = ",".join(map(str, stack.server_cpus))
    if set(stack.server_cpus) & set(stack.engine_cpus):
        return f"servers pinned to {servers} (this machine's only core: your tools share it)"
    engine = ",".join(map(str, stack.engine_cpus))
    return f"servers pinned to {servers}; a run's load engine takes {engine}, as the examples' tools do (taskset)"
