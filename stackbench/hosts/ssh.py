"""One SSH connection to a client host, with OpenSSH as the user runs it: their keys,
agent and ~/.ssh/config (or the plan's hosts.ssh_config), in batch mode — a host that
would ask for a password fails at once instead. One master connection per host, a child
of the lab's (`ssh -M -N`, its socket in the lab's private directory; it dies with the
lab, even a lab killed outright), so each engine start costs a channel, not a handshake.
Should it drop, later commands connect directly.

The engine is shipped once per build: its bytes go to ~/.cache/stackbench/ on the host,
named by their SHA-256, and are reused while the build is the same.
"""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from stackbench.errors import HostError
from stackbench.upkeep.supervise import die_with_parent

CACHE = ".cache/stackbench"  # relative to the remote user's home: no root needed there


@dataclass
class Remote:
    """What the lab learnt of a host when it connected."""

    arch: str
    cpus: int
    engine: str  # the shipped engine's path on the host


class Ssh:
    def __init__(self, destination: str, control_dir: Path, config: Path | None = None):
        self.destination, self.control_dir, self.config = destination, control_dir, config
        self.master: subprocess.Popen | None = None

    def _options(self, master: str) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3", "-o", f"ControlMaster={master}", "-o", "ControlPersist=no",
                "-o", f"ControlPath={self.control_dir}/%C"]
        return argv + (["-F", str(self.config)] if self.config is not None else [])

    def argv(self, command: str) -> list[str]:
        return self._options("no") + ["--", self.destination, command]

    def open(self, timeout: float = 20) -> None:
        """The master connection, as a child that dies with the lab — and not with a
        Ctrl-C at the terminal, which is the lab's to handle: the channels it carries (a
        server's agent) stay open while the lab stops what runs there in order."""
        self.master = subprocess.Popen(self._options("yes") + ["-N", "--", self.destination],
                                       stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                       preexec_fn=detached)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.master.poll() is not None:
                err = (self.master.stderr.read() if self.master.stderr else b"").decode(errors="replace").strip()
                raise HostError(f"{self.destination}: SSH failed (exit status {self.master.returncode})",
                                detail=err or None, hint=self._hint())
            check = subprocess.run(self._options("no") + ["-O", "check", "--", self.destination],
                                   capture_output=True, timeout=10)
            if check.returncode == 0:
                return
            time.sleep(0.05)
        self.close()
        raise HostError(f"{self.destination}: no SSH connection within {timeout:.0f} s", hint=self._hint())

    def _hint(self) -> str:
        config = f" -F {self.config}" if self.config else ""
        return ("the lab connects in batch mode with your keys and ~/.ssh/config (or hosts.ssh_config): "
                f"check that `ssh{config} {self.destination} true` works without a password")

    def run(self, command: str, stdin: bytes | None = None, timeout: float = 60) -> str:
        try:
            proc = subprocess.run(self.argv(command), input=stdin, capture_output=True, timeout=timeout)
        except subprocess.TimeoutExpired:
            raise HostError(f"{self.destination}: `{command}` did not finish within {timeout:.0f} s over SSH") from None
        except FileNotFoundError:
            raise HostError("ssh is not installed", hint="apt-get install openssh-client") from None
        if proc.returncode != 0:
            err = proc.stderr.decode(errors="replace").strip()
            raise HostError(f"{self.destination}: SSH failed (exit status {proc.returncode})", detail=err or command,
                            hint=self._hint())
        return proc.stdout.decode(errors="replace")

    def popen(self, command: str, **kwargs) -> subprocess.Popen:
        return subprocess.Popen(self.argv(command), **kwargs)

    def hostname(self) -> str:
        """The host name or address ssh connects to, after ~/.ssh/config (ssh -G)."""
        argv = ["ssh", "-G"] + (["-F", str(self.config)] if self.config else []) + ["--", self.destination]
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
        return next((line.split(None, 1)[1] for line in out.splitlines() if line.startswith("hostname ")),
                    self.destination.rsplit("@", 1)[-1])

    def prepare(self, engine: Path) -> Remote:
        """Connect, check the host can run this engine build, ship it if it is not there
        (or not whole: the copy there is checked against the build's SHA-256)."""
        data = engine.read_bytes()
        digest = hashlib.sha256(data).hexdigest()
        path = f"{CACHE}/stackbench-load-{digest[:16]}"
        facts = self.run(f"uname -m; nproc; sha256sum {path} 2>/dev/null || echo missing").split()
        if len(facts) < 3:
            raise HostError(f"{self.destination}: unexpected answer to uname/nproc/sha256sum: {' '.join(facts)!r}")
        arch, cpus, there = facts[0], facts[1], facts[2]
        if arch != platform.machine():
            raise HostError(f"{self.destination} is {arch}, this machine {platform.machine()}: the engine built here "
                            "cannot run there")
        if there != digest:
            # A name of its own per upload, checked before it takes the build's name: a
            # cut-short copy, or two labs shipping at once, never leave a broken engine.
            part = f"{path}.part.$$"
            self.run(f"mkdir -p {CACHE} && cat > {part} && chmod 755 {part} && "
                     f"{_verified(part, digest)} && mv -f {part} {path} "
                     f"|| {{ rm -f {part}; exit 1; }}", stdin=data, timeout=120)
        # Runs there? (the C library it was linked against, a home mounted noexec…)
        try:
            self.run(f"{path} --version")
        except HostError as e:
            raise HostError(f"{self.destination}: the shipped engine does not run there", detail=e.detail,
                            hint="it needs the same CPU architecture and a glibc at least as new as this "
                                 "machine's (Debian 12: 2.36), and a home directory that allows executing") from None
        return Remote(arch, int(cpus), path)

    def ship_tree(self, data: bytes, digest: str, name: str) -> str:
        """A gzipped tar unpacked into ~/.cache/stackbench/NAME-<sha16>/ (once per build,
        like the engine: the tar is checked against its SHA-256 before it is unpacked, and
        the directory takes its name only when whole); returns the directory's path."""
        path = f"{CACHE}/{name}-{digest[:16]}"
        if self.run(f"cat {path}/.sha256 2>/dev/null || echo missing").strip() != digest:
            part = f"{path}.part.$$"
            self.run(f"mkdir -p {part} && cat > {part}.tgz && {_verified(part + '.tgz', digest)} && "
                     f"tar -xzf {part}.tgz -C {part} && echo {digest} > {part}/.sha256 && rm -f {part}.tgz && "
                     # A whole tree takes the name at once; if another lab's got it first
                     # (the same bytes: the name is their digest), ours goes — theirs may
                     # be running, so it is never removed.
                     f"{{ mv -T {part} {path} 2>/dev/null || rm -rf {part}; }} || {{ rm -rf {part} {part}.tgz; exit 1; }}",
                     stdin=data, timeout=120)
        return path

    def channel(self) -> float:
        """Seconds a command over the open connection takes now (and the connection,
        if it was closed for being idle, opened again)."""
        began = time.monotonic()
        self.run("true")
        return time.monotonic() - began

    def close(self) -> None:
        """Ends the master connection (its socket goes with it)."""
        if self.master is None:
            return
        if self.master.poll() is None:
            self.master.terminate()
            try:
                self.master.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.master.kill()
                self.master.wait()
        self.master = None


def detached() -> None:
    """In an SSH child before exec: a session of its own (a terminal's Ctrl-C does not
    reach it), and gone with the lab should the lab be killed outright."""
    os.setsid()
    die_with_parent()


def _verified(path: str, digest: str) -> str:
    """A shell test that the file at `path` has this SHA-256."""
    return f"test \"$(sha256sum < {path} | cut -c1-64)\" = {digest}"
