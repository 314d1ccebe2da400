"""The stack on another host (`hosts.server = "ssh:DEST"`): the lab's side of its agent.

At the start of a run the lab connects to the host (ssh.py), ships its own code there
(bundle.py), starts the agent (agent.py) and measures the host's clock against its own.
From then on the runner sees what it sees for a local stack — a stack instance to start,
verify and stop, a monitor that gives each cell's cost — and the load goes from this
machine (or the plan's clients) to the address the lab reached the host by. What the
host is (CPU, kernel, cores the stack got) is stored with the run, beside this machine's.

Every request is bounded in time: an agent that stops answering, or a connection that
drops, is a HostError (exit 8), and the cells measured so far stay in the store.
"""

from __future__ import annotations

import collections
import json
import os
import queue
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from stackbench.upkeep import leftovers
from stackbench.errors import HostError, StackbenchError, UsageError
from stackbench.hosts import bundle, clock, wire
from stackbench.hosts.agent import boot_id
from stackbench.planning.hosts import Client, Hosts
from stackbench.hosts.ssh import Ssh, detached
from stackbench.model.cost import MemoryEvents
from stackbench.monitor.session import CellReadings, count_syscalls
from stackbench.upkeep.pinning import Pinning
from stackbench.planning.plan import Plan, StackVariant
from stackbench.stacks import registry
from stackbench.workloads.base import Workload
from stackbench.workloads.login import Account

CALL_TIMEOUT_S = 60.0
START_TIMEOUT_S = 300.0  # starting a stack there: its config checks, readiness, a database's copy
PREPARE_TIMEOUT_S = 900.0  # what a workload needs first there (WordPress's provisioned database)
CLOSE_TIMEOUT_S = 30.0
REACH_TIMEOUT_S = 5.0
PYTHON = "python3"


class AgentLink:
    """The agent's process (ssh … python3 -m stackbench.hosts.agent), one request at a time.
    Answers are read on a thread, so every wait has a deadline; each carries its
    request's id, so an answer that arrives after Ctrl-C gave up on it is not taken for
    the next one's."""

    def __init__(self, proc: subprocess.Popen, where: str):
        self.proc, self.where = proc, where
        self._answers: queue.Queue = queue.Queue()
        self._stderr: collections.deque = collections.deque(maxlen=40)
        self._id = 0
        threading.Thread(target=self._read, daemon=True, name="stackbench-agent-out").start()
        threading.Thread(target=self._drain, daemon=True, name="stackbench-agent-err").start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            try:
                self._answers.put(json.loads(line))
            except ValueError:
                self._stderr.append(line.decode(errors="replace").rstrip())
        self._answers.put(None)  # the agent's output ended

    def _drain(self) -> None:
        for line in self.proc.stderr:
            self._stderr.append(line.decode(errors="replace").rstrip())

    def said(self) -> str | None:
        return "\n".join(self._stderr) or None

    def call(self, op: str, timeout: float = CALL_TIMEOUT_S, **args: Any) -> Any:
        self._id += 1
        rid = self._id
        try:
            self.proc.stdin.write(wire.request(rid, op, args))
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError, OSError):
            raise self._gone(op) from None
        deadline = time.monotonic() + timeout
        while True:
            try:
                answer = self._answers.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise HostError(f"{self.where}: the lab's agent did not answer {op!r} within {timeout:.0f} s",
                                detail=self.said()) from None
            if answer is None:
                self._answers.put(None)  # every later call sees the end too
                raise self._gone(op)
            if answer.get("id") != rid:
                continue  # the late answer to a request given up on
            if "error" in answer:
                raise wire.error_from_dict(answer["error"], self.where)
            return answer.get("ok")

    def _gone(self, op: str) -> HostError:
        try:
            status = self.proc.wait(timeout=2)
        except subprocess.TimeoutExpired:
            status = None
        return HostError(f"{self.where}: the lab's agent ended (exit status {status}) before answering {op!r}",
                         detail=self.said(), hint="the connection dropped, or the host's python3 could not run it")

    @property
    def ended(self) -> bool:
        return self.proc.poll() is not None

    def stop(self, op: str, **args: Any) -> None:
        """A request that stops something there. An agent that has ended stopped
        everything as it went (its servers die with it), and one that cannot be reached
        now does when its input closes: no error of its own here, so a Ctrl-C or the
        failure that brought the stack down stays the one reported."""
        if not self.ended:
            try:
                self.call(op, START_TIMEOUT_S, **args)
            except HostError:
                pass

    def close(self, timeout: float = CLOSE_TIMEOUT_S) -> None:
        """End its input: it stops what it started there and exits."""
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


@dataclass
class ServerSession:
    """The server's host, connected, with its agent running."""

    destination: str
    label: str
    ssh: Ssh
    hosts: Hosts = field(default_factory=Hosts)
    link: AgentLink | None = None
    control_dir: Path | None = None
    hello: dict = field(default_factory=dict)
    offset: clock.Offset | None = None
    _versions: dict[str, dict] = field(default_factory=dict)

    @classmethod
    def open(cls, hosts: Hosts, plan: Plan, pins: Pinning, where: Client | None = None,
             peer_boot_id: str | None = None) -> "ServerSession":
        """The agent on `where`: the server's host (the default), or the database's
        (`peer_boot_id`: the machine of the stack that will connect to it)."""
        where = where or hosts.server
        database = where != hosts.server
        control_dir = leftovers.make_dir("stackbench-ssh-")  # the next lab's sweep removes it if this one dies
        ssh = Ssh(where.destination, control_dir, Path(hosts.ssh_config) if hosts.ssh_config else None)
        session = cls(where.destination, where.label, ssh, hosts, control_dir=control_dir)
        try:
            ssh.open()
            version = ssh.run(f"{PYTHON} -c 'import sys; print(*sys.version_info[:2])' 2>&1 || echo none").split()
            if len(version) != 2 or not all(v.isdigit() for v in version) or tuple(map(int, version)) < (3, 11):
                raise HostError(f"{session.label}: the lab's agent needs Python 3.11 or newer there, found "
                                f"{' '.join(version) or 'none'}", hint="apt-get install python3 (Debian 12 has 3.11)")
            packed = bundle.build()
            path = ssh.ship_tree(packed.data, packed.digest, "stackbench")
            # In a session of its own: a Ctrl-C is the lab's, which then stops the stack there in order.
            proc = ssh.popen(f"cd {path} && exec {PYTHON} -m stackbench.hosts.agent", stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=detached)
            session.link = AgentLink(proc, session.label)
            session.hello = session.link.call(
                "hello", lab_boot_id=boot_id(), server_cpus=pins.server_cpus, engine_cpus=pins.engine_cpus,
                sample_interval_s=plan.sample_interval_s, syscalls=plan.syscalls,
                # A machine profile is the stack's; a database's host runs as it is.
                machine=plan.machine.as_dict() if plan.machine and not database else None,
                address=hosts.db_address if database else hosts.server_address,
                role="database" if database else "server", peer_boot_id=peer_boot_id or boot_id())
            session.probe_clock()
        except BaseException:
            session.close()
            raise
        return session

    @property
    def address(self) -> str:
        return self.hello["address"]

    def pinning(self, here: Pinning) -> Pinning:
        """The run's pinning: on the lab's own machine, the lab's; otherwise the stack on
        the host's cores (as the agent chose them) and the engine on every core here."""
        if self.hello.get("same_machine"):
            return here
        there = (self.hello.get("environment") or {}).get("pinning") or {}
        return Pinning(list(there.get("server_cpus") or []), sorted(os.sched_getaffinity(0)), server_host=self.label,
                       server_cpu_quota=there.get("server_cpu_quota"))

    def probe_clock(self) -> None:
        samples = []
        for _ in range(clock.PROBES):
            t0 = clock.now_us()
            there = self.link.call("clock")
            samples.append((t0, int(there), clock.now_us()))
        self.offset = clock.estimate(samples)

    def facts(self) -> dict:
        """What the run stores of the host (environment.server_host)."""
        return {"host": self.label, "address": self.address, "same_machine": self.hello.get("same_machine"),
                "syscall_method": self.hello.get("syscall_method"), **(self.offset.as_dict() if self.offset else {}),
                "environment": self.hello.get("environment")}

    # -- the runner's collaborators (runner.Lab) --------------------------------------------
    def lab(self, lab):
        """`lab` with the stack, its monitor, its packages and versions on the host."""
        return replace(lab, instance=self.instance, monitor=lambda *_: RemoteRunMonitor(self),
                       require=lambda stack: self.link.call("require", stack=stack.id),
                       require_workload=lambda w: self.link.call("require_workload", PREPARE_TIMEOUT_S, workload=w.id),
                       versions=self.versions,
                       environment=lambda pins: lab.environment(pins) | {"server_host": self.facts()})

    def instance(self, variant: StackVariant, cpus: list[int], options, cgroup_parent: str | None,
                 workload_list: list[Workload], host: str | None = None, machine=None) -> "RemoteStack":
        return RemoteStack(self, variant, workload_list, keep_rundir=options.keep_rundir)

    def versions(self, stack) -> dict:
        if stack.id not in self._versions:
            self._versions[stack.id] = self.link.call("versions", stack=stack.id)
        return self._versions[stack.id]

    def close(self) -> None:
        """The agent stops the stacks it started and exits; then the connection ends."""
        try:
            if self.link is not None:
                self.link.close()
        finally:
            self.ssh.close()
            if self.control_dir is not None:
                shutil.rmtree(self.control_dir, ignore_errors=True)


@dataclass
class Dead:
    name: str
    exit_status: int | None


class RemoteStack:
    """A stack running on the server's host, as the runner uses a StackInstance."""

    def __init__(self, session: ServerSession, variant: StackVariant, workload_list: list[Workload],
                 keep_rundir: bool = False):
        self.session, self.variant = session, variant
        self.stack = registry.get(variant.id)
        self.knobs = self.stack.resolve_knobs(variant.knobs)
        self.label = variant.label
        self.workloads = list(workload_list)
        self.keep_rundir = keep_rundir
        self.sid: int | None = None
        self.host: str = session.address
        self._port: int | None = variant.port
        self.cpus: list[int] = []
        self.files: dict[str, str] = {}
        self.php_state: dict | None = None
        self.ctx: SimpleNamespace | None = None  # .rundir, where it is on the host (--keep-rundir)
        self.machine_cgroup: RemoteMachineCgroup | None = None
        self.database: str | None = None  # host:port of the database on a host of its own
        self.database_password: str | None = None  # and its start's password (never stored)
        self.site_logins: dict[str, str] = {}  # the site's accounts' passwords, this start's (never stored)

    def _spec(self) -> dict:
        return {"stack": self.variant.id, "knobs": self.variant.knobs, "label": self.label, "port": self.variant.port,
                "workloads": [w.id for w in self.workloads], "keep_rundir": self.keep_rundir,
                "database": self.database, "database_password": self.database_password,
                "site_logins": self.site_logins}

    @property
    def port(self) -> int:
        assert self._port is not None
        return self._port

    def url(self, path: str) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}{path}"

    def workload(self, wid: str) -> Workload:
        for w in self.workloads:
            if w.id == wid:
                return w
        raise UsageError(f"{self.label} was not set up for workload {wid!r}")

    def accounts(self, wid: str) -> list[Account]:
        """The accounts a visitor of workload `wid` logs in with on this start (made on
        the server's host, or the database's: StackInstance.accounts)."""
        login = self.workload(wid).login
        return login.accounts(self.site_logins) if login else []

    def preflight(self) -> None:
        self.session.link.call("preflight", START_TIMEOUT_S, spec=self._spec())

    def up(self) -> None:
        self.session.probe_clock()  # the offset this stack's samples are moved by
        try:
            started = self.session.link.call("up", START_TIMEOUT_S, spec=self._spec())
        except StackbenchError as e:
            # A start that failed there: keep what a local one keeps (its files, where they
            # are, the machine's events so far), for the failed cells and the OOM reason.
            state = getattr(e, "state", None) or {}
            self.files = state.get("files") or {}
            if state.get("rundir"):
                self.ctx = SimpleNamespace(rundir=f"{self.session.label}:{state['rundir']}")
            if state.get("since_start") is not None:
                self.machine_cgroup = RemoteMachineCgroup(self, wire.events_from_dict(state["since_start"]))
            raise
        self.sid, self.host, self._port = started["id"], started["host"], started["port"]
        self.files, self.cpus, self.knobs = started["files"], started["cpus"], started["knobs"]
        self.site_logins = started.get("site_logins") or {}
        self.ctx = SimpleNamespace(rundir=f"{self.session.label}:{started['rundir']}")
        if started["machine_cgroup"]:
            self.machine_cgroup = RemoteMachineCgroup(self)
        if any(c.kind == "local" for c in self.session.hosts.clients):
            self._reachable()

    def _reachable(self) -> None:
        """The agent verified the stack there; the load comes from here: one connection
        proves the way (a firewall, a port closed to this machine), before any cell."""
        try:
            socket.create_connection((self.host, self.port), timeout=REACH_TIMEOUT_S).close()
        except OSError as e:
            raise HostError(f"{self.label} runs on {self.session.label} at {self.host}:{self.port}, but this machine "
                            f"cannot connect to it: {e.strerror or e}",
                            hint="the stack's port must be open to this machine (and to the plan's clients)") from None

    def verify(self, workload_ids: list[str]) -> None:
        self.php_state = self.session.link.call("verify", START_TIMEOUT_S, sid=self.sid, workload_ids=workload_ids)

    def dead_servers(self) -> list[Dead]:
        if self.sid is None:
            return []
        return [Dead(**d) for d in self.session.link.call("dead", sid=self.sid)]

    def check_alive(self) -> None:
        self.session.link.call("check_alive", sid=self.sid)

    def down(self) -> None:
        if self.sid is not None:
            sid, self.sid = self.sid, None
            self.session.link.stop("down", sid=sid)


class RemoteMachineCgroup:
    """The machine profile's cgroup there: what the runner asks of it when a stack fails
    (`known`: what a start that failed there reported)."""

    def __init__(self, stack: RemoteStack, known: MemoryEvents | None = None):
        self.stack, self.known = stack, known

    def since_start(self) -> MemoryEvents | None:
        if self.stack.sid is None:
            return self.known
        return wire.events_from_dict(self.stack.session.link.call("since_start", sid=self.stack.sid))


class RemoteMonitor:
    """A StackMonitor's cells, measured by the agent there; sample times come back in the
    lab's clock, and a profile pass's window goes there in the host's."""

    def __init__(self, stack: RemoteStack):
        self.stack = stack
        self.link = stack.session.link

    def _offset(self) -> int:
        offset = self.stack.session.offset
        return offset.offset_us if offset else 0

    def begin_cell(self) -> None:
        self.link.call("begin_cell", sid=self.stack.sid)

    def end_cell(self) -> CellReadings:
        return wire.readings_from_dict(self.link.call("end_cell", sid=self.stack.sid), self._offset())

    def cpu_used_us(self) -> int | None:
        """As StackMonitor's, read there: the CPU time the stack and its services used so far."""
        used = self.link.call("cpu_used", sid=self.stack.sid)
        return int(used) if used is not None else None

    def begin_profile(self) -> bool:
        return bool(self.link.call("begin_profile", sid=self.stack.sid))

    def end_profile(self, readings: CellReadings, result) -> None:
        counted = self.link.call("end_profile", sid=self.stack.sid,
                                 started_unix_us=result.started_unix_us + self._offset(),
                                 ended_unix_us=result.ended_unix_us + self._offset(),
                                 completed=result.requests.completed, requests_per_s=result.requests_per_s)
        count_syscalls(readings, wire.syscalls_from_dict(counted["syscalls"]), counted["syscalls_requests_per_s"],
                       counted["notes"])
        events = wire.events_from_dict(counted.get("memory_events"))
        if events is not None:
            readings.cost = replace(readings.cost, memory_events=events)

    def stop(self) -> None:
        pass  # the agent stops the stack's sampler and counters when the stack goes down


class RemoteRunMonitor:
    """The run's monitor: the agent's, there (its cgroup, perf or strace)."""

    cgroup_parent = None

    def __init__(self, session: ServerSession):
        self.session = session

    def for_stack(self, instance: RemoteStack) -> RemoteMonitor:
        return RemoteMonitor(instance)

    def close(self) -> None:
        pass  # the agent's, closed when the session ends
