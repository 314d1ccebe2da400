"""Idle cores during a run: as the system has them, or polled (the plan's `cpu_idle`).

On a VM whose idle vCPUs halt at once (cpuidle-haltpoll with guest_halt_poll_ns = 0, as
on the 2-core VMs this lab was built on), waking an idle core costs the waker 6–7 µs
inside the call that wakes it and the woken task 8.0–8.6 µs a wake, against 1–1.5 and
3.0–3.8 with idle polling; nginx served resumed TLS handshakes 10 % slower to our
sleeping engine than to h2load, which never sleeps (bench/RESULTS.md, "Idle cores").
Holding every core's idle state at polling — a PM QoS request of 0 µs written to
/dev/cpu_dma_latency, as cyclictest does — takes that cost away, but every idle core
then spins for the whole run, and in the static scenario it made Apache event and Caddy
about 30 % faster on 12 bytes and the single-threaded fronts no faster (2–15 % slower in
every pair). It changes how far apart the stacks are, so the lab never holds the stack's
cores unless the plan asks ("poll"), and records in every run what the idle cores did —
including a hold another program had taken (cyclictest, bench/hold-idle).

The load engine's cores are the lab's own, not the stack's: by default ("auto") they are
held polling for the run when this machine allows it (core_qos.py), so a server is charged
nothing for waking its client — a client on another machine would cost it nothing of the
kind, and on this VM the halted engine's wake-ups had cost Apache event 10–13 µs of a
52 µs request. Where they cannot be held (no root, no such sysfs file, the engine on the
server's cores, the load coming from other hosts) the run goes on as the system has them
and says why; "poll-engine" asks the same and refuses to run without it.

The request lives as long as the file stays open: the kernel drops it when the run ends
or when the lab dies, so nothing is left behind.
"""

from __future__ import annotations

import errno
import os
import struct
from contextlib import ExitStack, contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Iterator

from stackbench.errors import UsageError
from stackbench.upkeep import core_qos, leftovers

AUTO, AS_IS, POLL, POLL_ENGINE = "auto", "as-is", "poll", "poll-engine"
POLICIES = (AUTO, AS_IS, POLL, POLL_ENGINE)
DEFAULT = AUTO
QOS_FILE = "/dev/cpu_dma_latency"
CPUIDLE = Path("/sys/devices/system/cpu/cpuidle")
CPUIDLE_STATES = Path("/sys/devices/system/cpu/cpu0/cpuidle")
HALT_POLL_NS = Path("/sys/module/haltpoll/parameters/guest_halt_poll_ns")


@dataclass(frozen=True)
class IdleState:
    """What a run's idle CPUs did, as the environment records it."""

    asked: str  # the plan's cpu_idle
    polled: bool  # every core's idle state was held at polling for the whole run
    why: str  # in words, for the report
    engine_polled: bool = False  # the load engine's cores alone were (cpu_idle = "poll-engine")

    def as_dict(self) -> dict:
        return asdict(self)

    def on_this_machine_only(self, hosts_elsewhere: bool) -> IdleState:
        """With the stack or clients on other hosts, this is the lab's machine's alone."""
        if not hosts_elsewhere:
            return self
        return replace(self, why=self.why + "; on this machine only, the plan's other hosts as they are")


def system_words(driver: str | None = None, halt_poll_ns: str | None = None, engine_held: bool = False) -> str:
    """How this machine's idle cores wait, in words: its cpuidle driver and, on a guest
    with haltpoll, how long an idle vCPU polls before it halts. `engine_held`: these are
    the server's cores, the engine's held polling (waking the engine then costs nothing)."""
    driver = driver if driver is not None else _read(CPUIDLE / "current_driver")
    halt_poll_ns = halt_poll_ns if halt_poll_ns is not None else _read(HALT_POLL_NS)
    if not driver or driver == "none":
        return "as the system has them"
    words = f"as the system has them (cpuidle {driver}"
    if driver == "haltpoll" and halt_poll_ns == "0" and engine_held:
        return words + ", halting at once)"
    if driver == "haltpoll" and halt_poll_ns == "0":
        # What that does to the figures, where they are read (show's header, the report).
        return words + ", halting at once: a server pays some µs each time it wakes the idle load engine, which a " \
                       "client on another machine would not cost it; docs/guide/idle-cores.md)"
    if driver == "haltpoll" and halt_poll_ns is not None:
        words += f", polling up to {int(halt_poll_ns) // 1000} µs before halting"
    return words + ")"


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


def require(asked: str, engine_here: bool = True, qos_file: str = QOS_FILE) -> None:
    """Before anything starts (the preflight, the dry run): what `asked` needs is here.
    `engine_here`: the load runs from this machine (no clients on other hosts)."""
    if asked == POLL and not os.access(qos_file, os.W_OK):
        raise _cannot(qos_file, errno.ENOENT if not os.path.exists(qos_file) else errno.EACCES)
    if asked == POLL_ENGINE:
        if not engine_here:
            raise UsageError("cpu_idle = \"poll-engine\" holds this machine's engine cores: the plan's load comes "
                             "from other hosts", hint="leave cpu_idle out, or use \"poll\"")
        if (e := core_qos.writable(0)) is not None:
            raise _cannot(e.filename or core_qos.CORE_REQUEST.format(0), e.errno, asked)


@contextmanager
def held(asked: str = AS_IS, engine_cpus: list[int] | None = None, qos_file: str = QOS_FILE) -> Iterator[IdleState]:
    """Idle cores polled for the duration of the block: all of them for "poll" (a global
    request whose descriptor is not inherited: a child that outlives the block must not
    hold it), the load engine's `engine_cpus` alone for "poll-engine" (core_qos.py); an
    error when that cannot be had (the user asked for it). "auto" holds the engine's cores
    when it can, and otherwise takes nothing and says why. "as-is" takes nothing and says
    what the cores do — polled all the same when another process holds them there.
    `engine_cpus`: empty when the engine shares the server's cores or the load comes
    from other hosts."""
    if asked not in POLICIES:
        raise ValueError(asked)
    cpus = list(engine_cpus or [])
    if asked == AS_IS:
        yield _not_held_here(asked, cpus, qos_file)
        return
    if asked in (POLL_ENGINE, AUTO):
        with ExitStack() as hold:
            # Only the hold's own errors are caught here: the run's pass through the yield.
            why_not = _hold_engine_cores(hold, cpus)
            if why_not is not None and asked == POLL_ENGINE:
                raise why_not
            polled, others = _as_they_are(qos_file, engine_held=why_not is None)
            if why_not is not None:  # auto: the run goes on as the system has the cores, and says why
                reason = why_not.message.replace('cpu_idle = "poll-engine" ', "that ", 1)
                yield _not_held_here(asked, cpus, qos_file, f"; the load engine's cores were not held polling "
                                                            f"(cpu_idle = \"auto\"): {reason}")
                return
            yield IdleState(asked, polled, f"the load engine's cores {cpus} polled, never halted, during the run "
                                           f"(cpu_idle = \"{asked}\": waking the idle engine costs the server no "
                                           f"more than a remote client would); the others {others}",
                            engine_polled=True)
        return
    try:
        fd = os.open(qos_file, os.O_WRONLY)
    except OSError as e:
        raise _cannot(qos_file, e.errno) from None
    try:
        try:
            os.write(fd, struct.pack("i", 0))  # 0 µs of wake-up latency allowed: only polling idle meets it
        except OSError as e:
            raise _cannot(qos_file, e.errno) from None
        yield IdleState(asked, True, "polled, not halted, during the run (cpu_idle = \"poll\": PM QoS 0 µs)")
    finally:
        os.close(fd)  # the kernel drops the request with the file


def _not_held_here(asked: str, cpus: list[int], qos_file: str, why_not: str = "") -> IdleState:
    """What the idle cores do when this lab holds none: as the system has them, or held
    polling by another process — all of them (a PM QoS request), or the engine's own
    (their requests at "n/a": bench/hold-idle, say)."""
    if core_qos.held_polling(cpus):
        polled, others = _as_they_are(qos_file, engine_held=True)
        return IdleState(asked, polled, f"the load engine's cores {cpus} polled, never halted, during the run: held "
                                        f"so by another process (bench/hold-idle, …); the others {others}",
                         engine_polled=True)
    polled, words = _as_they_are(qos_file)
    return IdleState(asked, polled, words + why_not)


def _hold_engine_cores(hold: ExitStack, cpus: list[int]) -> UsageError | None:
    """Holds `cpus` polling until `hold` closes (core_qos.py); None when held, else why not."""
    if not cpus:
        return UsageError("cpu_idle = \"poll-engine\" needs the load engine on cores of its own; here it shares the "
                          "server's (or the load comes from other hosts)",
                          hint="use \"poll\" (every core), or leave cpu_idle out")
    try:
        if (e := core_qos.writable(cpus[0])) is not None:  # no root, no such file: said before any ledger
            raise e
        me = leftovers.me()
        hold.enter_context(core_qos.polling(cpus, (me.pid, me.start)))
    except OSError as e:
        return _cannot(e.filename or core_qos.CORE_REQUEST.format(cpus[0]), e.errno, POLL_ENGINE)
    except UsageError as e:  # a previous hold's ledger still there
        return e
    return None


def _cannot(qos_file: str, err: int | None, asked: str = POLL) -> UsageError:
    hint = {errno.ENOENT: f"this machine (or container) has no {qos_file}; use --cpu-idle as-is",
            errno.EACCES: "it takes root; run as root, or use --cpu-idle as-is",
            errno.EPERM: "it takes root; run as root, or use --cpu-idle as-is"}.get(err or 0, "use --cpu-idle as-is")
    return UsageError(f"cpu_idle = \"{asked}\" needs {qos_file}: {os.strerror(err) if err else 'unusable'}",
                      hint=hint)


def _as_they_are(qos_file: str, engine_held: bool = False) -> tuple[bool, str]:
    """(polled, words) with nothing asked: polled when the requests others hold allow
    no idle state but polling (every other state's wake-up takes longer)."""
    latency = current_latency_us(qos_file)
    deepest_allowed = _non_polling_latencies()
    if latency is not None and deepest_allowed and latency < min(deepest_allowed):
        return True, (f"polled, not halted, during the run: another process holds a PM QoS request of {latency} µs "
                      "(cyclictest, bench/hold-idle, …)")
    return False, system_words(engine_held=engine_held)


def _non_polling_latencies() -> list[int]:
    """Wake-up latencies (µs) of core 0's idle states other than polling."""
    found = []
    for state in sorted(CPUIDLE_STATES.glob("state*")):
        name, latency = _read(state / "name"), _read(state / "latency")
        if name != "POLL" and latency is not None and latency.isdigit():
            found.append(int(latency))
    return found


def current_latency_us(qos_file: str = QOS_FILE) -> int | None:
    """The wake-up latency every CPU's idle state must meet now (all requests combined)."""
    try:
        with open(qos_file, "rb") as f:
            return struct.unpack("i", f.read(4))[0]
    except (OSError, struct.error):
        return None
