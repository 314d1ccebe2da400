"""A workload's database on a host of its own (`hosts.db = "ssh:DEST"`), as the agent
there runs it: the same MariaDB a stack would start beside it — a copy of the provisioned
snapshot in a private run directory, a child process in a cgroup of its own — but
listening on TCP at the host's address, for the stack's PHP on another host. The
snapshot's user may only connect from localhost; the copy lets it in from anywhere, with
a password of this start's own, set before the first connection is accepted
(workloads/mariadb.py): the copy is this start's alone and removed with it, and the
lab's fixed password is refused on TCP.

Per cell it gives what the stack's monitor gives for a local database: its peak memory
and CPU over the window (service_mem_peak_bytes, service_cpu_us).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from stackbench.upkeep import ports
from stackbench.errors import ServerError
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.cgroup_stats import CgroupReader
from stackbench.stacks import installed, rundir as rundir_mod
from stackbench.servers.base import Context
from stackbench.stacks.lifecycle import check_config, empty_and_remove, finish_each, spawn_server, write_files
from stackbench.upkeep.supervise import ServerProcess, wait_ready
from stackbench.workloads import mariadb
from stackbench.workloads.base import Workload
from stackbench.workloads.wordpress import provision

READY_DEADLINE_S = 30.0


class DatabaseInstance:
    def __init__(self, workloads: list[Workload], address: str, cpus: list[int], cgroup_parent: str | None):
        self.workloads, self.address, self.cpus, self.cgroup_parent = workloads, address, cpus, cgroup_parent
        self.rundir: Path | None = None
        self.process: ServerProcess | None = None
        self.cgroup: Cgroup | None = None
        self.reader: CgroupReader | None = None
        self.port: int | None = None
        self.password: str | None = None  # this start's, for the stack's PHP: never printed
        self.site_logins: dict[str, str] = {}  # the site's accounts' passwords, for the lab alone
        self._cpu_before: int | None = None

    @staticmethod
    def prepare(workloads: list[Workload]) -> None:
        """What the database needs here before its first start: the workloads' packages,
        and WordPress provisioned (minutes, once per version: provision.py)."""
        for w in workloads:
            installed.require_workload(w)
        if any(w.services for w in workloads):
            provision.ensure()

    def up(self) -> str:
        """Start it; returns host:port for the stack's PHP (its password: `password`)."""
        try:
            # mariadbd runs as the database user, which must pass the 0700 directory (rundir.py).
            self.rundir = rundir_mod.make("db", Path(tempfile.gettempdir()), drop_to_workers=os.geteuid() == 0)
            (self.rundir / "logs").mkdir(mode=0o755)
            self.port = ports.free_port(self.address)
            ctx = Context("db", self.rundir, self.rundir, self.port, self.cpus, None, host=self.address)
            services = [s for w in self.workloads if w.services for s in w.services(ctx)]
            if len(services) != 1 or not isinstance(services[0], mariadb.MariaDb):
                raise ServerError(f"a database host serves one MariaDB; the workloads ask for {len(services)} services")
            db = services[0]
            db.listen = (self.address, self.port)  # before its init file is written (prepare)
            self.password = db.password
            self.site_logins = dict(ctx.site_logins)
            write_files(db, self.rundir)
            db.prepare()
            check_config(db, self.rundir)
            self.cgroup = Cgroup.create(self.rundir.name, parent=self.cgroup_parent)
            self.reader = CgroupReader(self.cgroup) if self.cgroup else None
            self.process = spawn_server(db, self.rundir, self.cpus, self.cgroup)
            wait_ready(self.process, db.probe(), READY_DEADLINE_S)
        except BaseException:
            self.down()
            raise
        return f"{self.address}:{self.port}"

    def dead(self) -> list[dict]:
        if self.process is None or self.process.alive():
            return []
        return [{"name": self.process.name, "exit_status": self.process.exit_status}]

    def begin_cell(self) -> None:
        if self.reader:
            self.reader.reset_peak()
            self._cpu_before = self.reader.sample(0).cpu_usage_us

    def end_cell(self) -> dict:
        if not self.reader:
            return {"service_mem_peak_bytes": None, "service_cpu_us": None}
        after = self.reader.sample(0).cpu_usage_us
        cpu = after - self._cpu_before if after is not None and self._cpu_before is not None else None
        return {"service_mem_peak_bytes": self.reader.peak_bytes(), "service_cpu_us": cpu}

    def down(self) -> None:
        """Stopped, its cgroup emptied and removed, its run directory removed: each step
        finished even when a dropped connection (SIGHUP) lands in it."""
        steps = [self.process.stop] if self.process else []
        if self.cgroup:
            steps.append(lambda cgroup=self.cgroup: empty_and_remove(cgroup))
        if self.rundir:
            steps.append(lambda rundir=self.rundir: shutil.rmtree(rundir, ignore_errors=True))
        self.process = self.cgroup = self.rundir = self.password = None
        self.site_logins = {}
        finish_each(steps)
