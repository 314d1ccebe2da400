"""One measuring run per machine at a time: two runs share the cores and each measures
the other's load (the cores are pinned the same way for both). An flock is released by
the kernel when its holder dies, so a killed lab never leaves a stale lock — and whoever
takes it knows that no other lab is alive: what a dead one left is its to sweep
(leftovers.py), and runs still marked `running` in a store are crashed ones."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from stackbench.errors import UsageError

LOCK_PATH = Path("/tmp/stackbench.lock")


class RunLock:
    def __init__(self, path: Path | None = None):
        self.path = path or LOCK_PATH
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            who = _describe(fd)
            os.close(fd)
            raise UsageError(f"another stackbench run ({who}) is measuring on this machine: "
                             "two runs on the same cores would each measure the other's load",
                             hint="wait for it to finish, or stop it (Ctrl-C keeps what it measured)") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        self.fd = fd

    def release(self) -> None:
        if self.fd is not None:
            fcntl.flock(self.fd, fcntl.LOCK_UN)
            os.close(self.fd)
            self.fd = None


def holder(path: Path | None = None) -> str | None:
    """Who measures now ("pid 123: stackbench run plan.toml"), or None when no lab holds
    the lock. Read from /proc/locks, without touching the lock: a read-only command that
    took it even briefly could make a starting run fail."""
    try:
        st = os.stat(path or LOCK_PATH)
        with open("/proc/locks") as f:
            table = f.read().splitlines()
    except OSError:
        return None
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    for line in table:
        fields = line.split()
        # "1: FLOCK  ADVISORY  WRITE 1234 fe:01:5678 0 EOF" (a blocked waiter has "->")
        if len(fields) >= 6 and fields[1] == "FLOCK" and fields[2] != "->" and fields[5] == dev:
            return _describe_pid(fields[4])
    return None


def _describe(fd: int) -> str:
    """The holder's pid (it writes it into the lock file) and its command line."""
    return _describe_pid(os.pread(fd, 32, 0).decode(errors="replace").strip())


def _describe_pid(pid: str) -> str:
    if not pid.isdigit():
        return "pid unknown"
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        argv = []
    command = " ".join(" ".join(_shorten(argv)).split())  # one line, however it was typed
    return f"pid {pid}: {command[:100]}{'…' if len(command) > 100 else ''}" if argv else f"pid {pid}"


def _shorten(argv: list[str]) -> list[str]:
    """`python -m stackbench run …` / `.venv/bin/stackbench run …` read as `stackbench run …`."""
    for i, arg in enumerate(argv):
        if arg == "stackbench" or arg.endswith("/stackbench"):
            return ["stackbench", *argv[i + 1:]]
    return argv
