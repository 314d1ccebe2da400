"""Ports on 127.0.0.1: pick a free one, or prove a chosen one is free."""

from __future__ import annotations

import socket

from stackbench.errors import PortInUse


def free_port() -> int:
    # The kernel picks a port that is free now; another process could take it before the
    # server binds, in which case the server's start fails with a clear "in use" error.
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def ensure_free(port: int) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            raise PortInUse(port) from None
