"""The workload's database on a host of its own (`hosts.db = "ssh:DEST"`): the lab's side.

Each start of a stack gets a fresh database there first (the agent's DatabaseInstance:
a copy of the provisioned snapshot, listening on TCP), and the stack — here, or on the
server's host — is told its host:port instead of starting one beside it. The stack's
monitor gets the database's cost per cell from there, as it gets a local database's
from its cgroup here; a database that dies there fails the stack's cells like a local one.
"""

from __future__ import annotations

from dataclasses import replace

from stackbench.errors import HostError, ServerExited
from stackbench.hosts.agent import provision_facts
from stackbench.hosts.server import PREPARE_TIMEOUT_S, START_TIMEOUT_S, Dead, ServerSession
from stackbench.monitor.session import CellReadings


def open_database(plan, pins, server: ServerSession | None) -> ServerSession:
    """The database's host connected, its agent started, and what the database needs there
    made ready (packages checked, WordPress provisioned: a long first time)."""
    stack_machine = server.hello.get("boot_id") if server else None
    db = ServerSession.open(plan.hosts, plan, pins, where=plan.hosts.db, peer_boot_id=stack_machine)
    try:
        db.link.call("db_prepare", PREPARE_TIMEOUT_S,
                     workloads=[w for w in plan.workloads if plan.workload(w).services])
    except BaseException:
        db.close()
        raise
    return db


def check_same_site(db: ServerSession, server: ServerSession | None) -> None:
    """The stack serves its host's WordPress tree, the database is its host's snapshot:
    both are provisioned from the same sources only when WordPress's and MariaDB's
    versions agree (the cache key says so). Otherwise pages could ask a schema the
    database does not have."""
    here = server.link.call("provision_key") if server else provision_facts()
    there = db.link.call("provision_key")
    if here["key"] != there["key"]:
        where = server.label if server else "this machine"
        raise HostError(f"WordPress is provisioned differently on {where} (WordPress {here['wordpress']}, "
                        f"{here['mariadb']}) and on {db.label} (WordPress {there['wordpress']}, {there['mariadb']})",
                        hint="install the same packages on both hosts (scripts/setup.sh)")


def with_database(lab, db: ServerSession):
    """`lab` (runner.Lab) with every stack's database on `db`'s host."""
    make = lab.instance
    make_monitor = lab.monitor

    def instance(*args, **kwargs) -> "WithDatabase":
        return WithDatabase(make(*args, **kwargs), db)

    def monitor(*args) -> "RunMonitorWithDatabase":
        return RunMonitorWithDatabase(make_monitor(*args))

    return replace(lab, instance=instance, monitor=monitor,
                   environment=lambda pins: lab.environment(pins) | {"db_host": db.facts()})


class WithDatabase:
    """A stack instance (local or remote) whose database runs on the database's host;
    everything else is the stack's own."""

    def __init__(self, inner, db: ServerSession):
        self.inner, self.db = inner, db
        self.did: int | None = None

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def _with_services(self) -> list[str]:
        return [w.id for w in self.inner.workloads if w.services]

    def preflight(self) -> None:
        # The stack's configs with a database elsewhere (the address is a stand-in: only
        # the checkers read it); the database's own config is checked when it starts.
        self.inner.database = f"{self.db.address}:3306" if self._with_services() else None
        self.inner.preflight()

    def up(self) -> None:
        if self._with_services():
            started = self.db.link.call("db_up", START_TIMEOUT_S, workloads=self._with_services())
            self.did, self.inner.database = started["id"], started["address"]
            self.inner.database_password = started["password"]  # this start's, for its PHP alone
            self.inner.site_logins = started.get("site_logins") or {}  # its site's accounts, for the visitors
        try:
            self.inner.up()
        except BaseException:
            self._db_down()
            raise

    def _dead_there(self) -> list[Dead]:
        if self.did is None:
            return []
        return [Dead(f"{d['name']} on {self.db.label}", d["exit_status"])
                for d in self.db.link.call("db_dead", did=self.did)]

    def dead_servers(self) -> list:
        return [*self.inner.dead_servers(), *self._dead_there()]

    def check_alive(self) -> None:
        self.inner.check_alive()
        for d in self._dead_there():
            raise ServerExited(f"{d.name} of {self.inner.label} exited with status {d.exit_status}")

    def down(self) -> None:
        try:
            self.inner.down()
        finally:
            self._db_down()

    def _db_down(self) -> None:
        if self.did is not None:
            did, self.did = self.did, None
            self.db.link.stop("db_down", did=did)


class MonitorWithDatabase:
    """The stack's monitor, with the database's cost per cell measured there."""

    def __init__(self, inner, stack: WithDatabase):
        self.inner, self.stack = inner, stack

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def begin_cell(self) -> None:
        self.inner.begin_cell()
        if self.stack.did is not None:
            self.stack.db.link.call("db_begin_cell", did=self.stack.did)

    def end_cell(self) -> CellReadings:
        readings = self.inner.end_cell()
        if self.stack.did is not None:
            there = self.stack.db.link.call("db_end_cell", did=self.stack.did)
            readings.cost = replace(readings.cost, service_mem_peak_bytes=there["service_mem_peak_bytes"],
                                    service_cpu_us=there["service_cpu_us"])
        return readings


class RunMonitorWithDatabase:
    def __init__(self, inner):
        self.inner = inner

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def for_stack(self, instance: WithDatabase) -> MonitorWithDatabase:
        return MonitorWithDatabase(self.inner.for_stack(instance.inner), instance)
