"""One direction of a link: rate, one-way delay, jitter, loss. (Placeholder until the
forwarder's own module lands: same interface.)"""

from __future__ import annotations

import re
from dataclasses import dataclass

_RATE = re.compile(r"^\s*([0-9.]+)\s*(bit|kbit|mbit|gbit)\s*$", re.I)
_TIME = re.compile(r"^\s*([0-9.]+)\s*(us|ms|s)\s*$")
_SCALE = {"bit": 1, "kbit": 1_000, "mbit": 1_000_000, "gbit": 1_000_000_000}
_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0}


@dataclass(frozen=True)
class Shape:
    rate_bit_s: int | None = None
    delay_s: float = 0.0
    jitter_s: float = 0.0
    loss: float = 0.0

    @property
    def needs_forwarder(self) -> bool:
        return bool(self.delay_s or self.jitter_s or self.loss)


def parse_rate(text: str) -> int:
    m = _RATE.match(str(text))
    if not m:
        raise ValueError(f"rate {text!r} is not a rate such as \"5mbit\" or \"768kbit\"")
    return int(float(m.group(1)) * _SCALE[m.group(2).lower()])


def parse_time(text: str) -> float:
    m = _TIME.match(str(text))
    if not m:
        raise ValueError(f"{text!r} is not a time such as \"20ms\"")
    return float(m.group(1)) * _SECONDS[m.group(2)]


def parse_loss(text: str) -> float:
    t = str(text).strip()
    if not t.endswith("%"):
        raise ValueError(f"loss {text!r} must be a percentage such as \"0.5%\"")
    value = float(t[:-1]) / 100
    if not 0 <= value < 1:
        raise ValueError(f"loss {text!r} must be from 0% to below 100%")
    return value
