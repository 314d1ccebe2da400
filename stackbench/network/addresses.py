"""Addresses for the lab's links: a /30 from a private range that clashes with nothing
the host routes or has (a clash would not leak traffic — the namespaces have routing
tables of their own — but an address that also means something on the host makes
every figure and log line ambiguous)."""

from __future__ import annotations

import ipaddress
import json

from stackbench.network.netns import NetworkError, ip

POOL = ipaddress.ip_network("10.213.0.0/16")


def _in_use() -> list[ipaddress.IPv4Network]:
    nets = []
    for row in json.loads(ip("-j", "-4", "addr", "show", check=False) or "[]"):
        for a in row.get("addr_info", []):
            nets.append(ipaddress.ip_network(f"{a['local']}/{a['prefixlen']}", strict=False))
    for row in json.loads(ip("-j", "-4", "route", "show", "table", "all", check=False) or "[]"):
        dst = row.get("dst")
        if dst and dst != "default":
            try:
                nets.append(ipaddress.ip_network(dst if "/" in dst else f"{dst}/32", strict=False))
            except ValueError:
                continue
    return nets


def pick(taken: set[str], start: int = 0) -> tuple[str, str]:
    """(server address, client address) of a free /30: not routed on the host and not
    in `taken` (links this lab already made). `start` spreads labs over the pool."""
    used = _in_use()
    subnets = list(POOL.subnets(new_prefix=30))
    for i in range(len(subnets)):
        net = subnets[(start + i) % len(subnets)]
        if str(net) in taken or any(net.overlaps(u) for u in used):
            continue
        hosts = list(net.hosts())
        return str(hosts[0]), str(hosts[1])
    raise NetworkError(f"no free /30 in {POOL} for the lab's link", hint="remove unused routes in that range")


def subnet_of(address: str) -> str:
    return str(ipaddress.ip_network(f"{address}/30", strict=False))
