"""Ports on the lab's listen address: pick a free one, or prove a chosen one is free."""

from __future__ import annotations

import socket

from stackbench.errors import PortInUse

LOOPBACK = "127.0.0.1"


def free_port(host: str = LOOPBACK) -> int:
    # The kernel picks a port that is free now; another process could take it before the
    # server binds, in which case the server's start fails with a clear "in use" error.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def ensure_free(port: int, host: str = LOOPBACK) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((host, port))
        except OSError:
            raise PortInUse(port, host) from None
