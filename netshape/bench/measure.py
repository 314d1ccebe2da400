"""What the forwarder really does, for the lead and the report: for each one-way delay and
rate asked (the same both ways), the round trip of 200 UDP probes (median, p99), a bulk
TCP transfer's rate, and the forwarder's CPU time per 1000 packets and per Mbit.

Run as root from the repository root, one short series at a time on a shared machine:
  flock /tmp/stackbench-agents.lock .venv/bin/python netshape/bench/measure.py --delays 0,0.5 --rates unlimited,100mbit
--veth measures a plain veth pair (no forwarder) instead: the baseline the forwarder adds to.
Prints one JSON object per line and a table row for each to stderr."""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from stackbench.network.shape import parse_shape  # noqa: E402
from stackbench.network.tunnel import Tunnel  # noqa: E402
from tests import linkprobe  # noqa: E402

A, B = "10.231.9.1", "10.231.9.2"


def measure(ns: list[str], delay_ms: float, rate: str, probes: int, spin_s: float, veth: bool) -> dict:
    text = f"delay={delay_ms}ms" + ("" if rate == "unlimited" else f",rate={rate}")
    shape = parse_shape(text)
    row: dict = {"delay_ms": delay_ms, "rate": rate, "spin_us": spin_s * 1e6, "link": "veth" if veth else "netshape"}
    if veth:
        subprocess.run(["ip", "-n", ns[0], "link", "add", "sbtv-a", "type", "veth", "peer", "name", "sbtv-b",
                        "netns", ns[1]], check=True)
        for n, dev, addr in ((ns[0], "sbtv-a", A), (ns[1], "sbtv-b", B)):
            subprocess.run(["ip", "-n", n, "addr", "add", f"{addr}/30", "dev", dev], check=True)
            subprocess.run(["ip", "-n", n, "link", "set", dev, "up"], check=True)
        tunnel = None
    else:
        tunnel = Tunnel.open(ns[0], ns[1], A, B, shape, shape, "sbtm", seed=1, spin_s=spin_s)
    try:
        rtts = sorted(linkprobe.rtts_ms(ns[0], ns[1], A, B, probes=probes, wait_s=2 + 4 * delay_ms / 1e3))
        row.update(rtt_asked_ms=2 * delay_ms, answered=len(rtts), rtt_min_ms=rtts[0],
                   rtt_p50_ms=statistics.median(rtts), rtt_p99_ms=rtts[min(len(rtts) - 1, int(len(rtts) * 0.99))])
        if tunnel:
            c = tunnel.counters()
            row.update(late_mean_us=c.a_to_b.late_mean_us, late_p99_le_us=c.a_to_b.late_p99_le_us)
        seconds = 3 + 10 * 2 * delay_ms / 1e3  # slow start a small part even at 300 ms RTT
        result: list[float] = []
        transfer = threading.Thread(target=lambda: result.append(linkprobe.tcp_bit_s(ns[0], ns[1], B, seconds)))
        t0 = time.monotonic()
        transfer.start()
        if tunnel:
            # The forwarder's own count of IP bytes written to B over the same second half
            # the goodput is taken from (the goodput's error is about one RTT of data over
            # the window: a loss holds back in-order delivery for an RTT, then releases it).
            time.sleep(max(0.0, t0 + seconds / 2 - time.monotonic()))
            before, cpu0, t_half = tunnel.counters(), linkprobe.cpu_s(tunnel.pid), time.monotonic()
            time.sleep(max(0.0, t0 + seconds - time.monotonic()))
            after, cpu, elapsed = tunnel.counters(), linkprobe.cpu_s(tunnel.pid) - cpu0, time.monotonic() - t_half
        transfer.join()
        row["tcp_goodput_mbit"] = result[0] / 1e6
        if tunnel:
            packets = sum(getattr(after, d).packets - getattr(before, d).packets for d in ("a_to_b", "b_to_a"))
            ip_bits = (after.a_to_b.bytes - before.a_to_b.bytes) * 8
            row.update(ip_rate_mbit=ip_bits / elapsed / 1e6, cpu_s=cpu, cpu_share=cpu / elapsed,
                       cpu_ms_per_1000_packets=1000 * cpu * 1000 / packets if packets else None,
                       cpu_ms_per_mbit=1000 * cpu / (ip_bits / 1e6) if ip_bits else None,
                       dropped_queue=after.a_to_b.dropped_queue, late_p99_le_us_bulk=after.a_to_b.late_p99_le_us)
    finally:
        if tunnel:
            tunnel.close()
        else:
            subprocess.run(["ip", "-n", ns[0], "link", "del", "sbtv-a"], capture_output=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--delays", default="0,0.5,2,12.5,50,150", help="one-way delays in ms")
    ap.add_argument("--rates", default="unlimited,100mbit,20mbit,5mbit,1.6mbit")
    ap.add_argument("--probes", type=int, default=200)
    ap.add_argument("--spin-us", type=float, default=0.0)
    ap.add_argument("--veth", action="store_true")
    args = ap.parse_args()
    with linkprobe.namespaces(f"sbtm{os.getpid() % 10000}") as ns:
        for d in (float(x) for x in args.delays.split(",")):
            for rate in args.rates.split(","):
                row = measure(ns, d, rate, args.probes, args.spin_us / 1e6, args.veth)
                print(json.dumps(row), flush=True)
                fmt = lambda k, f="{:.2f}": f.format(row[k]) if row.get(k) is not None else "-"  # noqa: E731
                print(f"{row['link']:8} delay {d:>6} ms {rate:>9}: RTT {row['rtt_asked_ms']:g} asked, "
                      f"p50 {fmt('rtt_p50_ms')} p99 {fmt('rtt_p99_ms')} ms | TCP {fmt('tcp_goodput_mbit')} Mbit/s "
                      f"(IP {fmt('ip_rate_mbit')}) | CPU {fmt('cpu_share', '{:.0%}')}, "
                      f"{fmt('cpu_ms_per_1000_packets')} ms/1000 pkt, {fmt('cpu_ms_per_mbit', '{:.3f}')} ms/Mbit | "
                      f"late mean {fmt('late_mean_us', '{:.0f}')} us", file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
