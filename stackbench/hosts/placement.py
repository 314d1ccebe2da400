"""Where the stack and its database run, connected for a run or a dry run: the server's
host (hosts/server.py) and the database's (hosts/remote_db.py) when the plan names them,
and the lab that uses them. One place for the order: the server's host first (the
database's agent must know which machine will connect to it), closed the other way round
after — a stack still running there must not lose its database first.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator

from stackbench.hosts.remote_db import check_same_site, open_database, with_database
from stackbench.hosts.server import ServerSession
from stackbench.upkeep.pinning import Pinning


@dataclass
class Placed:
    lab: object  # runner.Lab, with the other hosts' parts in it
    pins: Pinning  # the run's, the stack's cores on its host
    server: ServerSession | None = None
    db: ServerSession | None = None

    def facts(self) -> list[dict]:
        """Each other host, with its role (what the run stores and the dry run prints)."""
        return [s.facts() | {"role": role} for s, role in ((self.server, "server"), (self.db, "database")) if s]

    def check_same_site(self) -> None:
        """After the preflight (WordPress is provisioned on the stack's host by then)."""
        if self.db is not None:
            check_same_site(self.db, self.server)


@contextmanager
def placed(plan, pins: Pinning, lab, on_ready=lambda facts: None) -> Iterator[Placed]:
    """`on_ready` is told each host's facts as it is connected (the live output)."""
    found = Placed(lab, pins)
    try:
        if plan.hosts.remote_server:
            found.server = ServerSession.open(plan.hosts, plan, pins)
            found.lab, found.pins = found.server.lab(lab), found.server.pinning(pins)
            on_ready(found.facts()[-1])
        if plan.hosts.remote_db:
            found.db = open_database(plan, found.pins, found.server)
            found.lab = with_database(found.lab, found.db)
            on_ready(found.facts()[-1])
        yield found
    finally:
        try:
            if found.server is not None:
                found.server.close()
        finally:
            if found.db is not None:
                found.db.close()
