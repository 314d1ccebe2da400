"""A host reachable only over SSH, for the tests and bench/ of the multi-host path: an
sshd in a network namespace of its own, joined to this one by a veth pair, with a
fresh host key, a client key, and an ssh config that names it `remote-test`. The
namespace shares this machine's clock, files and cgroups (the engine and the lab's code
are shipped all the same)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Mapping

NS = f"sbt-ssh-{os.getpid()}"
HOST_IF, REMOTE_IF = f"sbt-h{os.getpid()}"[:15], f"sbt-r{os.getpid()}"[:15]
HERE, THERE = "10.215.77.1", "10.215.77.2"


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@contextmanager
def sshd_in_namespace(env: Mapping[str, str] | None = None) -> Iterator[Path]:
    """Yields the directory holding `ssh_config` (and the keys); removes it all after.
    `env`: variables sshd sets in each session it starts (an SSH session inherits none
    of the lab's), so the agent there sees them."""
    tmp = Path(tempfile.mkdtemp(prefix="sbt-ssh-"))
    sshd = None
    try:
        for key in ("host_key", "client_key"):
            subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp / key)], check=True)
        (tmp / "authorized_keys").write_text((tmp / "client_key.pub").read_text())
        (tmp / "sshd_config").write_text(
            f"ListenAddress {THERE}\nHostKey {tmp}/host_key\nAuthorizedKeysFile {tmp}/authorized_keys\n"
            "PermitRootLogin prohibit-password\nPasswordAuthentication no\nKbdInteractiveAuthentication no\n"
            f"StrictModes no\nUsePAM no\nPidFile {tmp}/sshd.pid\n"
            + (f"SetEnv {' '.join(f'{k}={v}' for k, v in env.items())}\n" if env else ""))
        (tmp / "ssh_config").write_text(
            f"Host remote-test\n  HostName {THERE}\n  User root\n  IdentityFile {tmp}/client_key\n"
            "  IdentitiesOnly yes\n  StrictHostKeyChecking no\n  UserKnownHostsFile /dev/null\n  LogLevel ERROR\n")
        _ip("netns", "add", NS)
        _ip("link", "add", HOST_IF, "type", "veth", "peer", "name", REMOTE_IF)
        _ip("link", "set", REMOTE_IF, "netns", NS)
        _ip("addr", "add", f"{HERE}/30", "dev", HOST_IF)
        _ip("link", "set", HOST_IF, "up")
        _ip("netns", "exec", NS, "ip", "addr", "add", f"{THERE}/30", "dev", REMOTE_IF)
        _ip("netns", "exec", NS, "ip", "link", "set", REMOTE_IF, "up")
        _ip("netns", "exec", NS, "ip", "link", "set", "lo", "up")
        Path("/run/sshd").mkdir(exist_ok=True)  # sshd's privilege-separation directory
        # nsenter, not `ip netns exec`: that also remounts /sys for the namespace, which
        # hides the cgroup hierarchies a server's agent measures with (a real host has them).
        sshd = subprocess.Popen(["nsenter", f"--net=/run/netns/{NS}", "/usr/sbin/sshd", "-D", "-e", "-f",
                                 str(tmp / "sshd_config")], stderr=subprocess.PIPE)
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection((THERE, 22), timeout=0.5).close()
                break
            except OSError:
                if time.monotonic() > deadline or sshd.poll() is not None:
                    raise RuntimeError("sshd did not come up: " + sshd.stderr.read1().decode()) from None
                time.sleep(0.05)
        yield tmp
    finally:
        if sshd is not None:
            sshd.terminate()
            sshd.wait(timeout=10)
        # sshd's session processes outlive its listener: end everything in the namespace.
        pids = subprocess.run(["ip", "netns", "pids", NS], capture_output=True, text=True).stdout.split()
        for pid in pids:
            subprocess.run(["kill", "-9", pid], capture_output=True)
        subprocess.run(["ip", "netns", "delete", NS], capture_output=True)
        subprocess.run(["ip", "link", "delete", HOST_IF], capture_output=True)
        shutil.rmtree(tmp, ignore_errors=True)
