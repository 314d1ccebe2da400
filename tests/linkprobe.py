"""Measuring a link between two of the tests' network namespaces: UDP echo round trips
(the way ping does it, probes not waiting for each other), a bulk TCP transfer's rate,
and a paced UDP stream's losses. Used by tests/test_tunnel_real.py and by
netshape/bench/measure.py (the figures for the lead)."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from stackbench.network.netns import Namespace

CHUNK = 64 * 1024


@contextmanager
def namespaces(prefix: str, count: int = 2) -> Iterator[list[str]]:
    """`count` fresh namespaces named prefix + a, b, …, loopback up, with TCP buffers big
    enough for 100 Mbit/s over 300 ms (the link, not the socket, must be the limit);
    deleted on the way out, whatever happened."""
    names = [f"{prefix}{chr(ord('a') + i)}" for i in range(count)]
    try:
        for n in names:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)  # a crashed run's leftover
            subprocess.run(["ip", "netns", "add", n], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", "lo", "up"], check=True)
            ns = Namespace(n)
            ns.sysctl("net.ipv4.tcp_rmem", "4096 131072 33554432")
            ns.sysctl("net.ipv4.tcp_wmem", "4096 16384 33554432")
        yield names
    finally:
        for n in names:
            subprocess.run(["ip", "netns", "del", n], capture_output=True)


def _sock(ns: str, kind: int) -> socket.socket:
    with Namespace(ns).entered():
        return socket.socket(socket.AF_INET, kind)


def rtts_ms(ns_a: str, ns_b: str, addr_a: str, addr_b: str, probes: int = 200, gap_s: float = 0.005,
            wait_s: float = 2.0) -> list[float]:
    """Round trips (ms) of `probes` UDP datagrams A → B → A sent `gap_s` apart; lost ones
    are missing from the list."""
    echo, probe = _sock(ns_b, socket.SOCK_DGRAM), _sock(ns_a, socket.SOCK_DGRAM)
    echo.bind((addr_b, 0))
    probe.bind((addr_a, 0))
    echo.settimeout(0.1)
    done = threading.Event()

    def serve() -> None:
        while not done.is_set():
            try:
                data, peer = echo.recvfrom(64)
            except OSError:
                continue
            echo.sendto(data, peer)

    server = threading.Thread(target=serve, daemon=True)
    server.start()
    sent: dict[int, float] = {}
    got: list[float] = []

    def collect() -> None:
        deadline = time.perf_counter() + probes * gap_s + wait_s
        while len(got) < probes and (left := deadline - time.perf_counter()) > 0:
            probe.settimeout(left)
            try:
                data = probe.recv(64)
            except OSError:
                return
            got.append((time.perf_counter() - sent[struct.unpack("!I", data[:4])[0]]) * 1e3)

    reader = threading.Thread(target=collect, daemon=True)
    try:
        reader.start()
        for i in range(probes):
            sent[i] = time.perf_counter()
            probe.sendto(struct.pack("!I", i), echo.getsockname())
            time.sleep(gap_s)
        reader.join()
    finally:
        done.set()
        server.join()
        echo.close()
        probe.close()
    return got


def tcp_bit_s(ns_a: str, ns_b: str, addr_b: str, seconds: float) -> float:
    """Goodput (payload bit/s) of a bulk TCP transfer A → B, over the second half of
    `seconds` (slow start stays out of it)."""
    listener = _sock(ns_b, socket.SOCK_STREAM)
    listener.bind((addr_b, 0))
    listener.listen(1)
    listener.settimeout(10)
    marks: list[tuple[float, int]] = []

    def receive() -> None:
        conn, _ = listener.accept()
        conn.settimeout(10)
        total = 0
        with conn:
            while chunk := conn.recv(CHUNK):
                total += len(chunk)
                marks.append((time.monotonic(), total))

    receiver = threading.Thread(target=receive, daemon=True)
    receiver.start()
    sender = _sock(ns_a, socket.SOCK_STREAM)
    sender.settimeout(10)
    payload = b"\0" * CHUNK
    start = time.monotonic()
    try:
        sender.connect(listener.getsockname())
        while time.monotonic() - start < seconds:
            sender.sendall(payload)
    finally:
        sender.close()
        receiver.join(timeout=30)
        listener.close()
    half = start + seconds / 2
    inside = [(t, n) for t, n in marks if half <= t <= start + seconds]
    if len(inside) < 2:
        raise AssertionError(f"the transfer delivered too little to measure ({len(marks)} reads)")
    (t0, n0), (t1, n1) = inside[0], inside[-1]
    return (n1 - n0) * 8 / (t1 - t0)


def udp_delivered(ns_a: str, ns_b: str, addr_a: str, addr_b: str, count: int, gap_s: float,
                  wait_s: float = 1.0) -> int:
    """How many of `count` UDP datagrams sent A → B `gap_s` apart arrived."""
    rx, tx = _sock(ns_b, socket.SOCK_DGRAM), _sock(ns_a, socket.SOCK_DGRAM)
    with rx, tx:
        rx.bind((addr_b, 0))
        tx.bind((addr_a, 0))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        for i in range(count):
            tx.sendto(struct.pack("!I", i), rx.getsockname())
            time.sleep(gap_s)
        seen: set[int] = set()
        rx.settimeout(wait_s)
        while len(seen) < count:
            try:
                seen.add(struct.unpack("!I", rx.recv(64)[:4])[0])
            except OSError:
                break
        return len(seen)


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process, from /proc/PID/stat (clock ticks)."""
    with open(f"/proc/{pid}/stat", "rb") as f:
        stat = f.read()
    fields = stat[stat.rfind(b")") + 2:].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime, stime: fields 14, 15
