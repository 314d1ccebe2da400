"""Network profiles: what lies between the visitors and the stack.

`loopback` is the host's loopback (no namespaces, today's default). Every other
profile puts the stack in a network namespace and the load engine in another, joined
by one link: a veth pair when only the rate is shaped (tbf on each end), or a pair of
TUN devices joined by the lab's forwarder (`stackbench-netshape`) when there is delay,
jitter or loss — this kernel has no netem. `down` is server → visitor, `up` visitor →
server. The built-in figures follow WebPageTest's connection profiles where one fits.

A plan picks one (`network = "lan"`) or sweeps several (`network = ["loopback",
"mobile-3g"]`), and may define its own:

    [networks.dsl]
    down = { rate = "8mbit", delay = "25ms", jitter = "2ms", loss = "0.1%" }
    up = { rate = "1mbit", delay = "25ms" }
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable

from stackbench.keys import reject_unknown
from stackbench.network.shape import KEYS as SHAPE_GRAMMAR, Shape, parse_rate, parse_shape, parse_time

LOOPBACK = "loopback"


@dataclass(frozen=True)
class Profile:
    name: str
    down: Shape = Shape()
    up: Shape = Shape()
    about: str = ""

    @property
    def namespaced(self) -> bool:
        return self.name != LOOPBACK

    @property
    def delayed(self) -> bool:
        return self.down.needs_forwarder or self.up.needs_forwarder

    @property
    def emulation(self) -> str:
        """How the link is made, in words the report shows."""
        if not self.namespaced:
            return "the host's loopback"
        if self.delayed:
            return "TUN pair joined by stackbench-netshape (userspace delay/jitter/loss/rate)"
        if self.down.rate_bit_s or self.up.rate_bit_s:
            return "veth pair, rate shaped by tbf on each end"
        return "veth pair, unshaped"

    def asked(self) -> dict:
        return {"down": _shape_dict(self.down), "up": _shape_dict(self.up)}


def _shape_dict(s: Shape) -> dict:
    return {"rate_bit_s": s.rate_bit_s, "delay_ms": s.delay_s * 1e3, "jitter_ms": s.jitter_s * 1e3,
            "loss": s.loss}


def _both(rate: str | None = None, delay: str = "0ms") -> tuple[Shape, Shape]:
    shape = Shape(rate_bit_s=parse_rate(rate) if rate else None, delay_s=parse_time(delay))
    return shape, shape


BUILTIN: dict[str, Profile] = {
    LOOPBACK: Profile(LOOPBACK, about="the host's loopback: no namespaces, no shaping"),
    "veth": Profile("veth", about="own namespaces joined by a veth pair, unshaped"),
    "lan": Profile("lan", *_both("1gbit"), about="1 Gbit/s each way, the veth pair's own RTT"),
    "wan": Profile("wan", Shape(parse_rate("20mbit"), parse_time("20ms")), Shape(parse_rate("5mbit"), parse_time("20ms")),
                   about="broadband: 20/5 Mbit/s, 40 ms RTT"),
    "mobile-3g": Profile("mobile-3g", Shape(parse_rate("1600kbit"), parse_time("150ms")),
                         Shape(parse_rate("768kbit"), parse_time("150ms")),
                         about="3G (WebPageTest): 1.6 Mbit/s down, 768 kbit/s up, 300 ms RTT"),
}

SHAPE_KEYS = set(SHAPE_GRAMMAR)  # rate, delay, jitter, loss, queue, order
PROFILE_KEYS = {"down", "up", *SHAPE_KEYS, "about"}


def _shape(data: Any, where: str, fail: Callable[[str], Exception]) -> Shape:
    """One direction, by the forwarder's own grammar (shape.py), errors naming where."""
    if not isinstance(data, dict):
        raise fail(f"{where} must be a table such as {{ rate = \"5mbit\", delay = \"20ms\" }}")
    reject_unknown(data, SHAPE_KEYS, where, fail)
    return parse_shape(data, lambda message: fail(f"{where}: {message}"))


def define(name: str, data: Any, fail: Callable[[str], Exception]) -> Profile:
    where = f"networks.{name}"
    if name in BUILTIN:
        raise fail(f"{where}: {name!r} is a built-in profile; give yours another name")
    if not isinstance(data, dict):
        raise fail(f"{where} must be a table with down/up shapes or rate/delay/jitter/loss")
    reject_unknown(data, PROFILE_KEYS, where, fail)
    both = {k: v for k, v in data.items() if k in SHAPE_KEYS}
    if both and ("down" in data or "up" in data):
        raise fail(f"{where}: give either rate/delay/jitter/loss (both ways) or down/up tables, not both")
    down = _shape(data.get("down", both), f"{where}.down", fail)
    up = _shape(data.get("up", both), f"{where}.up", fail)
    return Profile(name, down, up, about=str(data.get("about", "defined by the plan")))


def parse(data: dict, fail: Callable[[str], Exception]) -> tuple[list[Profile], dict[str, Profile]]:
    """The plan's `network` (a name or a list of names, default loopback) resolved
    against the built-ins and the plan's own `[networks.NAME]`; and every profile known."""
    own = data.get("networks", {})
    if not isinstance(own, dict):
        raise fail("networks must be tables, e.g. [networks.dsl] with rate/delay/jitter/loss")
    known = dict(BUILTIN)
    for name, body in own.items():
        known[name] = define(name, body, fail)
    asked = data.get("network", LOOPBACK)
    names = [asked] if isinstance(asked, str) else asked
    if not isinstance(names, list) or not names or not all(isinstance(n, str) for n in names):
        raise fail(f"network must be a profile name or a list of them, not {asked!r}")
    if len(set(names)) != len(names):
        raise fail(f"network lists a profile twice: {names}")
    out = []
    for n in names:
        if n not in known:
            close = difflib.get_close_matches(n, known, n=1)
            raise fail(f"network {n!r} is not a profile" + (f" (did you mean {close[0]!r}?)" if close
                                                             else f"; profiles: {', '.join(known)}"))
        out.append(known[n])
    return out, known
