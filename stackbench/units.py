"""Parsing and printing durations and sizes: one place, one convention."""

from __future__ import annotations

import re

_DURATION = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(us|ms|s|m|h)?\s*$")
_FACTOR = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, None: 1.0}


def parse_duration_s(text: str | int | float) -> float:
    """'2s', '500ms', '1.5m', 3 -> seconds. Raises ValueError on anything else."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, (int, float)):
        if text < 0:
            raise ValueError(f"negative duration: {text!r}")
        return float(text)
    m = _DURATION.match(str(text))
    if not m:
        raise ValueError(f"not a duration: {text!r} (use e.g. 2s, 500ms, 1m)")
    return float(m.group(1)) * _FACTOR[m.group(2)]


def parse_share(value: str | int | float) -> float:
    """0.03 or "3%" -> 0.03, strictly between 0 and 1. Raises ValueError otherwise."""
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
        except ValueError:
            raise ValueError(f"not a share: {value!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        raise ValueError(f"not a share between 0 and 1: {value!r}")
    return float(value)


def engine_duration(seconds: float) -> str:
    """A duration as the load engine's CLI takes it (milliseconds, exact)."""
    return f"{round(seconds * 1000)}ms"


def format_num(value: float | None, scale: float = 1, digits: int = 0) -> str:
    """A table cell: value × scale with thousands separators; '-' when not computable."""
    return "-" if value is None else f"{value * scale:,.{digits}f}"


def format_rate(per_s: float | None) -> str:
    """A throughput: whole numbers from 100/s up; one decimal below (a WordPress page at
    7.4/s is not "7"); '-' when not computable."""
    if per_s is None:
        return "-"
    return f"{per_s:,.0f}" if per_s >= 100 else f"{per_s:,.1f}"


def format_us(us: float | None) -> str:
    """Microseconds for a table cell, in ms with 2 decimals; '-' when not computable."""
    if us is None:
        return "-"
    return f"{us / 1000:.2f}"


def format_cpus(cpus: float) -> str:
    """A machine's CPUs: "0.5 CPU", "1 CPU", "1.5 CPUs", "2 CPUs" (a share of one core
    is not several CPUs)."""
    return f"{cpus:g} CPU{'s' if cpus > 1 else ''}"


MiB = 2**20  # memory is shown in MiB (2**20 bytes) everywhere, and labelled so
