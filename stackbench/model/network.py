"""The network profiles a run's visitors were on, as calibrated (network/calibrate.py
measures each once a run; the store keeps them as runs.network_json), read back once
(store/rows.py) as types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class Direction:
    """One direction of a link as asked (network/profiles.py's Profile.asked())."""

    rate_bit_s: float | None = None  # None: unshaped
    delay_ms: float = 0.0  # one way
    jitter_ms: float = 0.0
    loss: float = 0.0  # a share

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Direction:
        return cls(d.get("rate_bit_s"), d.get("delay_ms") or 0.0, d.get("jitter_ms") or 0.0, d.get("loss") or 0.0)


@dataclass(frozen=True)
class Asked:
    down: Direction = field(default_factory=Direction)
    up: Direction = field(default_factory=Direction)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Asked:
        return cls(Direction.from_dict(d.get("down") or {}), Direction.from_dict(d.get("up") or {}))


@dataclass(frozen=True)
class Rtt:
    """UDP echoes across the link (ms): how many were sent, answered, and their p50, p99."""

    probes: int = 0
    answered: int = 0
    p50: float | None = None
    p99: float | None = None


@dataclass(frozen=True)
class Calibration:
    """One profile: how it was made, what it asked, what was measured across it."""

    emulation: str
    asked: Asked
    rtt: Rtt
    down_bit_s: float | None = None  # a transfer's rate, server to visitors
    up_bit_s: float | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Calibration:
        m = d.get("measured") or {}
        rtt = m.get("rtt_ms") or {}
        return cls(str(d.get("emulation")), Asked.from_dict(d.get("asked") or {}),
                   Rtt(rtt.get("probes") or 0, rtt.get("answered") or 0, rtt.get("p50"), rtt.get("p99")),
                   m.get("down_bit_s"), m.get("up_bit_s"))
