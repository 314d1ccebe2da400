"""The lab's network namespaces: made per stack start, removed afterwards, and swept by
the next lab when a killed one left them behind.

A namespace's name says whose it is: `stackbench-<pid>-<role>`, the pid being the lab
that made it. A sweep removes only names of that shape whose lab is gone, so another
tool's namespaces and a lab running now are never touched. Deleting a namespace deletes
the links inside it, and the lab's links have both ends in its own namespaces, so no
device is ever left in the host's namespace.

Entering a namespace is per thread (setns(2) on the calling thread): the lab's own
sockets to the server (readiness, verification, status pages) and the processes it
starts inherit the namespace of the thread that makes them. Python 3.11 has no
os.setns, hence ctypes.
"""

from __future__ import annotations

import ctypes
import os
import re
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from stackbench.errors import StackbenchError

PREFIX = "stackbench-"
NETNS_DIR = Path("/run/netns")
CLONE_NEWNET = 0x40000000
_NAME = re.compile(rf"^{PREFIX}(\d+)-[a-z0-9-]+$")
_libc = ctypes.CDLL(None, use_errno=True)


class NetworkError(StackbenchError):
    pass


def ip(*args: str, check: bool = True, tool: str = "ip") -> str:
    """Run iproute2's `ip` (or `tc`) — argv, never a shell — and return its output; a
    failure is one line."""
    proc = subprocess.run([tool, *args], capture_output=True, text=True)
    if check and proc.returncode != 0:
        raise NetworkError(f"{tool} {' '.join(args)} failed: {proc.stderr.strip() or proc.returncode}",
                           hint="the lab needs root and iproute2 (apt install iproute2)")
    return proc.stdout


def tc(*args: str, check: bool = True) -> str:
    return ip(*args, check=check, tool="tc")


def setns(path: Path | str) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        if _libc.setns(fd, CLONE_NEWNET) != 0:
            err = ctypes.get_errno()
            raise NetworkError(f"cannot enter network namespace {path}: {os.strerror(err)}")
    finally:
        os.close(fd)


class Namespace:
    def __init__(self, name: str):
        self.name = name
        self.path = NETNS_DIR / name

    @classmethod
    def create(cls, role: str) -> "Namespace":
        ns = cls(f"{PREFIX}{os.getpid()}-{role}")
        if ns.path.exists():  # a previous start of this lab that did not finish its teardown
            ns.delete()
        ip("netns", "add", ns.name)
        ip("-n", ns.name, "link", "set", "lo", "up")
        return ns

    def delete(self) -> None:
        ip("netns", "delete", self.name, check=False)

    def exists(self) -> bool:
        return self.path.exists()

    @contextmanager
    def entered(self) -> Iterator[None]:
        """The calling thread inside this namespace for the block (what it connects,
        binds or starts lives there), and back where it was afterwards."""
        home = os.open(f"/proc/thread-self/ns/net", os.O_RDONLY | os.O_CLOEXEC)
        try:
            setns(self.path)
            try:
                yield
            finally:
                if _libc.setns(home, CLONE_NEWNET) != 0:  # pragma: no cover - cannot fail for our own fd
                    raise NetworkError("cannot return to the lab's network namespace")
        finally:
            os.close(home)

    def sysctl(self, key: str, value: str) -> None:
        """A sysctl of this namespace only (net.* keys are per namespace)."""
        with self.entered():
            Path("/proc/sys", *key.split(".")).write_text(value)

    def read_sysctl(self, key: str) -> str:
        with self.entered():
            return Path("/proc/sys", *key.split(".")).read_text().strip()


def owned(name: str) -> int | None:
    """The pid of the lab that made namespace `name`, or None when it is not the lab's."""
    m = _NAME.match(name)
    return int(m.group(1)) if m else None


def _lab_alive(pid: int) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"stackbench" in cmdline  # a recycled pid of another program is not our lab


def listed() -> list[str]:
    out = ip("netns", "list", check=False)
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def stale() -> list[tuple[str, int]]:
    """(name, pid) of each namespace a lab that is gone left behind."""
    out = []
    for name in listed():
        pid = owned(name)
        if pid is not None and pid != os.getpid() and not _lab_alive(pid):
            out.append((name, pid))
    return out
