"""What a link really does, measured once per profile per run and stored with it: the
round trip a small packet sees (a UDP echo, the way ping does it), and the rate a bulk
TCP transfer reaches each way — against what the profile asked. The report names the
figures, so a "300 ms RTT" profile that gave 301.2 ms says so, and one whose emulation
cannot keep up (a forwarder starved of CPU) is visible rather than silently optimistic.

Probes are sent without waiting for each other (spaced `PROBE_GAP_S`), so a 300 ms link
costs one round trip, not fifty. A transfer runs for `TRANSFER_S` — longer on a delayed
link, so TCP's slow start is a small part of it. Its rate is the bytes between the 10th
and the 90th percent of the transfer over the time between them: a reader thread that
the busy machine schedules late finds its socket buffer full and reads it in a burst,
which made a window by time (the second half) overestimate by up to half, and the last
read's time underestimate by up to 15 % — measured here."""

from __future__ import annotations

import socket
import statistics
import struct
import threading
import time
from typing import Any

from stackbench.network.topology import Side, Topology

PROBES = 50
PROBE_GAP_S = 0.005
TRANSFER_S = 2.0
CHUNK = 64 * 1024


def expected_seconds(profile) -> float:
    """About how long `link` takes for a profile (for --dry-run): the echoes, then a
    transfer each way, each longer on a delayed link (as `link` sizes them)."""
    delays = profile.down.delay_s + profile.up.delay_s
    return PROBES * PROBE_GAP_S + 2 * delays + 2 * (TRANSFER_S + 10 * delays)


def link(topo: Topology, side: Side) -> dict:
    """Asked and measured figures of one visitor class's link."""
    measured: dict[str, Any] = {"rtt_ms": _rtt(topo, side)}
    duration = TRANSFER_S + 10 * (side.profile.down.delay_s + side.profile.up.delay_s)  # see expected_seconds
    measured["down_bit_s"] = _transfer(topo, side, duration, server_sends=True)
    measured["up_bit_s"] = _transfer(topo, side, duration, server_sends=False)
    stats = side.link.stats()
    return {"profile": side.profile.name, "emulation": side.profile.emulation, "asked": side.profile.asked(),
            "measured": measured, **({"forwarder": stats} if stats else {})}


def _rtt(topo: Topology, side: Side) -> dict:
    with topo.in_server():
        echo = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        echo.bind((topo.server_addr, 0))
    echo.settimeout(0.2)
    port = echo.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                data, peer = echo.recvfrom(64)
            except socket.timeout:
                continue
            echo.sendto(data, peer)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    with topo.in_client(side.name):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sent: dict[int, float] = {}
    rtts: list[float] = []

    def collect() -> None:
        # Replies are read as they come, while later probes are still being sent.
        deadline = time.perf_counter() + PROBES * PROBE_GAP_S + 2 + 4 * (side.profile.down.delay_s + side.profile.up.delay_s)
        while len(rtts) < PROBES and (left := deadline - time.perf_counter()) > 0:
            probe.settimeout(left)
            try:
                data = probe.recv(64)
            except OSError:
                return
            arrived = time.perf_counter()
            (i,) = struct.unpack("!I", data[:4])
            rtts.append((arrived - sent[i]) * 1e3)

    try:
        probe.connect((topo.server_addr, port))
        reader = threading.Thread(target=collect, daemon=True)
        reader.start()
        for i in range(PROBES):
            sent[i] = time.perf_counter()
            probe.send(struct.pack("!I", i))
            time.sleep(PROBE_GAP_S)
        reader.join()
    finally:
        stop.set()
        thread.join()
        probe.close()
        echo.close()
    if not rtts:
        return {"probes": PROBES, "answered": 0}
    rtts.sort()
    return {"probes": PROBES, "answered": len(rtts), "p50": round(statistics.median(rtts), 3),
            "min": round(rtts[0], 3), "p99": round(rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))], 3)}


def _transfer(topo: Topology, side: Side, duration_s: float, server_sends: bool) -> float | None:
    """Bits/s of a bulk TCP transfer lasting `duration_s`, as the receiver saw it."""
    with topo.in_server():
        listener = socket.create_server((topo.server_addr, 0))
    port = listener.getsockname()[1]
    listener.settimeout(5 + duration_s)
    received: list[tuple[float, int]] = []
    payload = b"\0" * CHUNK

    def sender(sock: socket.socket) -> None:
        end = time.monotonic() + duration_s
        try:
            while time.monotonic() < end:
                sock.sendall(payload)
        except OSError:
            pass
        finally:
            sock.close()

    def receiver(sock: socket.socket) -> None:
        total = 0
        sock.settimeout(5 + duration_s)
        try:
            while chunk := sock.recv(CHUNK):
                total += len(chunk)
                received.append((time.monotonic(), total))
        except OSError:
            pass
        finally:
            sock.close()

    def server_side() -> None:
        try:
            conn, _ = listener.accept()
        except OSError:
            return
        (sender if server_sends else receiver)(conn)

    thread = threading.Thread(target=server_side, daemon=True)
    thread.start()
    try:
        with topo.in_client(side.name):
            client = socket.create_connection((topo.server_addr, port), timeout=5 + duration_s)
        (receiver if server_sends else sender)(client)
        thread.join(timeout=10 + duration_s)
    finally:
        listener.close()
    if not received:
        return None
    total = received[-1][1]
    (t10, n10) = next((t, n) for t, n in received if n >= total * 0.1)
    (t90, n90) = next((t, n) for t, n in received if n >= total * 0.9)
    if t90 <= t10:
        return None
    return round((n90 - n10) * 8 / (t90 - t10))
