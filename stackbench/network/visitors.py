"""Visitor classes: visitors that load the stack *beside* the measured ones — 50 slow
phones holding connections while 16 fast visitors are measured. Each class runs its own
load engine, in a client namespace of its own (its own network profile), for the same
window as the measured load; its figures are stored with the cell (`classes_json`), the
cell's own figures stay the measured visitors'.

    [visitors.slow]
    connections = 50
    network = "mobile-3g"      # default: the cell's network
    read_rate = "20kB"         # each connection reads its responses at most this fast
    rcvbuf = "16k"             # SO_RCVBUF before connect (a small window, like a phone's)
    keepalive = true

    background = ["none", "slow"]   # each cell without, then with, the slow visitors

A slow reader only holds a server if the server cannot park the whole response in its
socket buffers (docs/servers.md, "Slow clients"): `server_tcp_wmem` caps them in the
server's namespace, e.g. "4096 16384 65536".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable

from stackbench.keys import reject_unknown
from stackbench.network.profiles import Profile

NONE = "none"
KEYS = {"connections", "network", "read_rate", "rcvbuf", "keepalive"}
_SIZE = re.compile(r"^\s*([0-9.]+)\s*([kKmM]?)(i?[bB])?(/s)?\s*$")
_SCALE = {"": 1, "k": 1000, "m": 1_000_000}


@dataclass(frozen=True)
class VisitorClass:
    name: str
    connections: int
    network: str | None = None  # a profile name; None: the cell's
    read_rate: int | None = None  # bytes/s per connection
    rcvbuf: int | None = None
    keepalive: bool = True

    def profile(self, profiles: dict[str, Profile], cell_network: str) -> Profile:
        return profiles[self.network or cell_network]


def size(text: Any, what: str) -> int:
    m = _SIZE.match(str(text))
    if not m or isinstance(text, bool):
        raise ValueError(f"{what} {text!r} is not a size such as \"20kB\" or \"16k\"")
    unit = m.group(2).lower()
    scale = (1024 if unit == "k" else 1024 * 1024) if (m.group(3) or "").lower() == "ib" else _SCALE[unit]
    value = int(float(m.group(1)) * scale)
    if value < 1:
        raise ValueError(f"{what} must be at least 1 byte")
    return value


def parse(data: dict, known_networks: set[str], fail: Callable[[str], Exception]) -> tuple[dict[str, VisitorClass], list[str]]:
    """The plan's `[visitors.NAME]` classes and its `background` list (default: none)."""
    raw = data.get("visitors", {})
    if not isinstance(raw, dict):
        raise fail("visitors must be tables, e.g. [visitors.slow] with connections = 50")
    classes: dict[str, VisitorClass] = {}
    for name, body in raw.items():
        where = f"visitors.{name}"
        if name in (NONE, "server") or "+" in name:
            raise fail(f"{where}: {name!r} cannot name a visitor class")
        if not isinstance(body, dict):
            raise fail(f"{where} must be a table with connections = N")
        reject_unknown(body, KEYS, where, fail)
        conns = body.get("connections")
        if not isinstance(conns, int) or isinstance(conns, bool) or not 1 <= conns <= 10000:
            raise fail(f"{where}.connections must be a whole number from 1 to 10000, not {conns!r}")
        net = body.get("network")
        if net is not None and net not in known_networks:
            raise fail(f"{where}.network {net!r} is not a profile; profiles: {', '.join(sorted(known_networks))}")
        keepalive = body.get("keepalive", True)
        if not isinstance(keepalive, bool):
            raise fail(f"{where}.keepalive takes true or false, not {keepalive!r}")
        try:
            read_rate = size(body["read_rate"], "read_rate") if "read_rate" in body else None
            rcvbuf = size(body["rcvbuf"], "rcvbuf") if "rcvbuf" in body else None
        except ValueError as e:
            raise fail(f"{where}: {e}") from None
        classes[name] = VisitorClass(name, conns, net, read_rate, rcvbuf, keepalive)
    background = data.get("background", [NONE])
    if isinstance(background, str):
        background = [background]
    if not isinstance(background, list) or not background or not all(isinstance(b, str) for b in background):
        raise fail(f"background must be a list of visitor classes (or \"none\"), not {background!r}")
    for entry in background:
        for name in entry.split("+"):
            if name != NONE and name not in classes:
                raise fail(f"background {entry!r}: no [visitors.{name}] table" +
                           (f"; classes: {', '.join(classes)}" if classes else ""))
    if classes and background == [NONE]:
        raise fail("[visitors] classes are defined but background does not use them: add e.g. "
                   f"background = [\"none\", \"{next(iter(classes))}\"]")
    return classes, background


def members(background: str) -> list[str]:
    return [] if background == NONE else background.split("+")
