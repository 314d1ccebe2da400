"""One running instance of a stack: render → check → start (back first) → ready →
verify → … → stop (front first). Generic over every family (see base.py)."""

from __future__ import annotations

import os
import shutil
import signal
import time
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stackbench import workloads as workloads_mod
from stackbench.errors import ConfigCheckFailed, ServerExited, StorageError, UsageError, VerifyFailed
from stackbench.monitor.cgroup import Cgroup
from stackbench.monitor.machine_cgroup import MachineCgroup
from stackbench.planning.machine import MachineProfile
from stackbench.servers import certificates
from stackbench.servers.base import Context, Server
from stackbench.servers.tls_policy import TlsSite
from stackbench.servers.workers import WORKER_USER, closed_parent
from stackbench.stacks import installed, rundir as rundir_mod
from stackbench.stacks.base import Stack
from stackbench.upkeep import leftovers, ports
from stackbench.upkeep.supervise import ServerProcess, run_checked, spawn, wait_ready
from stackbench.workloads import login as login_mod, mariadb, php_probe
from stackbench.workloads.base import Workload
from stackbench.workloads.login import Account
from stackbench.workloads.verify import read_back, verify, verify_login

READY_DEADLINE_S = 15.0


@dataclass(frozen=True)
class TlsOptions:
    """HTTPS beside the clear port: the run's certificate's key type and whether session
    tickets are on (servers/tls_policy.py is the rest of the policy, the same for all)."""

    certificate: str = "ecdsa"  # "ecdsa" (P-256) | "rsa" (2048)
    tickets: bool = True
    # Tests only: nginx and Apache log whether each TLS session was resumed
    # (tls_policy.SESSION_LOG); never in a measured run (access logs are off everywhere).
    log_sessions: bool = False

    def __post_init__(self) -> None:
        if self.certificate not in certificates.KINDS:
            raise UsageError(f"tls certificate is one of {', '.join(certificates.KINDS)}, not {self.certificate!r}")
        if not isinstance(self.tickets, bool):
            raise UsageError(f"tls tickets takes true or false, not {self.tickets!r}")


class StackInstance:
    def __init__(self, stack: Stack, knobs: dict[str, Any], *, label: str | None = None,
                 cpus: list[int] | None = None, port: int | None = None,
                 workdir: Path | None = None, keep_rundir: bool = False,
                 aux_ports: dict[str, int] | None = None, cgroup_parent: str | None = None,
                 workloads: list[Workload] | None = None, host: str = ports.LOOPBACK,
                 machine: MachineProfile | None = None, database: str | None = None,
                 tls: TlsOptions | None = None, tls_port: int | None = None,
                 database_password: str | None = None, site_logins: dict[str, str] | None = None):
        """`workloads`: what the docroot gets (default: every registered workload);
        `machine`: a small machine to confine servers and services to (machine.py);
        `database`: host:port of the workloads' database on a host of its own (then it is
        not started here: hosts/database.py starts it there; `database_password`: the
        password that start gave the workload's account, `site_logins`: those it gave the
        site's accounts); `tls`: the front serves
        HTTPS (and HTTP/2 where it can) on `tls_port` (default: a free one) beside its
        clear port, with a certificate of the run's own CA."""
        self.stack = stack
        self.knobs = stack.resolve_knobs(knobs)
        self.label = label or stack.id
        self.cpus = list(cpus or [])
        self._port = port
        self._workdir = workdir
        self._aux_ports = dict(aux_ports or {})
        self._cgroup_parent = cgroup_parent
        self.keep_rundir = keep_rundir
        self.workloads = list(workloads if workloads is not None else workloads_mod.DOCUMENTS)
        self.host = host
        self.database = database
        self.database_password = database_password
        self.site_logins = dict(site_logins or {})
        self.ctx: Context | None = None
        self.services: list[Server] = []  # what the workloads bring (a database), started first
        self.servers: list[Server] = []
        self.processes: list[ServerProcess] = []
        self.files: dict[str, str] = {}  # rendered configs, relative to the run directory
        self.cgroup: Cgroup | None = None
        # The workloads' services get a cgroup of their own, so the stack's cost is the
        # stack's alone and the database's is shown beside it.
        self.services_cgroup: Cgroup | None = None
        # A machine profile: one cgroup holding both, with the machine's limits.
        self.machine = machine
        self.machine_cgroup: MachineCgroup | None = None
        # PHP's state in force, read back from PHP while verifying (php_probe.py).
        self.php_state: dict | None = None
        self.tls = tls
        self._tls_port = tls_port
        # What the front negotiated, read back while verifying: "https" (ALPN http/1.1
        # offered) and "h2" (h2, http/1.1 offered) -> {alpn, version, cipher, group}.
        self.negotiated: dict[str, dict] = {}

    @property
    def port(self) -> int:
        assert self.ctx is not None
        return self.ctx.port

    def url(self, path: str) -> str:
        return f"http://{self.host}:{self.port}{path}"

    @property
    def tls_port(self) -> int | None:
        """The front's HTTPS port (HTTP/1.1 and, where it can, h2), or None without tls."""
        return self.ctx.tls.port if self.ctx and self.ctx.tls else None

    @property
    def ca_path(self) -> Path | None:
        """The run's CA certificate (PEM): the engine's --cacert."""
        return self.ctx.tls.certificates.ca if self.ctx and self.ctx.tls else None

    @property
    def leaf_path(self) -> Path | None:
        """The leaf certificate every front serves (PEM): the engine's --pin-cert."""
        return self.ctx.tls.certificates.leaf if self.ctx and self.ctx.tls else None

    def https_url(self, path: str) -> str:
        return f"https://{self.host}:{self.tls_port}{path}"

    # -- lifecycle ---------------------------------------------------------------------
    def up(self) -> None:
        installed.require(self.stack)
        for port in (self._port, self._tls_port):
            if port is not None:
                ports.ensure_free(port, self.host)
        try:
            self._prepare()
            self._check()
            parent = self._cgroup_parent
            if self.machine is not None:
                self.machine_cgroup = MachineCgroup.create(self.ctx.rundir.name + "-machine", parent, self.machine,
                                                           self.cpus)
                parent = self.machine_cgroup.name if self.machine_cgroup else parent
            if self.services:
                self.services_cgroup = self._cgroup(self.ctx.rundir.name + "-services", parent)
                for service in self.services:
                    self._start(service, self.services_cgroup)
            self.cgroup = self._cgroup(self.ctx.rundir.name, parent)
            for server in self.servers:
                self._start(server, self.cgroup)
        except BaseException:
            self.down()
            raise

    def preflight(self) -> None:
        """Render and check the configs without starting anything, then clean up."""
        installed.require(self.stack)
        self.keep_rundir = False  # --keep-rundir keeps the measured stacks' directories, not these
        try:
            self._prepare()
            self._check()
        finally:
            self.down()
            self.files.clear()
            self.servers = []
            self.services = []
            self.ctx = None

    @property
    def logins_path(self) -> Path | None:
        """The start's logins file (workloads/login.py: how a visitor logs in, the
        accounts and their passwords; mode 0600), or None when nobody logs in."""
        path = self.ctx.rundir / login_mod.LOGINS_FILE if self.ctx else None
        return path if path is not None and path.exists() else None

    def accounts(self, wid: str) -> list[Account]:
        """The accounts a visitor of workload `wid` logs in with on this start."""
        login = self.workload(wid).login
        return login.accounts(self.ctx.site_logins) if login and self.ctx else []

    def workload(self, wid: str) -> Workload:
        for w in self.workloads:
            if w.id == wid:
                return w
        raise UsageError(f"{self.label} was not set up for workload {wid!r}")

    def verify(self, workload_ids: list[str]) -> None:
        """Every URL right (workloads/verify.py), a logged-in visitor's pages theirs
        alone, then PHP's state in force read back."""
        for wid in workload_ids:
            verify(self.host, self.port, self.workload(wid), self.label)
            if self.workload(wid).login:
                verify_login(self.host, self.port, self.workload(wid), self.accounts(wid), self.label)
            if self.ctx and self.ctx.tls:
                # The same checks over TLS, the chain verified against the run's CA.
                verify(self.host, self.tls_port, self.workload(wid), self.label, cafile=self.ca_path)
        if self.ctx and self.ctx.tls:
            self.negotiated = read_back(self.host, self.tls_port, self.ca_path, self.label)
        php = [self.workload(wid) for wid in workload_ids if self.workload(wid).needs_php]
        if php:
            self.php_state = php_probe.read(self.host, self.port, php[0].probe, php[0].path)
            if self.php_state is None and php[0].probe != "none":
                raise VerifyFailed(f"{self.label}: PHP did not answer the lab's probe "
                                   f"({php_probe.PROBE_PATH if php[0].probe == 'script' else 'auto_prepend_file'}), "
                                   "so the opcache state in force is unknown")

    def dead_servers(self) -> list[ServerProcess]:
        return [p for p in self.processes if not p.alive()]

    def pids(self) -> dict[str, list[int]]:
        return {p.name: p.group_pids() for p in self.processes}

    def all_pids(self) -> list[int]:
        """Every live process of the stack: the cgroup's members (which catches anything
        that left its process group), or the process groups without a cgroup."""
        pids = {pid for p in self.processes for pid in p.group_pids()}
        for cgroup in (self.cgroup, self.services_cgroup):
            if cgroup:
                pids.update(cgroup.pids())
        return sorted(pids)

    def down(self) -> None:
        """Stop front first, so the back end never sees a request it cannot finish;
        then anything still in the stack's cgroups is killed and the cgroups removed.
        Every step runs even when Ctrl-C lands in the middle of one (the database is
        stopped last, so an interrupt while stopping the front must not skip it); the
        interrupt is raised again at the end."""
        steps = [proc.stop for proc in reversed(self.processes)]
        if self.machine_cgroup:  # its OOM counters live in the children's cgroups (v1)
            steps.append(self.machine_cgroup.keep_counters)
        steps += [lambda cg=cg: empty_and_remove(cg) for cg in (self.cgroup, self.services_cgroup) if cg]
        if self.machine_cgroup:  # after its children: the stack's and the services' cgroups
            steps.append(self.machine_cgroup.remove)
        if self.ctx and not self.keep_rundir:
            steps.append(lambda rundir=self.ctx.rundir: shutil.rmtree(rundir, ignore_errors=True))
        finish_each(steps)

    def __enter__(self) -> "StackInstance":
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- steps -------------------------------------------------------------------------
    def _prepare(self) -> None:
        base = self._workdir or Path(tempfile.gettempdir())
        try:
            self._render(base)
        except OSError as e:  # a full disk, a read-only or missing --workdir
            raise StorageError(f"cannot write the run directory in {base}: {e.strerror}"
                               + (f" ({e.filename})" if e.filename else ""),
                               hint="--workdir names a writable directory with free space") from None

    def _render(self, base: Path) -> None:
        base.mkdir(parents=True, exist_ok=True)
        user = WORKER_USER if os.geteuid() == 0 else None
        if user:
            _check_traversable(base)
        # 0700, passable by the workers' users only (rundir.py); what is below is theirs
        # to read (docroot) or use (sockets in run/).
        rundir = rundir_mod.make(self.stack.id, base, drop_to_workers=user is not None)
        if self.keep_rundir:
            leftovers.disown(rundir)  # the user's to inspect: never swept
        for sub in ("logs", "run", "tmp", "docroot"):
            (rundir / sub).mkdir(mode=0o755)
        self.ctx = Context(self.label, rundir, rundir / "docroot", self._port or ports.free_port(self.host),
                           self.cpus, user, dict(self._aux_ports), host=self.host)
        if self.tls is not None:
            # The run's CA and leaf, inside the run directory (removed with it); the leaf
            # names the address the stack listens on too (a namespace's, another host's).
            names = tuple(dict.fromkeys((self.host, *certificates.HOSTS)))
            certs = certificates.make(rundir / "tls", self.tls.certificate, hosts=names)
            self.ctx.tls = TlsSite(self._tls_port or self.ctx.aux_port("tls"), certs, self.tls.tickets,
                                   log_sessions=self.tls.log_sessions)
        own_tree = self._apply_workloads(self.ctx)
        if self.database:
            self.services = []
            self.ctx.php_env[mariadb.HOST_ENV] = self.database
            if self.database_password:  # none while only the configs are checked (preflight)
                self.ctx.php_env[mariadb.PASSWORD_ENV] = self.database_password
            self.ctx.site_logins.update(self.site_logins)
        else:
            self.services = [s for w in self.workloads if w.services for s in w.services(self.ctx)]
        for w in self.workloads:
            if w.login and self.ctx.site_logins:
                login_mod.write(rundir, w.login, self.ctx.site_logins)
        self.servers = self.stack.servers(self.ctx, self.knobs)
        if not own_tree:
            # Only the plan's workloads go into the docroot (a server's own extras too,
            # e.g. Apache's .htaccess for AllowOverride All).
            (self.ctx.docroot / "index.html").write_bytes(workloads_mod.INDEX_HTML)
            for workload in self.workloads:
                workload.install(self.ctx.docroot)
            if any(w.needs_php and w.probe == "script" for w in self.workloads):
                (self.ctx.docroot / php_probe.PROBE_PATH.lstrip("/")).write_bytes(php_probe.SCRIPT)
        for server in self.services + self.servers:
            # What the lab keeps of them (the store, a failed start's state) has no password.
            self.files.update(mariadb.redacted(write_files(server, rundir), self.ctx.php_env))
            if not own_tree:
                for name, content in server.extra_docroot_files.items():
                    (self.ctx.docroot / name).write_bytes(content)
        for server in self.services + self.servers:
            server.prepare()

    def _apply_workloads(self, ctx: Context) -> bool:
        """What the workloads ask of the stack: a tree of their own as the docroot (then
        True), a front controller, PHP's environment and ini values, the probe file."""
        own = [w for w in self.workloads if w.docroot]
        if own and len(self.workloads) > 1:
            raise UsageError(f"workload {own[0].id!r} serves a tree of its own and cannot share a stack start "
                             f"with {', '.join(w.id for w in self.workloads if w is not own[0])}",
                             hint='use restart = "cell" (the default), or a plan per workload')
        for w in self.workloads:
            ctx.php_env.update(w.php_env)
            ctx.php_ini.update(w.php_ini)
            ctx.front_controller = ctx.front_controller or w.front_controller
            ctx.htaccess_rewrites = ctx.htaccess_rewrites or w.htaccess_rewrites
            if w.needs_php and w.probe == "prepend":
                prepend = ctx.rundir / "php" / "stackbench-prepend.php"
                prepend.parent.mkdir(mode=0o755, exist_ok=True)
                prepend.write_bytes(php_probe.PREPEND)
                ctx.php_ini["auto_prepend_file"] = str(prepend)
        if own:
            ctx.docroot = own[0].docroot()
            return True
        return False

    def _check(self) -> None:
        """Every rendered config passes the server's own checker before anything starts."""
        assert self.ctx is not None
        for server in self.services + self.servers:
            check_config(server, self.ctx.rundir)

    def _cgroup(self, name: str, parent: str | None) -> Cgroup | None:
        cgroup = Cgroup.create(name, parent=parent)
        if self.machine_cgroup:
            self.machine_cgroup.fence(cgroup)
        return cgroup

    def _start(self, server: Server, cgroup: Cgroup | None) -> None:
        assert self.ctx is not None
        proc = spawn_server(server, self.ctx.rundir, self.cpus, cgroup)
        self.processes.append(proc)
        wait_ready(proc, server.probe(), READY_DEADLINE_S)

    def check_alive(self) -> None:
        """Raise if a server died (e.g. mid-run), with its last words."""
        for proc in self.dead_servers():
            raise ServerExited(f"{proc.name} of {self.label} exited with status {proc.exit_status}",
                               detail=proc.tail())


# -- one server's steps, also for a database started alone (hosts/database.py) ----------
def write_files(server: Server, rundir: Path) -> dict[str, str]:
    """The server's rendered configs written into the run directory; returns them."""
    files = server.files()
    for rel, text in files.items():
        path = rundir / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return files


def check_config(server: Server, rundir: Path) -> None:
    """The server's own checker accepts its config, or ConfigCheckFailed with its words."""
    status, out = run_checked(server.check_argv(), cwd=rundir, env=server.env())
    if status != 0:
        raise ConfigCheckFailed(
            f"{server.name} rejected its configuration ({' '.join(server.check_argv())})",
            detail=server.check_detail(out).strip() or "(no output)",
            hint="run again with --keep-rundir to keep the rendered files for inspection",
        )


def spawn_server(server: Server, rundir: Path, cpus: list[int], cgroup: Cgroup | None) -> ServerProcess:
    return spawn(server.name, server.start_argv(), cwd=rundir, env=server.env(), cpus=cpus,
                 log_paths=server.log_paths(), stop_signal=server.stop_signal, cgroup=cgroup)


def finish_each(steps: list) -> None:
    """Every step of a stop, each finished even when Ctrl-C (or a dropped connection's
    SIGHUP, in an agent) lands in the middle of it; the interrupt is raised at the end."""
    interrupted: KeyboardInterrupt | None = None
    for step in steps:
        while True:
            try:
                step()
                break
            except KeyboardInterrupt as e:  # finish this step, then the others
                interrupted = e
    if interrupted is not None:
        raise interrupted


def empty_and_remove(cgroup: Cgroup) -> None:
    """Kill whatever is left in a cgroup (a worker that left its process group), then
    remove it."""
    deadline = time.monotonic() + 5
    while cgroup.pids() and time.monotonic() < deadline:
        for pid in cgroup.pids():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.02)
    cgroup.remove()


def _check_traversable(path: Path) -> None:
    closed = closed_parent(path)
    if closed is not None:
        raise UsageError(f"{closed} is not searchable by {WORKER_USER}, so the servers' workers "
                         "could not read the docroot below it",
                         hint="pick a --workdir whose parent directories are mode 755 (e.g. /tmp)")
