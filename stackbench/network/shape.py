"""One direction of an emulated link: rate, delay, jitter, loss, queue — checked from the
text a user writes ("5mbit", "20ms", "0.1%") and written as the argument the userspace
forwarder `stackbench-netshape` takes (`--a-to-b` / `--b-to-a`).

The grammar is the forwarder's own (netshape/src/shape.rs), so a plan's text, this
class and the binary agree; the forwarder checks again, this side gives the plan its
error line early. Rates are decimal bits per second as tc writes them ("5mbit" =
5,000,000 bit/s) and count IP bytes (the TUN link has no Ethernet header).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from stackbench.errors import PlanError

Fail = Callable[[str], Exception]

KEYS = ("rate", "delay", "jitter", "loss", "queue", "order")
FULL_PACKET = 1500  # bytes: the TUN link's MTU, the queue's floor
DEFAULT_QUEUE_S = 0.1  # a router's "100 ms of buffer" at the rate …
MIN_DEFAULT_QUEUE_PACKETS = 10  # … but never fewer than 10 full packets (13 at 1.6 Mbit/s)
MAX_DELAY_S = 10.0
MIN_RATE, MAX_RATE = 1_000, 100_000_000_000
MAX_QUEUE_BYTES = 1 << 30

_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([A-Za-z%/]*)\s*$")
_TIME_UNITS = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
_RATE_UNITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
_BYTE_UNITS = {"B": 1, "kB": 10**3, "KB": 10**3, "MB": 10**6, "KiB": 2**10, "MiB": 2**20}


@dataclass(frozen=True)
class Shape:
    """One direction. `rate_bit_s` None: no rate limit (and no queue); `queue_bytes` None:
    the default, 100 ms at the rate and at least 10 full packets. `reorder`: jitter may
    let a packet overtake the one ahead of it (off: TCP reads reordering as loss)."""

    rate_bit_s: int | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0
    queue_bytes: int | None = None
    reorder: bool = False

    def __post_init__(self) -> None:
        problem = self._problem()
        if problem:
            raise ValueError(problem)

    def _problem(self) -> str | None:
        if not 0 <= self.delay_s <= MAX_DELAY_S:
            return f"delay must be between 0 and {MAX_DELAY_S:g}s"
        if not 0 <= self.jitter_s <= self.delay_s:
            # A delay below zero is impossible, and clamping it would skew the distribution.
            return "jitter must not exceed delay (the delay is uniform in delay ± jitter)"
        if not 0 <= self.loss < 1:
            return "loss must be at least 0 and below 100%"
        if self.rate_bit_s is None:
            if self.queue_bytes is not None:
                return "queue needs a rate (packets only queue behind a rate limit)"
        elif not MIN_RATE <= self.rate_bit_s <= MAX_RATE:
            return "rate must be between 1kbit and 100gbit"
        if self.queue_bytes is not None and not FULL_PACKET <= self.queue_bytes <= MAX_QUEUE_BYTES:
            return f"queue must hold at least one packet ({FULL_PACKET}B) and at most 1GiB"
        return None

    @property
    def needs_forwarder(self) -> bool:
        """Delay, jitter, loss, reordering or a queue of a given size: things the lab's tbf
        does not do (a rate alone is a veth + tbf, whose queue the lab sizes itself)."""
        return bool(self.delay_s or self.jitter_s or self.loss or self.reorder or self.queue_bytes is not None)

    def effective_queue_bytes(self) -> int | None:
        if self.rate_bit_s is None:
            return None
        if self.queue_bytes is not None:
            return self.queue_bytes
        return max(int(self.rate_bit_s * DEFAULT_QUEUE_S / 8), MIN_DEFAULT_QUEUE_PACKETS * FULL_PACKET)

    def argument(self) -> str:
        """The forwarder's per-direction text, in exact units (ns, bit/s, bytes)."""
        parts = [f"delay={round(self.delay_s * 1e9)}ns", f"jitter={round(self.jitter_s * 1e9)}ns",
                 f"loss={self.loss!r}"]
        if self.rate_bit_s is not None:
            parts.append(f"rate={self.rate_bit_s}bit")
            parts.append(f"queue={self.effective_queue_bytes()}B")
        parts.append("order=free" if self.reorder else "order=keep")
        return ",".join(parts)


def parse_shape(value: str | dict[str, Any], fail: Fail = PlanError) -> Shape:
    """A plan's shape — "delay=20ms,rate=5mbit" or a table { delay = "20ms", rate = "5mbit" }
    — into a Shape; anything wrong raises fail(one line naming the key)."""
    if isinstance(value, str):
        table: dict[str, Any] = {}
        for item in (s.strip() for s in value.split(",")):
            if not item:
                continue
            key, eq, text = item.partition("=")
            if not eq:
                raise fail(f"{item!r} is not key=value (e.g. delay=20ms)")
            if key.strip() in table:
                raise fail(f"{key.strip()} is given twice")
            table[key.strip()] = text.strip()
    elif isinstance(value, dict):
        table = value
    else:
        raise fail(f'a link shape is text such as "delay=20ms,rate=5mbit" or a table, not {value!r}')
    unknown = sorted(set(table) - set(KEYS))
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} in a link shape (keys: {', '.join(KEYS)})")
    parsed: dict[str, Any] = {}
    for key, parse in (("rate", parse_rate), ("delay", parse_time), ("jitter", parse_time), ("loss", parse_loss),
                       ("order", _parse_order)):
        if key in table:
            try:
                parsed[key] = parse(table[key])
            except ValueError as e:
                raise fail(f"{key}: {e}") from None
    try:
        queue = parse_queue(table["queue"], parsed.get("rate")) if "queue" in table else None
    except ValueError as e:
        raise fail(f"queue: {e}") from None
    try:
        return Shape(rate_bit_s=parsed.get("rate"), delay_s=parsed.get("delay", 0.0),
                     jitter_s=parsed.get("jitter", 0.0), loss=parsed.get("loss", 0.0), queue_bytes=queue,
                     reorder=parsed.get("order", False))
    except ValueError as e:  # the values are fine alone but not together (jitter > delay, …)
        raise fail(str(e)) from None


def _parse_order(text: Any) -> bool:
    """order = "keep" (a packet never overtakes the one ahead) or "free" -> reorder?"""
    if text not in ("keep", "free"):
        raise ValueError(f"takes keep or free, not {text!r}")
    return text == "free"


def _number(text: Any, example: str) -> tuple[float, str]:
    if isinstance(text, bool) or not isinstance(text, (str, int, float)):
        raise ValueError(f"takes text such as {example}, not {text!r}")
    m = _NUMBER.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a number with a unit (e.g. {example})")
    return float(m.group(1)), m.group(2)


def parse_time(text: Any) -> float:
    """"20ms", "500us", "1.5s" -> seconds; 0 needs no unit, any other number does (is "20"
    20 ms or 20 s?)."""
    value, unit = _number(text, '"20ms"')
    if not unit:
        if value == 0:
            return 0.0
        raise ValueError(f"{text!r} needs its unit (e.g. \"{text}ms\")")
    if unit not in _TIME_UNITS:
        raise ValueError(f"{text!r} is not a duration (e.g. 20ms, 500us, 1s)")
    return value * _TIME_UNITS[unit]


def parse_rate(text: Any) -> int:
    """"5mbit", "100kbit", "1.6mbit", "2500000bit" -> bit/s. "bps" forms are refused: tc
    reads "kbps" as kilobytes per second, most people as kilobits."""
    value, unit = _number(text, '"5mbit"')
    factor = _RATE_UNITS.get(unit.lower().removesuffix("/s"))
    if factor is None:
        raise ValueError(f"{text!r} is not a rate (write bits: e.g. 5mbit, 100kbit, 1gbit)")
    return round(value * factor)


def parse_loss(text: Any) -> float:
    """"0.1%" or 0.001 -> a probability in [0, 1)."""
    value, unit = _number(text, '"0.1%"')
    if unit not in ("", "%"):
        raise ValueError(f"{text!r} is not a share (e.g. 0.1% or 0.001)")
    p = value / 100 if unit == "%" else value
    if not 0 <= p < 1:
        raise ValueError(f"{text!r} must be at least 0 and below 100%")
    return p


def parse_queue(text: Any, rate_bit_s: int | None) -> int:
    """A time at the rate ("100ms") or bytes ("64kB", "150000B", "64KiB") -> bytes."""
    value, unit = _number(text, '"100ms" or "64kB"')
    if unit in _BYTE_UNITS:
        return round(value * _BYTE_UNITS[unit])
    try:
        seconds = parse_time(text)
    except ValueError:
        raise ValueError(f"{text!r} is neither a time at the rate (100ms) nor bytes (64kB, 150000B)") from None
    if rate_bit_s is None:
        raise ValueError("needs a rate (packets only queue behind a rate limit)")
    return int(rate_bit_s * seconds / 8)
