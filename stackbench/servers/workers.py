"""The servers' unprivileged workers: when the lab runs as root, every front's workers
and PHP run as www-data, and they must reach what they serve — the docroot (a run
directory's, or an application's own tree) and every directory above it."""

from __future__ import annotations

from pathlib import Path

WORKER_USER = "www-data"


def as_worker(user: str | None, argv: list[str]) -> list[str]:
    """`argv` started as `user` (the lab runs as root; None: as the lab's own user), for a
    server that never drops privileges itself (Jetty). setpriv sets the parent-death
    signal again after the switch: a process that changes its user loses it, and a lab
    killed with -9 would then leave the server running (workloads/mariadb.py does the same)."""
    if not user:
        return argv
    return ["setpriv", "--reuid", user, "--regid", user, "--init-groups", "--pdeathsig", "TERM", *argv]


def closed_parent(path: Path) -> Path | None:
    """The first of `path` and its parents that other users (the servers' workers, as
    www-data) cannot enter, or None: then the servers would answer 403/502 and the
    cause would be far from obvious."""
    return next((p for p in [path, *path.parents] if not p.stat().st_mode & 0o001), None)
