"""One measuring run per machine at a time: two runs share the cores and each measures
the other's load (the cores are pinned the same way for both). An flock is released by
the kernel when its holder dies, so a killed lab never leaves a stale lock."""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from stackbench.errors import UsageError

LOCK_PATH = Path("/tmp/stackbench.lock")


class RunLock:
    def __init__(self, path: Path = LOCK_PATH):
        self.path = path
        self.fd: int | None = None

    def acquire(self) -> None:
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise UsageError(f"another stackbench run (pid {holder}) is measuring on this machine: "
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
