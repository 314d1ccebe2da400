"""Where the lab may send load: loopback, or the addresses of its own network namespaces
— never someone else's server by accident. A load generator pointed at the wrong host is
a denial-of-service tool; the engine has the same guard of its own (loadgen/src/target.rs),
and is given `--allow-remote` only for targets that passed this one.

`--allow-remote-target` lifts the guard for a user who means it; the plan must then bound
every load in time (`duration`, not `requests`), so that a mistake costs seconds.

The lab's network namespaces `claim` the addresses they put servers on and `release`
them when they are torn down.
"""

from __future__ import annotations

import ipaddress

from stackbench.errors import UsageError

_own: set[str] = set()


def claim(address: str) -> None:
    """An address of the lab's own (a namespace it made): load may go there."""
    _own.add(address)


def release(address: str) -> None:
    _own.discard(address)


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False  # a name other than localhost: never resolved here


def check(host: str, allow_remote: bool = False) -> None:
    """Raise unless `host` is loopback, one of the lab's own addresses, or the user
    allowed remote targets."""
    if is_loopback(host) or host in _own or allow_remote:
        return
    raise UsageError(f"refusing to send load to {host}: it is neither loopback nor one of the lab's own "
                     "network namespaces",
                     hint="to load a server that is not the lab's, pass --allow-remote-target "
                          "(and bound the plan in time with duration)")


def check_bounded(duration_s: float | None, allow_remote: bool) -> None:
    """--allow-remote-target only with loads bounded in time."""
    if allow_remote and duration_s is None:
        raise UsageError("--allow-remote-target needs a plan whose loads are bounded in time: "
                         "it gives a request count (requests) instead of a duration",
                         hint='set duration (e.g. duration = "10s") and leave requests out')
