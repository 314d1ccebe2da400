"""Where a stack start's processes live: the stack in a namespace of its own, each
visitor class's load engine in another, one link per class (shaped as its profile
says). The stack listens on the first link's server address; the other classes' client
namespaces route to that address over their own link (the server namespace answers on
any of its links), so every class uses the same URL.

Per-namespace sysctls are set here and nowhere else: clients reuse TIME_WAIT ports and
use the whole port range (a Connection: close load over a veth runs out of ports in
about a second otherwise: docs/servers.md, "Connection: close loads"), and the server's
socket buffers are what the plan asks (`tcp_wmem`, so slow visitors really hold a
worker)."""

from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Iterator, Protocol

from stackbench.planning import target
from stackbench.network import addresses
from stackbench.network.netns import Namespace, ip
from stackbench.network.profiles import Profile
from stackbench.network.tunnel import Tunnel
from stackbench.network.veth import VethLink

CLIENT_SYSCTLS = {"net.ipv4.tcp_tw_reuse": "1", "net.ipv4.ip_local_port_range": "1024 65535"}


class Link(Protocol):
    server_addr: str
    client_addr: str

    def close(self) -> None: ...

    def stats(self) -> dict: ...


@dataclass
class Side:
    """One visitor class's end: its namespace, profile and link."""
    name: str
    profile: Profile
    ns: Namespace
    link: Link


@dataclass
class Topology:
    server: Namespace
    sides: dict[str, Side] = field(default_factory=dict)
    # Every namespace made, from the moment it exists: a failure half-way is undone whole.
    made: list[Namespace] = field(default_factory=list)

    @classmethod
    def build(cls, classes: dict[str, Profile], server_sysctls: dict[str, str] | None = None,
              index: int = 0, cpus: list[int] | None = None) -> "Topology":
        """`classes`: visitor class name -> its profile, the measured class first.
        `index` tells apart several topologies of one lab (device names are per lab)."""
        topo = cls(Namespace.create(f"s{index}"))
        topo.made.append(topo.server)
        try:
            for key, value in (server_sysctls or {}).items():
                topo.server.sysctl(key, value)
            taken: set[str] = set()
            for i, (name, profile) in enumerate(classes.items()):
                ns = Namespace.create(f"c{index}-{i}")
                topo.made.append(ns)
                for key, value in CLIENT_SYSCTLS.items():
                    ns.sysctl(key, value)
                server_addr, client_addr = addresses.pick(taken, start=(os.getpid() * 7 + index * 4 + i) % 16384)
                taken.add(addresses.subnet_of(server_addr))
                link = _open_link(topo.server, ns, server_addr, client_addr, profile,
                                  f"sb{os.getpid() % 100000}{index}{i}", cpus)
                topo.sides[name] = Side(name, profile, ns, link)
                target.claim(server_addr)  # the lab's own: load may go there (target.py)
                if i:  # the stack listens on the first link's address: route to it over this one
                    ip("-n", ns.name, "route", "add", f"{topo.server_addr}/32", "via", server_addr)
        except BaseException:
            topo.close()
            raise
        return topo

    @property
    def first(self) -> Side:
        return next(iter(self.sides.values()))

    @property
    def server_addr(self) -> str:
        return self.first.link.server_addr

    @contextmanager
    def in_server(self) -> Iterator[None]:
        with self.server.entered():
            yield

    @contextmanager
    def in_client(self, name: str | None = None) -> Iterator[None]:
        with (self.sides[name] if name else self.first).ns.entered():
            yield

    def close(self) -> None:
        for side in self.sides.values():
            side.link.close()
            target.release(side.link.server_addr)
        for ns in self.made:
            ns.delete()

    def namespaces(self) -> list[str]:
        return [self.server.name, *[s.ns.name for s in self.sides.values()]]


@dataclass
class TunnelLink:
    """A forwarder's TUN pair seen as a link of the topology: A is the server's end."""
    tunnel: "Tunnel"

    @property
    def server_addr(self) -> str:
        return self.tunnel.addr_a

    @property
    def client_addr(self) -> str:
        return self.tunnel.addr_b

    def close(self) -> None:
        self.tunnel.close()

    def stats(self) -> dict:
        return self.tunnel.stats()


def _open_link(server: Namespace, client: Namespace, server_addr: str, client_addr: str, profile: Profile,
               name: str, cpus: list[int] | None = None) -> Link:
    if profile.delayed:
        return TunnelLink(Tunnel.open(server.name, client.name, server_addr, client_addr, profile.down, profile.up,
                                      name, cpus=cpus))
    return VethLink.open(server, client, server_addr, client_addr, profile.down, profile.up, name)


@contextmanager
def nowhere() -> Iterator[None]:
    """Loopback: everything stays in the lab's own namespace."""
    yield
