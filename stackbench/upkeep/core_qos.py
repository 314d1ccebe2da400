"""Some cores held polling for a run (`cpu_idle = "auto"` or "poll-engine": the load engine's), and
put back after it — by the next lab's sweep if this one dies.

A core's own wake-up latency request, /sys/devices/system/cpu/cpuN/power/
pm_qos_resume_latency_us ("n/a": no idle state but polling; "0": no constraint), is a
setting, not a descriptor (idle.py's global request goes with its file): it stays
written when the lab dies. So the values it replaces go first into a ledger, and only
then is a core changed; the run puts them back, and a sweep (leftovers.py) puts them back
for a lab that is gone.

The ledger is read by root and names what root writes, so nobody else may write it: it
lives in a directory of root's alone (/run/stackbench, 0700), is made with O_EXCL and
O_NOFOLLOW (a planted file or link is refused), is read only when it is a regular file
of ours, and holds core numbers and values, each checked, never a path. An existing
ledger is never overwritten: its values are the machine's own.
"""

from __future__ import annotations

import json
import os
import re
import stat
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from stackbench.errors import StackbenchError, UsageError

CORE_REQUEST = "/sys/devices/system/cpu/cpu{}/power/pm_qos_resume_latency_us"
ONLY_POLLING = "n/a"
LEDGER = Path("/run/stackbench/idle-cores.json")
VALUE = re.compile(r"^(n/a|\d+)$")


class NotPutBack(StackbenchError):
    """Cores left polling after a run: the ledger stays for the sweep."""


def writable(cpu: int) -> OSError | None:
    """None when core `cpu`'s request can be read and written here (root, a kernel with it)."""
    try:
        with open(CORE_REQUEST.format(cpu), "r+"):
            return None
    except OSError as e:
        return e


@contextmanager
def polling(cpus: list[int], owner: tuple[int, int]) -> Iterator[None]:
    """`cpus` allowed no idle state but polling for the block; their requests as they were
    after it. `owner`: the lab's (pid, start time), for the sweep to tell whether it is
    gone. OSError when a request cannot be read or written (what was written is put back
    first); UsageError when a ledger is already there; NotPutBack when a write failed and
    what was written could not be put back either."""
    before = {cpu: _read(cpu) for cpu in cpus}
    _write_ledger(before, owner)
    try:
        for cpu in cpus:
            _write(cpu, ONLY_POLLING)
    except BaseException:  # Ctrl-C between the ledger and the last write too
        if _put_back(before):
            raise NotPutBack(f"cores {cpus} could not all be held polling nor put back",
                             hint="`stackbench clean` puts them back (the values are kept in " + str(LEDGER) + ")")
        raise
    try:
        yield
    except BaseException:
        _put_back(before)  # the run's own error goes on; a core not put back stays in the ledger
        raise
    failed = _put_back(before)
    if failed:
        raise NotPutBack(f"cores {failed} are still held polling: their request could not be put back",
                         hint="`stackbench clean` puts them back (the values are kept in " + str(LEDGER) + ")")


def _read(cpu: int) -> str:
    return Path(CORE_REQUEST.format(cpu)).read_text().strip()


def _write(cpu: int, value: str) -> None:
    Path(CORE_REQUEST.format(cpu)).write_text(value)


def _put_back(before: dict[int, str]) -> list[int]:
    """Every core tried; the ledger goes only when all are back. Returns those that failed."""
    failed = []
    for cpu, value in before.items():
        try:
            _write(cpu, value)
        except OSError:
            failed.append(cpu)
    if not failed:
        LEDGER.unlink(missing_ok=True)
    return failed


def _write_ledger(before: dict[int, str], owner: tuple[int, int]) -> None:
    LEDGER.parent.mkdir(mode=0o700, exist_ok=True)
    where = os.lstat(LEDGER.parent)
    if not stat.S_ISDIR(where.st_mode) or where.st_uid != os.geteuid() or where.st_mode & 0o077:
        raise UsageError(f"{LEDGER.parent} is not a private directory of this user: refused",
                         hint="remove it; the lab makes it again")
    try:
        fd = os.open(LEDGER, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise UsageError(f"a previous hold of idle cores is still recorded in {LEDGER}",
                         hint="`stackbench clean` puts its cores back and removes it") from None
    with os.fdopen(fd, "w") as f:
        json.dump({"pid": owner[0], "start": owner[1], "before": {str(c): v for c, v in before.items()}}, f)


def read_ledger() -> tuple[int, int, dict[int, str]] | None:
    """The ledger's owner (pid, start time) and values; None when there is none.
    ValueError when it is not one the lab wrote (not ours, not a regular file, not its
    shape); OSError when it cannot be read."""
    try:
        where = os.lstat(LEDGER)
    except FileNotFoundError:
        return None
    if not stat.S_ISREG(where.st_mode) or where.st_uid != os.geteuid():
        raise ValueError("not a regular file of this user")
    try:
        held = json.loads(LEDGER.read_text())
        before = {int(cpu): value for cpu, value in held["before"].items()}
        pid, start = int(held["pid"]), int(held["start"])
    except (KeyError, TypeError, AttributeError) as e:
        raise ValueError(f"not its shape: {e}") from None
    if not all(isinstance(v, str) and VALUE.match(v) for v in before.values()):
        raise ValueError("values that are not requests")
    return pid, start, before


def put_back_held(before: dict[int, str]) -> list[int]:
    """A gone lab's cores put back — only those still held polling: a core someone set
    otherwise since is theirs now. The ledger goes when none failed."""
    still = {}
    for cpu, value in before.items():
        try:
            if _read(cpu) == ONLY_POLLING:
                still[cpu] = value
        except OSError:
            still[cpu] = value  # tried below, and reported if it fails
    return _put_back(still)


def held_polling(cpus: list[int]) -> bool:
    """Whether every one of `cpus` is held polling now (its request "n/a"), whoever holds it."""
    try:
        return bool(cpus) and all(_read(cpu) == ONLY_POLLING for cpu in cpus)
    except OSError:
        return False
