"""MariaDB as a child process of the lab: `mariadbd --defaults-file=RUNDIR/mariadb/my.cnf`
with a private datadir, socket and pid file in the run directory — never the system
service, never /var/lib/mysql. Debian's package only provides the binaries.

The datadir is a copy of a provisioned snapshot (workloads/wordpress/provision.py), so
every instance starts from the same bytes and nothing one run writes reaches the next.
"""

from __future__ import annotations

import os
import pwd
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

from stackbench.errors import ServerError
from stackbench.servers.base import Requirement, Server, render
from stackbench.upkeep.supervise import Probe, unix_probe

BINARY = "mariadbd"
INSTALL_DB = "mariadb-install-db"
CLIENT = "mariadb"
# mysqld refuses to run as root; Debian's package creates this user.
DB_USER = "mysql"
REQUIREMENTS = (Requirement(BINARY, "mariadb-server"), Requirement(INSTALL_DB, "mariadb-server"),
                Requirement(CLIENT, "mariadb-client"), Requirement("setpriv", "util-linux"))
CONF = "mariadb/my.cnf"
# The environment variables PHP reads the database's place from (the lab's wp-config.php
# does): its socket in the run directory, or host:port when it runs on a host of its own.
SOCKET_ENV = "STACKBENCH_DB_SOCKET"
HOST_ENV = "STACKBENCH_DB_HOST"


def settings(datadir: Path, home: Path, as_root: bool = True, listen: tuple[str, int] | None = None) -> str:
    """my.cnf for a datadir, with the socket and pid file in `home` (the snapshot's
    provisioning and each stack instance use the same settings). `as_root`: mariadbd
    starts as root and drops to the database user itself. `listen`: (address, port) for
    a database on a host of its own; otherwise it has no TCP port at all."""
    return render("my.cnf.j2", datadir=str(datadir), home=str(home), user=DB_USER if as_root else None,
                  listen=listen)


def chown_to_db(*paths: Path) -> None:
    pw = pwd.getpwnam(DB_USER)
    for path in paths:
        os.chown(path, pw.pw_uid, pw.pw_gid)


@dataclass
class MariaDb(Server):
    """The database a workload brings; its datadir is copied from `snapshot`."""

    snapshot: Path | None = None
    listen: tuple[str, int] | None = None  # on a host of its own (hosts/database.py)

    def __post_init__(self) -> None:
        self.name = "mariadbd"
        self.stop_signal = signal.SIGTERM  # a clean shutdown: InnoDB flushes, ~0.1 s here
        # Every PHP runtime of the stack finds the database through this (Context.php_env).
        self.ctx.php_env[SOCKET_ENV] = str(self.socket)

    @property
    def home(self) -> Path:
        return self.ctx.rundir / "mariadb"

    @property
    def socket(self) -> Path:
        return self.home / "mysqld.sock"

    def files(self) -> dict[str, str]:
        # As root the lab starts it as the database user already (start_argv).
        return {CONF: settings(self.home / "data", self.home, as_root=False, listen=self.listen)}

    def prepare(self) -> None:
        """The datadir from the snapshot, owned by the database user (mariadbd drops to it
        and then creates its socket and pid file beside the datadir)."""
        self.home.mkdir(exist_ok=True)
        if self.snapshot is not None:
            subprocess.run(["cp", "-a", str(self.snapshot), str(self.home / "data")], check=True)
        (self.ctx.rundir / "logs" / "mariadb.log").touch()
        chown_to_db(self.home, self.ctx.rundir / "logs" / "mariadb.log")
        # www-data reaches the socket through this directory.
        self.home.chmod(0o755)

    def _argv(self) -> list[str]:
        return [BINARY, f"--defaults-file={self.ctx.rundir / CONF}"]

    def check_argv(self) -> list[str]:
        # --help --verbose parses every option and fails on an unknown one (exit 7),
        # without starting anything: mariadbd's config check.
        return self._argv() + ["--help", "--verbose"]

    def start_argv(self) -> list[str]:
        return as_db_user(self._argv())

    def probe(self) -> Probe:
        return unix_probe(self.socket)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "mariadb.log"]


def as_db_user(argv: list[str]) -> list[str]:
    """`argv` started as the database user rather than dropping to it itself: a process
    that changes its user loses its parent-death signal, and then a lab killed with -9
    would leave mariadbd running. setpriv sets the signal again after the switch."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid", DB_USER, "--regid", DB_USER, "--init-groups", "--pdeathsig", "KILL", *argv]


def client(socket: Path, sql: str, *, timeout: float = 30.0) -> str:
    """Run SQL as the database's root (unix-socket authentication, as Debian sets it up)."""
    proc = subprocess.run([CLIENT, "--no-defaults", "-S", str(socket), "-u", "root", "-N", "-B", "-e", sql],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ServerError(f"MariaDB refused: {sql[:80]}", detail=proc.stderr.strip())
    return proc.stdout

