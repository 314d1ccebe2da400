"""The network a run's visitors were on, in words: each profile, how it was made, what
it asked and what calibration measured. Shared by the terminal and the HTML report
(render only: the figures come from the store's runs.network_json)."""

from __future__ import annotations

from typing import Mapping, Sequence

from stackbench.model.network import Asked, Calibration, Direction, Rtt


def rate(bit_s: float | None) -> str:
    if not bit_s:
        return "unshaped"
    for scale, unit in ((1e9, "Gbit/s"), (1e6, "Mbit/s"), (1e3, "kbit/s")):
        if bit_s >= scale:
            return f"{bit_s / scale:,.3g} {unit}"
    return f"{bit_s:,.0f} bit/s"


def _direction(shape: Direction) -> str:
    parts = [rate(shape.rate_bit_s)]
    if shape.delay_ms:
        parts.append(f"{shape.delay_ms:g} ms one way")
    if shape.jitter_ms:
        parts.append(f"± {shape.jitter_ms:g} ms")
    if shape.loss:
        parts.append(f"{shape.loss:.2%} loss")
    return ", ".join(parts)


def asked(a: Asked) -> str:
    down, up = _direction(a.down), _direction(a.up)
    return f"{down} each way" if down == up else f"down {down}; up {up}"


def measured(cal: Calibration) -> str:
    rtt: Rtt = cal.rtt
    text = (f"RTT p50 {rtt.p50:.3g} ms (p99 {rtt.p99:.3g}, {rtt.answered}/{rtt.probes} probes)"
            if rtt.answered else "no RTT probe answered")
    return f"{text}, down {rate(cal.down_bit_s)}, up {rate(cal.up_bit_s)}"


def lines(profiles: Sequence[str], network: Mapping[str, Calibration] | None) -> list[str]:
    """One line per profile the run used (CheckedPlan.profiles); loopback alone is one
    plain line."""
    out = []
    for name in profiles:
        if name == "loopback":
            out.append("loopback: server and load engine on one machine, the host's loopback")
            continue
        cal = (network or {}).get(name)
        if cal is None:
            out.append(f"{name}: not calibrated (no cell of the run reached it)")
            continue
        out.append(f"{name}: {cal.emulation}; asked {asked(cal.asked)}; measured {measured(cal)}")
    return out
