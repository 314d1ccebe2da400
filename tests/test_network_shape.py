"""A link shape from plan text to the forwarder's argument: units, one-line errors, and
the contract with stackbench-netshape (the binary accepts every argument we write)."""

from __future__ import annotations

import subprocess

import pytest

from stackbench.upkeep import binaries
from stackbench.errors import PlanError, UsageError
from stackbench.network import tunnel
from stackbench.network.netns import NetworkError
from stackbench.network.shape import Shape, parse_loss, parse_rate, parse_shape, parse_time


def test_text_and_table_say_the_same():
    text = parse_shape("delay=20ms, jitter=2ms, loss=0.1%, rate=5mbit, queue=50ms")
    table = parse_shape({"delay": "20ms", "jitter": "2ms", "loss": "0.1%", "rate": "5mbit", "queue": "50ms"})
    assert text == table == Shape(rate_bit_s=5_000_000, delay_s=0.02, jitter_s=0.002, loss=0.001,
                                  queue_bytes=31_250)


def test_units():
    assert parse_time("500us") == pytest.approx(0.0005)
    assert parse_time("12.5ms") == pytest.approx(0.0125)
    assert parse_time(0) == 0
    assert parse_rate("1.6mbit") == 1_600_000
    assert parse_rate("768kbit") == 768_000
    assert parse_rate("100Mbit/s") == 100_000_000
    assert parse_loss("10%") == pytest.approx(0.1)
    assert parse_loss(0.001) == pytest.approx(0.001)
    assert parse_shape("rate=1mbit,queue=64KiB").queue_bytes == 65_536


def test_default_queue_is_100ms_at_the_rate_and_ten_packets_at_least():
    assert parse_shape("rate=5mbit").effective_queue_bytes() == 62_500
    assert parse_shape("rate=768kbit").effective_queue_bytes() == 15_000
    assert parse_shape("delay=5ms").effective_queue_bytes() is None


def test_argument_is_exact():
    s = parse_shape("delay=12.5ms,jitter=1ms,loss=0.5%,rate=1.6mbit,order=free")
    assert s.argument() == "delay=12500000ns,jitter=1000000ns,loss=0.005,rate=1600000bit,queue=20000B,order=free"
    assert Shape().argument() == "delay=0ns,jitter=0ns,loss=0.0,order=keep"


def test_needs_forwarder_only_for_what_tbf_cannot_do():
    assert not parse_shape("rate=5mbit").needs_forwarder
    assert parse_shape("delay=1ms").needs_forwarder
    assert parse_shape("loss=1%").needs_forwarder


@pytest.mark.parametrize("text, needle", [
    ("delay=20", "needs its unit"),
    ("delay=-5ms", "not a number"),
    ("delay=2m", "not a duration"),
    ("delay=11s", "between 0 and 10s"),
    ("delay=5ms,jitter=6ms", "jitter must not exceed delay"),
    ("loss=100%", "below 100%"),
    ("loss=5x", "not a share"),
    ("rate=5mbps", "write bits"),
    ("rate=10bit", "between 1kbit"),
    ("queue=64kB", "queue needs a rate"),
    ("queue=100ms", "needs a rate"),
    ("rate=5mbit,queue=100B", "at least one packet"),
    ("rate=5mbit,queue=lots", "not a number"),
    ("rate=5mbit,queue=64 bananas", "neither a time"),
    ("delay=1ms,delay=2ms", "twice"),
    ("speed=1mbit", "unknown key"),
    ("delay", "not key=value"),
    ("order=random", "keep or free"),
])
def test_bad_text_is_one_plan_error_line(text, needle):
    with pytest.raises(PlanError) as e:
        parse_shape(text)
    assert needle in e.value.message and "\n" not in e.value.message


def test_errors_go_through_the_callers_fail():
    with pytest.raises(KeyError, match="networks.dsl: rate"):
        parse_shape({"rate": "fast"}, fail=lambda m: KeyError(f"networks.dsl: {m}"))


@pytest.mark.parametrize("text", ["", "delay=150ms,jitter=10ms", "rate=1.6mbit,delay=50ms,loss=0.1%",
                                  "rate=100mbit,queue=2MB,order=free", "delay=500us,rate=768kbit,queue=30ms"])
def test_the_forwarder_accepts_every_argument_we_write(text):
    """Past argument parsing (exit 2) the binary fails on the missing namespace (exit 1)."""
    try:
        binary = tunnel.binary()
    except NetworkError as e:
        pytest.skip(str(e))
    arg = parse_shape(text).argument()
    res = subprocess.run([binary, "--a", "/nonexistent/a:x", "--b", "/nonexistent/b:y", "--a-to-b", arg,
                          "--b-to-a", arg], capture_output=True, text=True, timeout=10)
    assert res.returncode == 1, res.stderr
    assert res.stderr.strip().splitlines() == [
        "stackbench-netshape: error: cannot open the network namespace /nonexistent/a: No such file or directory (os error 2)"]


def test_missing_binary_says_how_to_build_it(monkeypatch, tmp_path):
    monkeypatch.setattr(binaries, "REPO_ROOT", tmp_path)
    monkeypatch.delenv("STACKBENCH_NETSHAPE", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(NetworkError, match="not built") as e:
        tunnel.binary()
    assert "setup.sh" in e.value.hint


def test_device_names_fit_the_kernel():
    assert tunnel.device_names("sb12300") == ("sb12300-a", "sb12300-b")
    a, b = tunnel.device_names("stackbench-12345-c0-1")
    a2, _ = tunnel.device_names("stackbench-12345-c0-2")
    assert len(a) <= 15 and len(b) <= 15 and a != a2
    with pytest.raises(UsageError, match="tunnel name"):
        tunnel.device_names("bad name")
