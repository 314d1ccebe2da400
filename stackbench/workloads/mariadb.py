"""MariaDB as a child process of the lab: `mariadbd --defaults-file=RUNDIR/mariadb/my.cnf`
with a private datadir, socket and pid file in the run directory — never the system
service, never /var/lib/mysql. Debian's package only provides the binaries.

The datadir is a copy of a provisioned snapshot (workloads/wordpress/provision.py), so
every instance starts from the same bytes and nothing one run writes reaches the next.

Each start gives the workload's account a password of its own (secrets.token_urlsafe):
the snapshot's fixed one is in this repository for anyone to read, and a database on a
host of its own listens on TCP. mariadbd sets it from an init file before it accepts its
first connection (the file is read while the listening sockets wait; measured: a TCP
client that connects then is answered only after the file ran), so the fixed password
is never accepted on any start, local or remote — one code path for both. PHP gets the
password in its environment (Context.php_env) like the socket or host; the configs the
lab stores carry a stand-in instead (`redacted`), and the init file is removed once the
server answers.
"""

from __future__ import annotations

import os
import pwd
import secrets
import signal
import socket
import subprocess
from dataclasses import dataclass, field
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
# ... and this start's password for the workload's account (never in a stored config).
PASSWORD_ENV = "STACKBENCH_DB_PASSWORD"
# What the stored copy of a config shows where the password was rendered.
PASSWORD_STAND_IN = "(this start's own database password, not stored)"
INIT_FILE = "mariadb/accounts.sql"


def settings(datadir: Path, home: Path, as_root: bool = True, listen: tuple[str, int] | None = None,
             init_file: Path | None = None) -> str:
    """my.cnf for a datadir, with the socket and pid file in `home` (the snapshot's
    provisioning and each stack instance use the same settings). `as_root`: mariadbd
    starts as root and drops to the database user itself. `listen`: (address, port) for
    a database on a host of its own; otherwise it has no TCP port at all. `init_file`:
    SQL run at start, before the first connection is accepted."""
    return render("my.cnf.j2", datadir=str(datadir), home=str(home), user=DB_USER if as_root else None,
                  listen=listen, init_file=str(init_file) if init_file else None)


def new_password() -> str:
    """A start's password: 32 characters of [A-Za-z0-9_-], so it needs no quoting in SQL,
    in a PHP-FPM pool or in Apache's SetEnv."""
    return secrets.token_urlsafe(24)


def redacted(files: dict[str, str], php_env: dict[str, str]) -> dict[str, str]:
    """The rendered configs as the lab keeps them (the store, a failed start's state):
    this start's password replaced by a stand-in. The files on disk keep it (PHP reads
    them) and go with the run directory."""
    password = php_env.get(PASSWORD_ENV)
    if not password:
        return files
    return {rel: text.replace(password, PASSWORD_STAND_IN) for rel, text in files.items()}


def chown_to_db(*paths: Path) -> None:
    pw = pwd.getpwnam(DB_USER)
    for path in paths:
        os.chown(path, pw.pw_uid, pw.pw_gid)


@dataclass
class MariaDb(Server):
    """The database a workload brings; its datadir is copied from `snapshot`."""

    snapshot: Path | None = None
    listen: tuple[str, int] | None = None  # on a host of its own (hosts/database.py)
    # The snapshot's account PHP logs in with, and the database it may use; None: none.
    account: str | None = None
    database: str | None = None
    # Never in a repr: an error message or a debug print must not carry it.
    password: str | None = field(default=None, repr=False)
    # More of this start's secrets, run with its password before the first connection:
    # the application's own accounts (workloads/wordpress/accounts.py).
    init_sql: str = field(default="", repr=False)

    def __post_init__(self) -> None:
        self.name = "mariadbd"
        self.stop_signal = signal.SIGTERM  # a clean shutdown: InnoDB flushes, ~0.1 s here
        # Every PHP runtime of the stack finds the database through this (Context.php_env).
        self.ctx.php_env[SOCKET_ENV] = str(self.socket)
        if self.account:
            self.password = new_password()
            self.ctx.php_env[PASSWORD_ENV] = self.password

    @property
    def home(self) -> Path:
        return self.ctx.rundir / "mariadb"

    @property
    def socket(self) -> Path:
        return self.home / "mysqld.sock"

    @property
    def init_file(self) -> Path | None:
        return self.ctx.rundir / INIT_FILE if self.account else None

    def files(self) -> dict[str, str]:
        # As root the lab starts it as the database user already (start_argv).
        return {CONF: settings(self.home / "data", self.home, as_root=False, listen=self.listen,
                               init_file=self.init_file)}

    def accounts_sql(self) -> str:
        """This start's password on the snapshot's account, and on a host of its own the
        same account from anywhere (the snapshot's may only connect from localhost, which
        with skip-name-resolve is the socket alone). mariadbd stops reading an init file
        at its first failing statement and starts all the same: the account reachable
        over TCP comes last, so a failure leaves no way in over TCP (and the probe
        reports it)."""
        assert self.account and self.database and self.password
        user, db, password = self.account, self.database, self.password
        sql = [f"ALTER USER '{user}'@'localhost' IDENTIFIED BY '{password}';"]
        if self.init_sql:
            sql.append(self.init_sql.rstrip("\n"))
        if self.listen:
            sql += [f"CREATE USER '{user}'@'%' IDENTIFIED BY '{password}';",
                    f"GRANT ALL ON `{db}`.* TO '{user}'@'%';"]
        return "\n".join(sql) + "\n"

    def prepare(self) -> None:
        """The datadir from the snapshot, owned by the database user (mariadbd drops to it
        and then creates its socket and pid file beside the datadir)."""
        self.home.mkdir(exist_ok=True)
        if self.snapshot is not None:
            subprocess.run(["cp", "-a", str(self.snapshot), str(self.home / "data")], check=True)
        (self.ctx.rundir / "logs" / "mariadb.log").touch()
        chown_to_db(self.home, self.ctx.rundir / "logs" / "mariadb.log")
        if self.init_file:
            # Readable by the database's user alone: this directory is open to www-data.
            fd = os.open(self.init_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.accounts_sql())
            chown_to_db(self.init_file)
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
        return unix_probe(self.socket) if not self.init_file else self._accounts_probe

    def _accounts_probe(self) -> bool:
        """Ready once the server greets a client on its socket: it accepts connections
        only after its init file ran. Then the file's outcome is read from the error log
        (its one kind of line there: "ERROR: 1396  Operation ALTER USER failed for ...",
        no password in it), and the file removed: it has done its work."""
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(0.2)
            try:
                s.connect(str(self.socket))
                greeted = bool(s.recv(1))
            except OSError:
                return False
        if not greeted:
            return False
        log = self.log_paths()[0]
        failed = [line for line in log.read_text(errors="replace").splitlines() if line.startswith("ERROR:")]
        assert self.init_file is not None
        self.init_file.unlink(missing_ok=True)
        if failed:
            raise ServerError("MariaDB did not set this start's passwords (the workload's account, the site's "
                              "accounts)",
                              detail="\n".join(failed[-3:]))
        return True

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "mariadb.log"]


def as_db_user(argv: list[str]) -> list[str]:
    """`argv` started as the database user rather than dropping to it itself: a process
    that changes its user loses its parent-death signal, and then a lab killed with -9
    would leave mariadbd running. setpriv sets the signal again after the switch."""
    if os.geteuid() != 0:
        return argv
    return ["setpriv", "--reuid", DB_USER, "--regid", DB_USER, "--init-groups", "--pdeathsig", "KILL", *argv]


def client(sock: Path, sql: str, *, timeout: float = 30.0) -> str:
    """Run SQL as the database's root (unix-socket authentication, as Debian sets it up)."""
    proc = subprocess.run([CLIENT, "--no-defaults", "-S", str(sock), "-u", "root", "-N", "-B", "-e", sql],
                          capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise ServerError(f"MariaDB refused: {sql[:80]}", detail=proc.stderr.strip())
    return proc.stdout

