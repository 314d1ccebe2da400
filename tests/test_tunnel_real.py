"""The shaped link for real: two namespaces (named sbt…, removed afterwards whatever
happens), a Tunnel between them, and what goes through it measured from the outside —
round trips, a TCP transfer's rate, UDP losses — against what was asked. Needs root,
iproute2 and the forwarder built (./scripts/setup.sh)."""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import time

import pytest

from stackbench.errors import UsageError
from stackbench.network import tunnel as tunnel_mod
from stackbench.network.shape import Shape, parse_shape
from stackbench.network.tunnel import Tunnel
from stackbench.upkeep.supervise import live_pids_in_group
from tests import linkprobe

# Seconds each (simulations, the real engine, namespaces): left out of `make check`.
pytestmark = pytest.mark.slow

A_ADDR, B_ADDR = "10.231.7.1", "10.231.7.2"
# TCP payload of a full-size packet: 1500 − 20 (IP) − 20 (TCP) − 12 (timestamps).
PAYLOAD_SHARE = 1448 / 1500


def _require() -> None:
    problem = None
    if os.geteuid() != 0:
        problem = "needs root (network namespaces, TUN devices)"
    else:
        try:
            tunnel_mod.binary()
        except Exception as e:  # noqa: BLE001 - the message is the reason
            problem = str(e)
    if problem:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)


@pytest.fixture
def ns():
    _require()
    with linkprobe.namespaces(f"sbt{os.getpid() % 100000}") as names:
        yield names


def _open(ns, a_to_b: str, b_to_a: str | None = None, **kw) -> Tunnel:
    down = parse_shape(a_to_b)
    up = parse_shape(b_to_a) if b_to_a is not None else down
    return Tunnel.open(ns[0], ns[1], A_ADDR, B_ADDR, down, up, f"sbt{os.getpid() % 100000}", seed=1, **kw)


def _devices(ns: str) -> str:
    return subprocess.run(["ip", "-n", ns, "-o", "link", "show"], capture_output=True, text=True).stdout


def test_delay_20ms_each_way_gives_a_40ms_round_trip(ns):
    with _open(ns, "delay=20ms") as t:
        rtts = linkprobe.rtts_ms(ns[0], ns[1], A_ADDR, B_ADDR, probes=100)
        counters = t.counters()
    assert len(rtts) == 100
    median = statistics.median(rtts)
    assert abs(median - 40) <= 40 * 0.10 + 0.5, f"median RTT {median:.2f} ms for 40 ms asked"
    assert min(rtts) >= 40, "never faster than asked"
    # The forwarder's own timing error, counted per packet, stays far below the delay.
    assert counters.a_to_b.late_mean_us is not None and counters.a_to_b.late_mean_us < 1000


def test_rate_5mbit_limits_a_bulk_tcp_transfer(ns):
    with _open(ns, "rate=5mbit,delay=5ms") as t:
        goodput = linkprobe.tcp_bit_s(ns[0], ns[1], B_ADDR, seconds=4)
        counters = t.counters()
    expected = 5e6 * PAYLOAD_SHARE
    assert abs(goodput - expected) <= 0.10 * expected, f"{goodput / 1e6:.2f} Mbit/s for 5 Mbit/s asked"
    # The queue held at most what it was sized for: 100 ms at 5 Mbit/s.
    assert counters.a_to_b.max_queue_bytes <= 62_500


def test_loss_10_percent_is_binomial_and_counted(ns):
    count = 2000
    with _open(ns, "loss=10%", "") as t:
        before = t.counters().a_to_b
        delivered = linkprobe.udp_delivered(ns[0], ns[1], A_ADDR, B_ADDR, count, gap_s=0.0005)
        after = t.counters().a_to_b
    lost = count - delivered
    sd = (count * 0.1 * 0.9) ** 0.5
    assert abs(lost - count * 0.1) <= 4 * sd, f"{lost} of {count} lost for 10 % asked"
    # Every loss is the forwarder's, and it says so (a few other packets may have crossed).
    assert lost <= after.dropped_loss - before.dropped_loss <= lost + 5


def test_close_leaves_no_device_and_no_process(ns):
    t = _open(ns, "delay=1ms")
    pid = t.pid
    assert t.dev_a in _devices(ns[0]) and t.dev_b in _devices(ns[1])
    summary = t.close()
    assert summary is not None and summary.a_to_b.packets >= 1  # the readiness probe crossed
    assert t.dev_a not in _devices(ns[0]) and t.dev_b not in _devices(ns[1])
    assert not live_pids_in_group(pid)
    assert not os.path.exists(f"/proc/{pid}") or "Z" in open(f"/proc/{pid}/stat").read().split(")")[1][:3]
    assert t.close() is summary  # twice is harmless


def test_a_killed_forwarder_takes_its_devices_along(ns):
    t = _open(ns, "")
    os.kill(t.pid, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while t.dev_a in _devices(ns[0]) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert t.dev_a not in _devices(ns[0]) and t.dev_b not in _devices(ns[1])
    assert t.close() is None  # killed: no summary, and close() does not fail


def test_a_persistent_device_made_before_is_used_and_removed(ns):
    dev_a, _ = tunnel_mod.device_names(f"sbt{os.getpid() % 100000}")
    subprocess.run(["ip", "-n", ns[0], "tuntap", "add", "dev", dev_a, "mode", "tun"], check=True)
    with _open(ns, "delay=2ms") as t:
        assert len(linkprobe.rtts_ms(ns[0], ns[1], A_ADDR, B_ADDR, probes=10)) == 10
    assert t.dev_a not in _devices(ns[0])


def test_a_missing_namespace_is_one_clear_error(ns):
    with pytest.raises(UsageError, match="does not exist"):
        Tunnel.open(ns[0], "sbt-no-such-ns", A_ADDR, B_ADDR, Shape(), Shape(), "sbtx")


def test_stats_every_interval_then_a_summary_on_sigterm(ns):
    """The binary alone: JSON lines on stderr at the asked interval, a summary and exit 0
    on SIGTERM (the lab's stop), the devices it made gone with it."""
    argv = [tunnel_mod.binary(), "--a", f"/run/netns/{ns[0]}:sbtst-a", "--b", f"/run/netns/{ns[1]}:sbtst-b",
            "--a-to-b", "delay=1ms", "--stats-every", "100ms"]
    proc = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(0.45)
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=5)
    assert proc.returncode == 0, err
    events = [json.loads(line) for line in err.splitlines()]
    kinds = [e["event"] for e in events]
    assert kinds[0] == "attached" and kinds[-1] == "summary" and kinds.count("stats") >= 3, kinds
    assert [e["seq"] for e in events[1:]] == list(range(1, len(events)))
    assert events[-1]["exit"] == "signal" and events[-1]["a_to_b"]["packets"] == 0
    assert "sbtst-a" not in _devices(ns[0])


def test_jitter_spreads_uniformly_within_delay_plus_minus_jitter(ns):
    # Probes 20 ms apart, more than twice the jitter: keeping the order never holds one back.
    with _open(ns, "delay=20ms,jitter=5ms", "delay=20ms"):
        rtts = linkprobe.rtts_ms(ns[0], ns[1], A_ADDR, B_ADDR, probes=150, gap_s=0.02)
    assert min(rtts) >= 35, "never below delay − jitter"
    assert abs(statistics.median(rtts) - 40) <= 1.5
    # Uniform on ±5 ms: sd 5/√3 = 2.89 ms.
    assert 2.0 <= statistics.pstdev(rtts) <= 3.8, statistics.pstdev(rtts)
