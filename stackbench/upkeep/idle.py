"""Idle cores during a run: as the system has them, or polled (the plan's `cpu_idle`).

On a VM whose idle vCPUs halt at once (cpuidle-haltpoll with guest_halt_poll_ns = 0,
as on this lab's machines), waking an idle core is an interrupt that exits to the
hypervisor on the waker's core and costs the woken task several µs: a task woken from a
halt was charged 8.1 µs a wake against 2.9 with idle polling, and nginx paid for waking
an idle load engine on every 150 KB response (bench/RESULTS.md, "Idle cores"). Holding
every core's idle state at polling — a PM QoS request of 0 µs written to
/dev/cpu_dma_latency, as tuned's latency-performance profile and cyclictest do — takes
that cost away, but it is not free either: in the static scenario it made Apache event
and Caddy 15–31 % faster and h2o, lighttpd and nginx up to 15 % slower (a polling core
beside a busy one). Which stack wins depends on it, so the lab leaves the machine as it
is unless the plan asks ("poll"), and records in every run what the idle cores did.

The request lives as long as the file stays open: the kernel drops it when the run ends
or when the lab dies, so nothing is left behind.
"""

from __future__ import annotations

import os
import struct
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterator

from stackbench.errors import UsageError

AS_IS, POLL = "as-is", "poll"
POLICIES = (AS_IS, POLL)
QOS_FILE = "/dev/cpu_dma_latency"
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


@dataclass(frozen=True)
class IdleState:
    """What a run's idle CPUs did, as the environment records it."""

    asked: str  # the plan's cpu_idle
    polled: bool  # the lab held every CPU's idle state at polling for the whole run
    why: str  # in words, for the report

    def as_dict(self) -> dict:
        return asdict(self)

    def on_this_machine_only(self, server_elsewhere: bool) -> IdleState:
        """With the stack on another host, the hold is the engine's machine's alone."""
        if not server_elsewhere:
            return self
        return replace(self, why=self.why + "; on the load engine's machine only, the stack's host as it is")


def system_words(driver: str | None = None, halt_poll_ns: str | None = None) -> str:
    """How this machine's idle cores wait, in words: its cpuidle driver and, on a guest
    with haltpoll, how long an idle vCPU polls before it halts."""
    driver = driver if driver is not None else _read(CPUIDLE / "current_driver")
    halt_poll_ns = halt_poll_ns if halt_poll_ns is not None else _read(HALT_POLL_NS)
    if not driver or driver == "none":
        return "as the system has them"
    words = f"as the system has them (cpuidle {driver}"
    if driver == "haltpoll" and halt_poll_ns is not None:
        words += ", halting at once" if halt_poll_ns == "0" else f", polling up to {int(halt_poll_ns) // 1000} µs before halting"
    return words + ")"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


@contextmanager
def held(asked: str = AS_IS, qos_file: str = QOS_FILE, inherit: bool = False) -> Iterator[IdleState]:
    """Idle cores polled for the duration of the block when `asked` is "poll"; an error
    when that cannot be had (the user asked for it). `inherit`: the request's descriptor
    survives an exec (bench/hold-idle)."""
    if asked not in POLICIES:
        raise ValueError(asked)
    if asked == AS_IS:
        yield IdleState(asked, False, system_words())
        return
    try:
        fd = os.open(qos_file, os.O_WRONLY)
    except OSError as e:
        raise UsageError(f"cpu_idle = \"poll\" needs {qos_file}: {e.strerror}",
                         hint="run as root, or leave cpu_idle out (\"as-is\")") from None
    try:
        os.set_inheritable(fd, inherit)
        os.write(fd, struct.pack("i", 0))  # 0 µs of wake-up latency allowed: only polling idle meets it
        yield IdleState(asked, True, "polled, not halted, during the run (cpu_idle = \"poll\": PM QoS 0 µs)")
    finally:
        os.close(fd)  # the kernel drops the request with the file


def current_latency_us(qos_file: str = QOS_FILE) -> int | None:
    """The wake-up latency every CPU's idle state must meet now (all requests combined)."""
    try:
        with open(qos_file, "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except (OSError, struct.error):
        return None
