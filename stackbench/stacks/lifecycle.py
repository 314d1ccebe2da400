"""One running instance of a stack: render → check → start (back first) → ready →
verify → … → stop (front first). Generic over every family (see base.py)."""

from __future__ import annotations

import os
import shutil
import signal
import time
import tempfile
from pathlib import Path
from typing import Any

from stackbench import ports, workloads
from stackbench.monitor.cgroup import Cgroup
from stackbench.errors import ConfigCheckFailed, ServerExited, UsageError
from stackbench.stacks import installed
from stackbench.stacks.base import Context, Server, Stack
from stackbench.supervise import ServerProcess, run_checked, spawn, wait_ready
from stackbench.workloads.verify import verify

WORKER_USER = "www-data"
READY_DEADLINE_S = 15.0


class StackInstance:
    def __init__(self, stack: Stack, knobs: dict[str, Any], *, label: str | None = None,
                 cpus: list[int] | None = None, port: int | None = None,
                 workdir: Path | None = None, keep_rundir: bool = False,
                 aux_ports: dict[str, int] | None = None, cgroup_parent: str | None = None):
        self.stack = stack
        self.knobs = stack.resolve_knobs(knobs)
        self.label = label or stack.id
        self.cpus = list(cpus or [])
        self._port = port
        self._workdir = workdir
        self._aux_ports = dict(aux_ports or {})
        self._cgroup_parent = cgroup_parent
        self.keep_rundir = keep_rundir
        self.ctx: Context | None = None
        self.servers: list[Server] = []
        self.processes: list[ServerProcess] = []
        self.files: dict[str, str] = {}  # rendered configs, relative to the run directory
        self.ready_s: dict[str, float] = {}
        self.cgroup: Cgroup | None = None

    @property
    def port(self) -> int:
        assert self.ctx is not None
        return self.ctx.port

    # -- lifecycle ---------------------------------------------------------------------
    def up(self) -> None:
        installed.require(self.stack)
        if self._port is not None:
            ports.ensure_free(self._port)
        try:
            self._prepare()
            self._check()
            self.cgroup = Cgroup.create(self.ctx.rundir.name, parent=self._cgroup_parent)
            for server in self.servers:
                self._start(server)
        except BaseException:
            self.down()
            raise

    def preflight(self) -> None:
        """Render and check the configs without starting anything, then clean up."""
        installed.require(self.stack)
        try:
            self._prepare()
            self._check()
        finally:
            self.down()
            self.files.clear()
            self.servers = []
            self.ctx = None

    def verify(self, workload_ids: list[str]) -> None:
        for wid in workload_ids:
            verify(self.port, workloads.get(wid), self.label)

    def dead_servers(self) -> list[ServerProcess]:
        return [p for p in self.processes if not p.alive()]

    def pids(self) -> dict[str, list[int]]:
        return {p.name: p.group_pids() for p in self.processes}

    def all_pids(self) -> list[int]:
        """Every live process of the stack: the cgroup's members (which catches anything
        that left its process group), or the process groups without a cgroup."""
        pids = {pid for p in self.processes for pid in p.group_pids()}
        if self.cgroup:
            pids.update(self.cgroup.pids())
        return sorted(pids)

    def leftover_pids(self) -> list[int]:
        return self.all_pids()

    def down(self) -> None:
        """Stop front first, so the back end never sees a request it cannot finish;
        then anything still in the stack's cgroup is killed and the cgroup removed."""
        for proc in reversed(self.processes):
            proc.stop()
        if self.cgroup:
            deadline = time.monotonic() + 5
            while self.cgroup.pids() and time.monotonic() < deadline:
                for pid in self.cgroup.pids():
                    try:
                        os.kill(pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
                time.sleep(0.02)
            self.cgroup.remove()
        if self.ctx and not self.keep_rundir:
            shutil.rmtree(self.ctx.rundir, ignore_errors=True)

    def __enter__(self) -> "StackInstance":
        self.up()
        return self

    def __exit__(self, *exc: object) -> None:
        self.down()

    # -- steps -------------------------------------------------------------------------
    def _prepare(self) -> None:
        base = self._workdir or Path(tempfile.gettempdir())
        base.mkdir(parents=True, exist_ok=True)
        rundir = Path(tempfile.mkdtemp(prefix=f"stackbench-{self.stack.id}-", dir=base))
        # Worker processes run as www-data and must reach the docroot and sockets.
        rundir.chmod(0o755)
        for sub in ("logs", "run", "tmp", "docroot"):
            (rundir / sub).mkdir(mode=0o755)
        user = WORKER_USER if os.geteuid() == 0 else None
        if user:
            _check_traversable(rundir)
        self.ctx = Context(self.label, rundir, rundir / "docroot",
                           self._port or ports.free_port(), self.cpus, user, dict(self._aux_ports))
        self.servers = self.stack.servers(self.ctx, self.knobs)
        docroot = workloads.docroot_files()
        for server in self.servers:
            for rel, text in server.files().items():
                path = rundir / rel
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(text)
                self.files[rel] = text
            docroot.update(server.extra_docroot_files)
        for name, content in docroot.items():
            (self.ctx.docroot / name).write_bytes(content)
        for server in self.servers:
            server.prepare()

    def _check(self) -> None:
        """Every rendered config passes the server's own checker before anything starts."""
        assert self.ctx is not None
        for server in self.servers:
            status, out = run_checked(server.check_argv(), cwd=self.ctx.rundir, env=server.env())
            if status != 0:
                raise ConfigCheckFailed(
                    f"{server.name} rejected its configuration ({' '.join(server.check_argv())})",
                    detail=out.strip() or "(no output)",
                    hint="run again with --keep-rundir to keep the rendered files for inspection",
                )

    def _start(self, server: Server) -> None:
        assert self.ctx is not None
        proc = spawn(server.name, server.start_argv(), cwd=self.ctx.rundir, env=server.env(),
                     cpus=self.cpus, log_paths=server.log_paths(), stop_signal=server.stop_signal,
                     cgroup=self.cgroup)
        self.processes.append(proc)
        self.ready_s[server.name] = wait_ready(proc, server.probe(), READY_DEADLINE_S)

    def check_alive(self) -> None:
        """Raise if a server died (e.g. mid-run), with its last words."""
        for proc in self.dead_servers():
            raise ServerExited(f"{proc.name} of {self.label} exited with status {proc.popen.returncode}",
                               detail=proc.tail())


def _check_traversable(path: Path) -> None:
    """Workers run as www-data: every parent of the run directory must let others in,
    or the servers answer 403/502 and the cause is far from obvious."""
    for parent in [path, *path.parents]:
        if not parent.stat().st_mode & 0o001:
            shutil.rmtree(path, ignore_errors=True)
            raise UsageError(f"{parent} is not searchable by {WORKER_USER}, so the servers' workers "
                             "could not read the docroot below it",
                             hint="pick a --workdir whose parent directories are mode 755 (e.g. /tmp)")
