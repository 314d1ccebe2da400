"""A link with delay, jitter, loss and a rate limit between two network namespaces: a TUN
device in each, joined by the userspace forwarder `stackbench-netshape` (netshape/).

Why in user space: this kernel has no netem and cannot load modules; tbf on a veth
limits a rate but cannot delay (docs/servers.md, "Network shaping"). The forwarder's
own timing error is measured (its lateness counters) and its cost is its CPU time —
`stats()` has both.

open(): start the forwarder, which creates both TUN devices (they live as long as its
descriptors: killed, even by SIGKILL, it takes them with it), give each a point-to-point
address with the other as its peer (the peer route comes with it), bring them up, and
wait until a datagram has made the round trip. close(): stop it, and make sure no device
is left (one that existed before, made persistent by `ip tuntap add`, is deleted too).
No shell anywhere: every command is an argv list.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import os
import re
import select
import signal
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from stackbench.upkeep import binaries
from stackbench.errors import UsageError
from stackbench.network.netns import NETNS_DIR, Namespace, NetworkError, ip
from stackbench.network.shape import Shape
from stackbench.upkeep.supervise import ServerProcess, spawn

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
# How long open() waits for the forwarder's first line and for the first round trip,
# on top of the link's own delays: both are a few ms on an idle machine.
ATTACH_TIMEOUT_S = 5.0
READY_TIMEOUT_S = 5.0
# How long before a packet's due time the forwarder stops sleeping and spins on the clock
# (0: it sleeps in ppoll until the due time and is late by the wake-up latency).
SPIN_S = 0.0


def binary() -> str:
    """The forwarder: $STACKBENCH_NETSHAPE, the repo's release build, or one on PATH."""
    return binaries.find("stackbench-netshape", "STACKBENCH_NETSHAPE", "netshape", NetworkError, "the link emulator")


def device_names(name: str) -> tuple[str, str]:
    """The two TUN devices' names for a tunnel called `name`: at most 15 characters (the
    kernel's IFNAMSIZ − 1); a long name keeps its start and a hash of the whole, so two
    long names that share a start still differ."""
    if not _NAME.match(name):
        raise UsageError(f"tunnel name {name!r}: use 1 to 64 letters, digits, '.', '_' or '-'")
    base = name if len(name) <= 12 else name[:6] + hashlib.sha1(name.encode()).hexdigest()[:6]
    return f"{base}-a", f"{base}-b"


@dataclass(frozen=True)
class DirectionCounters:
    """One direction's counters since the forwarder started (its JSON, read once)."""

    received: int  # packets read from the source device
    packets: int  # … written to the far device
    bytes: int
    dropped_loss: int
    dropped_queue: int  # the rate queue was full (drop-tail)
    dropped_line: int  # the delay line was full (64 MiB in flight)
    write_errors: int
    max_queue_bytes: int
    max_line_packets: int
    late_mean_us: float | None  # written − due: the forwarder's own timing error
    late_max_us: float | None
    late_p99_le_us: int | None  # 99 % of packets were at most this late (a bucket bound)

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> DirectionCounters:
        late = d["late_us"]
        return cls(d["received"], d["packets"], d["bytes"], d["dropped_loss"], d["dropped_queue"],
                   d["dropped_line"], d["write_errors"], d["max_queue_bytes"], d["max_line_packets"],
                   late["mean"], late["max"], late["p99_le"])


@dataclass(frozen=True)
class TunnelStats:
    t_s: float  # since the forwarder started
    cpu_s: float  # its user + system CPU time (writing into a TUN device runs the far stack's receive path there too)
    a_to_b: DirectionCounters
    b_to_a: DirectionCounters

    @classmethod
    def from_doc(cls, d: dict[str, Any]) -> TunnelStats:
        return cls(d["t_s"], d["cpu_user_s"] + d["cpu_sys_s"],
                   DirectionCounters.from_doc(d["a_to_b"]), DirectionCounters.from_doc(d["b_to_a"]))


@dataclass
class Tunnel:
    name: str
    ns_a: str
    ns_b: str
    dev_a: str
    dev_b: str
    addr_a: str
    addr_b: str
    a_to_b: Shape
    b_to_a: Shape
    proc: ServerProcess
    summary: TunnelStats | None = None
    _seen_seq: int = 0
    _closed: bool = field(default=False, repr=False)

    @property
    def pid(self) -> int:
        return self.proc.pid

    @classmethod
    def open(cls, ns_a: str, ns_b: str, addr_a: str, addr_b: str, a_to_b: Shape, b_to_a: Shape, name: str,
             *, seed: int | None = None, cpus: list[int] | None = None, spin_s: float = SPIN_S) -> Tunnel:
        """A shaped link between namespaces `ns_a` and `ns_b` (names under /run/netns, made
        by the caller), `addr_a` in A and `addr_b` in B, ready when it returns."""
        dev_a, dev_b = device_names(name)
        for ns in (ns_a, ns_b):
            if not _NAME.match(ns) or not (NETNS_DIR / ns).exists():
                raise UsageError(f"network namespace {ns!r} does not exist", hint=f"ip netns add {ns}")
        if ns_a == ns_b:
            raise UsageError("a tunnel joins two different network namespaces")
        family = _family(addr_a, addr_b)
        argv = [binary(), "--a", f"{NETNS_DIR / ns_a}:{dev_a}", "--b", f"{NETNS_DIR / ns_b}:{dev_b}",
                "--a-to-b", a_to_b.argument(), "--b-to-a", b_to_a.argument()]
        if seed is not None:
            argv += ["--seed", str(seed)]
        if spin_s:
            argv += ["--spin", f"{round(spin_s * 1e9)}ns"]
        # Its own session and process group, SIGTERM when the lab dies (supervise.spawn).
        proc = spawn("stackbench-netshape", argv, cwd=Path("/"), cpus=cpus)
        tunnel = cls(name, ns_a, ns_b, dev_a, dev_b, addr_a, addr_b, a_to_b, b_to_a, proc)
        try:
            tunnel._wait_event("attached", ATTACH_TIMEOUT_S)
            for ns, dev, local, peer in ((ns_a, dev_a, addr_a, addr_b), (ns_b, dev_b, addr_b, addr_a)):
                # IPv6 would hold the address back ~1 s for duplicate detection; on a
                # point-to-point link of our own there is nothing to detect.
                extra = ["nodad"] if family == socket.AF_INET6 else []
                ip("-n", ns, "addr", "add", local, "peer", peer, "dev", dev, *extra)
                ip("-n", ns, "link", "set", "dev", dev, "up")
            tunnel._wait_flowing(family)
        except BaseException:
            tunnel.close()
            raise
        return tunnel

    def counters(self, timeout_s: float = 2.0) -> TunnelStats:
        """The forwarder's counters now (it prints them on SIGUSR1); after close(), its
        final summary."""
        if self._closed:
            if self.summary is None:
                raise NetworkError(f"tunnel {self.name} is closed and left no summary")
            return self.summary
        os.kill(self.proc.pid, signal.SIGUSR1)
        return TunnelStats.from_doc(self._wait_event("stats", timeout_s))

    def stats(self) -> dict[str, Any]:
        """The counters as the JSON the lab stores with a run's calibration (a veth link
        has none and returns {})."""
        return asdict(self.counters())

    def close(self) -> TunnelStats | None:
        """Stop the forwarder (SIGTERM, then SIGKILL to its group), keep its final summary,
        and make sure both devices are gone. Safe to call twice."""
        if self._closed:
            return self.summary
        self._closed = True
        self.proc.stop(grace_s=3.0)
        try:
            self.summary = TunnelStats.from_doc(self._wait_event("summary", 1.0, alive=False))
        except NetworkError:
            self.summary = None  # killed before it could say: the counters are lost, not zero
        for ns, dev in ((self.ns_a, self.dev_a), (self.ns_b, self.dev_b)):
            if _device_exists(ns, dev):
                ip("-n", ns, "link", "del", "dev", dev)
        return self.summary

    def __enter__(self) -> Tunnel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- inside ---------------------------------------------------------------------------

    def _events(self) -> list[dict[str, Any]]:
        """The forwarder's recent JSON lines (it prints nothing else but an error line)."""
        events = []
        for line in self.proc.tail(60).splitlines():
            if line.startswith("{"):
                try:
                    events.append(json.loads(line))
                except json.JSONDecodeError:
                    continue
        return events

    def _wait_event(self, kind: str, timeout_s: float, *, alive: bool = True) -> dict[str, Any]:
        """The first `kind` event newer than any returned before, within `timeout_s`."""
        deadline = time.monotonic() + timeout_s
        while True:
            for ev in self._events():
                seq = ev.get("seq", 0)  # stats and summary lines count up; "attached" has none
                if ev.get("event") == kind and (kind == "attached" or seq > self._seen_seq):
                    self._seen_seq = max(self._seen_seq, seq)
                    return ev
            if alive and not self.proc.alive():
                raise NetworkError(f"stackbench-netshape exited with status {self.proc.popen.returncode}",
                                  detail=self.proc.tail())
            if time.monotonic() > deadline:
                raise NetworkError(f"stackbench-netshape printed no {kind} line within {timeout_s:g} s",
                                  detail=self.proc.tail())
            time.sleep(0.005)

    def _wait_flowing(self, family: int) -> None:
        """A datagram A → B and its echo B → A, retried against a deadline (loss may eat
        a few; the link's delays are added to each try's wait)."""
        one_way = max(self.a_to_b.delay_s + self.a_to_b.jitter_s, self.b_to_a.delay_s + self.b_to_a.jitter_s)
        per_try = 0.05 + 2 * one_way
        deadline = time.monotonic() + READY_TIMEOUT_S + 4 * one_way
        with _socket_in(self.ns_a, family) as a, _socket_in(self.ns_b, family) as b:
            a.bind((self.addr_a, 0))
            b.bind((self.addr_b, 0))
            for attempt in range(1_000_000):
                if not self.proc.alive():
                    raise NetworkError(f"stackbench-netshape exited with status {self.proc.popen.returncode}",
                                      detail=self.proc.tail())
                if time.monotonic() > deadline:
                    raise NetworkError(f"no datagram crossed tunnel {self.name} ({self.addr_a} ⇄ {self.addr_b}) "
                                      f"in {attempt} tries", detail=self.proc.tail())
                token = f"stackbench-netshape ready {attempt}".encode()
                try:
                    a.sendto(token, b.getsockname())
                    if _receive(b, token, per_try):
                        b.sendto(token, a.getsockname())
                        if _receive(a, token, per_try):
                            return
                except OSError:  # a link not up yet: ENETUNREACH and kin; try again
                    time.sleep(0.01)


def _receive(sock: socket.socket, token: bytes, timeout_s: float) -> bool:
    """True when `token` arrives within `timeout_s` (older tries' echoes are skipped)."""
    deadline = time.monotonic() + timeout_s
    while (left := deadline - time.monotonic()) > 0:
        if select.select([sock], [], [], left)[0] and sock.recv(2048) == token:
            return True
    return False


def _family(addr_a: str, addr_b: str) -> int:
    try:
        a, b = ipaddress.ip_address(addr_a), ipaddress.ip_address(addr_b)
    except ValueError as e:
        raise UsageError(f"tunnel address: {e}") from None
    if a.version != b.version or a == b:
        raise UsageError(f"tunnel addresses {addr_a} and {addr_b} must be two addresses of one family")
    return socket.AF_INET6 if a.version == 6 else socket.AF_INET


def _socket_in(ns: str, family: int) -> socket.socket:
    """A UDP socket that lives in namespace `ns` (a socket keeps the namespace it was made in)."""
    with Namespace(ns).entered():
        return socket.socket(family, socket.SOCK_DGRAM)


def _device_exists(ns: str, dev: str) -> bool:
    """False too when the namespace itself is gone (its devices went with it)."""
    return Namespace(ns).exists() and bool(ip("-n", ns, "link", "show", "dev", dev, check=False).strip())
