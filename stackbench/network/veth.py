"""A veth pair between two of the lab's namespaces, its rate shaped by tbf on each end
(server end: what visitors download; client end: what they upload).

tbf's burst and queue matter (docs/servers.md, "Network shaping"): a burst too large
lets a whole response through at line speed, a queue too small drops packets and
collapses TCP's window. The burst is 2 ms worth of bytes (at least two full frames, and
at least what the kernel's timer can refill between ticks at HZ=250: 4 ms), the queue
50 ms worth (at least 64 KiB).
Both ends are made inside the namespaces in one command, so no device ever appears in
the host's namespace."""

from __future__ import annotations

from dataclasses import dataclass

from stackbench.network.netns import Namespace, ip, tc
from stackbench.network.shape import Shape

MTU_FRAME = 1514


def tbf_args(rate_bit_s: int) -> list[str]:
    per_s = rate_bit_s / 8
    burst = int(max(per_s * 0.004, 2 * MTU_FRAME))
    limit = int(max(per_s * 0.050, 64 * 1024, burst + MTU_FRAME))
    return ["tbf", "rate", f"{rate_bit_s}bit", "burst", str(burst), "limit", str(limit)]


@dataclass
class VethLink:
    server: Namespace
    client: Namespace
    server_dev: str
    client_dev: str
    server_addr: str
    client_addr: str

    @classmethod
    def open(cls, server: Namespace, client: Namespace, server_addr: str, client_addr: str,
             down: Shape, up: Shape, name: str) -> "VethLink":
        link = cls(server, client, f"{name}s", f"{name}c", server_addr, client_addr)
        ip("link", "add", link.server_dev, "netns", server.name, "type", "veth",
           "peer", "name", link.client_dev, "netns", client.name)
        for ns, dev, addr, shape in ((server, link.server_dev, server_addr, down),
                                     (client, link.client_dev, client_addr, up)):
            ip("-n", ns.name, "addr", "add", f"{addr}/30", "dev", dev)
            ip("-n", ns.name, "link", "set", dev, "up")
            if shape.rate_bit_s:
                tc("-n", ns.name, "qdisc", "replace", "dev", dev, "root", *tbf_args(shape.rate_bit_s))
        return link

    def close(self) -> None:
        # Deleting one end deletes the pair; gone already when its namespace was deleted.
        ip("-n", self.server.name, "link", "delete", self.server_dev, check=False)

    def stats(self) -> dict:
        return {}
