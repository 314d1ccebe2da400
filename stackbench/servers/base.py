"""The contract every server follows: one process tree the lab starts, whether a stack
is composed of it (nginx, Apache, PHP-FPM, … in this folder) or a workload brings it
along as a service (MariaDB, workloads/mariadb.py).

A *Server* renders its config files, names its checker and start command, and says how
to tell it is ready; a *Context* says where and how one instance runs; a *Requirement*
is a file it needs and the Debian package that provides it. Checking, starting,
waiting, verifying and stopping are generic (stacks/lifecycle.py).
"""

from __future__ import annotations

import os
import pwd
import signal
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from jinja2 import Environment, FileSystemLoader, StrictUndefined

from stackbench.errors import ServerError, UsageError
from stackbench.servers.tls_policy import TlsSite
from stackbench.upkeep.ports import LOOPBACK
from stackbench.upkeep.supervise import Probe

_TEMPLATES = Environment(
    loader=FileSystemLoader(Path(__file__).parent / "templates"),
    undefined=StrictUndefined,
    keep_trailing_newline=True,
    trim_blocks=False,
)


def render(template: str, **values: Any) -> str:
    return _TEMPLATES.get_template(template).render(**values)


@dataclass(frozen=True)
class Knob:
    name: str
    default: Any
    help: str
    choices: tuple | None = None

    def parse(self, value: Any) -> Any:
        """Check a value from a plan against this knob's type and choices."""
        kind = type(self.default)
        if kind is bool:
            if not isinstance(value, bool):
                raise UsageError(f"knob {self.name!r} takes true or false, not {value!r}")
        elif kind is int:
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise UsageError(f"knob {self.name!r} takes a whole number >= 0, not {value!r}")
        elif not isinstance(value, kind):
            raise UsageError(f"knob {self.name!r} takes a {kind.__name__}, not {value!r}")
        if self.choices and value not in self.choices:
            choices = ", ".join(map(str, self.choices))
            raise UsageError(f"knob {self.name!r} is one of {choices}, not {value!r}")
        return value


@dataclass(frozen=True)
class Pool:
    """What sizes a stack for its machine: the pool of processes that run PHP, set to `n`
    by `knobs(n)` (every process started up front, as a box sized for its traffic has
    them), its workers found among the stack's processes by `worker` (their command name
    starts with it; the one whose parent is not one of them is the master, not a worker).
    `holds_connections`: each worker serves one client connection at a time for as long as
    it stays open (prefork with mod_php in front), so how long a connection is kept is a
    knob to tune with it (docs/methods/tuning.md)."""

    what: str  # "PHP-FPM children"
    worker: str
    sizes: Callable[[int], dict[str, Any]]
    holds_connections: bool = False
    one: str = ""  # the noun for one worker ("PHP-FPM child"); `what` when empty

    def describe(self, n: int) -> str:
        """"9 PHP-FPM children", "1 PHP-FPM child"."""
        return f"{n} {self.one if n == 1 and self.one else self.what}"

    def knobs(self, n: int) -> dict[str, Any]:
        if n < 1:
            raise ValueError(f"a pool has at least one worker, not {n!r}")
        return self.sizes(n)


@dataclass(frozen=True)
class Requirement:
    """A file the stack needs, and the Debian package that provides it."""

    path: str  # a binary name looked up on PATH, or an absolute path
    package: str  # Debian package that provides it; "" when Debian has none
    reason: str | None = None  # for package "": why it is missing and where to get it


@dataclass
class Context:
    """Where and how one instance of a stack runs."""

    stack_label: str
    rundir: Path
    docroot: Path
    port: int
    cpus: list[int]
    user: str | None  # unprivileged worker user when the lab runs as root, else None
    aux_ports: dict[str, int] = field(default_factory=dict)
    # The address every server of the stack listens on and its hops use; the one place
    # it is decided (a network namespace will give another).
    host: str = LOOPBACK
    # What the workloads ask of PHP, in every runtime the same way (FPM pool, mod_php,
    # php-cgi): environment variables (e.g. the database's socket, which lives in the
    # run directory) and admin ini values (e.g. the opcache probe's auto_prepend_file).
    # Not in a repr: it holds the database's password (workloads/mariadb.py).
    php_env: dict[str, str] = field(default_factory=dict, repr=False)
    php_ini: dict[str, str] = field(default_factory=dict)
    # The accounts visitors log in with and this start's password of each ({user:
    # password}), set by the workload's services (WordPress's database: its readers);
    # the lab's alone (workloads/login.py). Not in a repr.
    site_logins: dict[str, str] = field(default_factory=dict, repr=False)
    # A front controller ("/index.php"): requests for paths that are not files go to it
    # (pretty URLs), written in each server's own rewrite language.
    front_controller: str | None = None
    # Apache with AllowOverride All reads the docroot's own .htaccess for its rewrite
    # rules (WordPress ships one): then the vhost does not repeat them.
    htaccess_rewrites: bool = False
    # HTTPS beside the clear port (tls_policy.py): its port and the run's certificates;
    # None = clear text only.
    tls: TlsSite | None = None

    def aux_port(self, name: str) -> int:
        """A second free port for an internal hop (FPM over TCP, a back-end Apache, HTTPS),
        none of the stack's others: each is free when asked, but none is bound until the
        servers start, so the kernel may hand the same one out twice (seen once: Apache's
        HTTPS port on its clear one, "Cannot define multiple Listeners")."""
        if name not in self.aux_ports:
            from stackbench.upkeep.ports import free_port

            taken = {self.port, *self.aux_ports.values()}
            port = free_port(self.host)
            for _ in range(100):
                if port not in taken:
                    break
                port = free_port(self.host)
            else:
                raise ServerError(f"no free port for {name} beside the stack's own {sorted(taken)}")
            self.aux_ports[name] = port
        return self.aux_ports[name]

    def render_values(self) -> dict[str, Any]:
        return {
            "stack_label": self.stack_label,
            "rundir": str(self.rundir),
            "docroot": str(self.docroot),
            "port": self.port,
            "user": self.user,
            "host": self.host,
            "php_env": dict(sorted(self.php_env.items())),
            "php_ini": dict(sorted(self.php_ini.items())),
            "front_controller": self.front_controller,
            "htaccess_rewrites": self.htaccess_rewrites,
            # Every template sees the same TLS names; tls_port None = no TLS listener.
            **(self.tls.render_values() if self.tls else {"tls_port": None}),
        }


@dataclass
class Server(ABC):
    """One process tree of a stack."""

    ctx: Context
    knobs: dict[str, Any]
    name: str = ""
    stop_signal: int = signal.SIGTERM
    extra_docroot_files: dict[str, bytes] = field(default_factory=dict)

    @abstractmethod
    def files(self) -> dict[str, str]:
        """Config files to write, keyed by path relative to the run directory."""

    @abstractmethod
    def check_argv(self) -> list[str]:
        """The server's own config checker (nginx -t, apache2 -t, php-fpm -t)."""

    @abstractmethod
    def start_argv(self) -> list[str]:
        """Foreground start command."""

    @abstractmethod
    def probe(self) -> Probe:
        """True once the server accepts connections."""

    @abstractmethod
    def log_paths(self) -> list[Path]:
        """Error logs whose tail goes into every error message about this server."""

    def check_detail(self, output: str) -> str:
        """What of the checker's output an error about it shows: all of it, unless the
        checker says more than helps (Jetty's Java stack traces)."""
        return output

    def env(self) -> dict[str, str] | None:
        return None

    def prepare(self) -> None:
        """Called after the configs and the docroot are written, before the check: for
        servers that open files only after dropping privileges (lighttpd, h2o, Caddy)."""

    def give_to_worker(self, *relpaths: str) -> None:
        """Create run-directory entries (a trailing "/" makes a directory, else an empty
        file) owned by the worker user, for servers that write them unprivileged."""
        for rel in relpaths:
            path = self.ctx.rundir / rel
            if rel.endswith("/"):
                path.mkdir(parents=True, exist_ok=True)
            else:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.touch()
            if self.ctx.user:
                pw = pwd.getpwnam(self.ctx.user)
                os.chown(path, pw.pw_uid, pw.pw_gid)

    def status_url(self) -> str | None:
        """A status page of the server's own (stub_status, server-status), if any."""
        return None

    def cache_counts(self) -> dict[str, int] | None:
        """A cache's own counters so far, cumulative since its start: {"hits", "misses",
        "passes"} (the monitor takes their differences over a cell's window); None: the
        server is no cache, or could not say."""
        return None
