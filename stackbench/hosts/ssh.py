"""One SSH connection to a client host, with OpenSSH as the user runs it: their keys,
agent and ~/.ssh/config (or the plan's hosts.ssh_config), in batch mode — a host that
would ask for a password fails at once instead. One master connection per host
(ControlMaster, its socket in the lab's private directory), so each engine start costs a
channel, not a handshake.

The engine is shipped once per build: its bytes go to ~/.cache/stackbench/ on the host,
named by their SHA-256, and are reused while the build is the same.
"""

from __future__ import annotations

import hashlib
import platform
import shlex
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from stackbench.errors import HostError

CACHE = ".cache/stackbench"  # relative to the remote user's home: no root needed there


@dataclass
class Remote:
    """What the lab learnt of a host when it connected."""

    arch: str
    cpus: int
    engine: str  # the shipped engine's path on the host
    channel_s: float  # how long a command over the open connection takes to start


class Ssh:
    def __init__(self, destination: str, control_dir: Path, config: Path | None = None):
        self.destination, self.control_dir, self.config = destination, control_dir, config

    def argv(self, command: str) -> list[str]:
        argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", "-o", "ServerAliveInterval=5",
                "-o", "ServerAliveCountMax=3", "-o", "ControlMaster=auto", "-o", "ControlPersist=120",
                "-o", f"ControlPath={self.control_dir}/%C"]
        if self.config is not None:
            argv += ["-F", str(self.config)]
        return argv + ["--", self.destination, command]

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
                            hint="the lab connects in batch mode with your keys and ~/.ssh/config (or hosts.ssh_config): "
                                 f"check that `ssh {self.destination} true` works without a password")
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
        """Connect, check the host can run this engine build, ship it if it is not there."""
        digest = hashlib.sha256(engine.read_bytes()).hexdigest()[:16]
        path = f"{CACHE}/stackbench-load-{digest}"
        facts = self.run(f"uname -m; nproc; test -x {path} && echo present || echo missing").split()
        if len(facts) != 3:
            raise HostError(f"{self.destination}: unexpected answer to uname/nproc: {' '.join(facts)!r}")
        arch, cpus, state = facts
        if arch != platform.machine():
            raise HostError(f"{self.destination} is {arch}, this machine {platform.machine()}: the engine built here "
                            "cannot run there")
        channel = time.monotonic()
        self.run("true")
        channel_s = time.monotonic() - channel
        if state == "missing":
            part = shlex.quote(f"{path}.part")
            self.run(f"mkdir -p {CACHE} && cat > {part} && chmod 755 {part} && mv {part} {path}",
                     stdin=engine.read_bytes(), timeout=120)
        return Remote(arch, int(cpus), path, channel_s)

    def close(self) -> None:
        """Ends the master connection (its socket goes with it)."""
        argv = self.argv("")[:-3] + ["-O", "exit", "--", self.destination]
        subprocess.run(argv, capture_output=True, timeout=10)
