"""Some cores held polling for a run (`cpu_idle = "poll-engine"`: the load engine's), and
put back after it — by the next lab's sweep if this one dies.

A core's own wake-up latency request, /sys/devices/system/cpu/cpuN/power/
pm_qos_resume_latency_us ("n/a": no idle state but polling; "0": no constraint), is a
setting, not a descriptor (idle.py's global request goes with its file): it stays
written when the lab dies. So the values it replaces go first into a ledger beside the
run lock, with the lab's pid and start time; the lab writes them back when the run ends,
however it ends that the lab sees, and a sweep (leftovers.py) writes them back for a lab
that is gone. Only the lab holding the run lock writes the ledger: one at a time.
"""

from __future__ import annotations

import json
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from stackbench.upkeep import leftovers
from stackbench.upkeep.lock import LOCK_PATH

CORE_REQUEST = "/sys/devices/system/cpu/cpu{}/power/pm_qos_resume_latency_us"
ONLY_POLLING = "n/a"
LEDGER = LOCK_PATH.parent / "stackbench.idle-cores"


def writable(template: str | None = None) -> OSError | None:
    """None when core 0's request can be read and written here (root, a kernel with it)."""
    path = Path((template or CORE_REQUEST).format(0))
    try:
        with open(path, "r+"):
            return None
    except OSError as e:
        return e


@contextmanager
def polling(cpus: list[int], template: str | None = None, ledger: Path | None = None) -> Iterator[None]:
    """`cpus` allowed no idle state but polling for the block; their requests as they were
    after it. Raises OSError when a request cannot be read or written (nothing is left
    changed: what was written is put back)."""
    template, ledger = template or CORE_REQUEST, ledger or LEDGER
    before = {str(cpu): Path(template.format(cpu)).read_text().strip() for cpu in cpus}
    owner = leftovers.me()
    ledger.write_text(json.dumps({"pid": owner.pid, "start": owner.start, "template": template, "before": before}))
    try:
        for cpu in cpus:
            Path(template.format(cpu)).write_text(ONLY_POLLING)
        yield
    finally:
        _put_back(template, before)
        ledger.unlink(missing_ok=True)


def _put_back(template: str, before: dict[str, str]) -> None:
    for cpu, value in before.items():
        Path(template.format(cpu)).write_text(value)


def stale(ledger: Path | None = None) -> Iterable[leftovers.Leftover]:
    """A ledger whose lab is gone: its cores' requests are put back, then the ledger goes."""
    ledger = ledger or LEDGER
    try:
        held = json.loads(ledger.read_text())
        owner = leftovers.Owner(int(held["pid"]), int(held["start"]))
        template, before = str(held["template"]), dict(held["before"])
    except FileNotFoundError:
        return
    except (OSError, ValueError, KeyError, TypeError):
        yield leftovers.Leftover("idle-core ledger", str(ledger), "unreadable: the cores' requests are as they are",
                                 lambda: ledger.unlink(missing_ok=True))
        return
    if owner.alive():
        return

    def remove() -> None:
        _put_back(template, before)
        ledger.unlink(missing_ok=True)

    yield leftovers.Leftover("idle-core request", f"cores {', '.join(before)} held polling",
                             f"left by pid {owner.pid}, gone; put back to {sorted(set(before.values()))}", remove)


leftovers.register(lambda: stale())
