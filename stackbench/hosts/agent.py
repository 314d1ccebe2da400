"""The lab on the server's host: what `hosts.server = "ssh:DEST"` runs there, over SSH.

    python3 -m stackbench.hosts.agent     (in the bundle the lab unpacked: hosts/bundle.py)

It is the lab's own code doing there what it does at home: render the stack's configs
into a private run directory, check them with the servers' own checkers, start the
servers as its children in cgroups, verify them, and per cell sample their cgroups, read
their status pages and count their system calls (monitor/). The lab drives it one request
at a time (hosts/wire.py) and runs the load from its side.

It ends when its standard input does — the lab closed it, or the lab or the connection
died — and then stops every server it started and removes what it made, as a lab does on
its way out. Its servers die with it should it be killed (PDEATHSIG), and what it leaves
then is swept by the next agent or lab on that host (leftovers.py).

On the lab's own machine (the same kernel: a test's sshd in a namespace) it takes the
cores the lab gave the server and not the run lock, which the lab holds; elsewhere it
takes that host's run lock, sweeps what a killed lab left there and pins as a lab would.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import signal
import sys
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any, TextIO

from stackbench.planning import limits, machine as machine_mod
from stackbench.upkeep import environment, leftovers, pinning as pinning_mod
from stackbench import workloads as workloads_mod
from stackbench.errors import HostError, StackbenchError
from stackbench.hosts import clock, wire
from stackbench.hosts.database import DatabaseInstance
from stackbench.upkeep.lock import RunLock
from stackbench.monitor.run import RunMonitor
from stackbench.model.cost import MemoryEvents
from stackbench.monitor.session import CellReadings, StackMonitor
from stackbench.stacks import installed, registry
from stackbench.stacks.lifecycle import StackInstance

BOOT_ID = Path("/proc/sys/kernel/random/boot_id")


def boot_id() -> str | None:
    try:
        return BOOT_ID.read_text().strip()
    except OSError:
        return None


def address_problem(address: str | None, same_machine: bool) -> str | None:
    """Why the stack cannot listen on `address` for the lab's clients, or None. Loopback
    on another machine is that machine's own (SSH through a tunnel or a ProxyCommand):
    the lab's engine would load its own loopback instead."""
    if not address:
        return "the lab cannot tell which address it reached this host by (no SSH_CONNECTION)"
    try:
        ip = ipaddress.ip_address(address)
    except ValueError:
        return "not an IP address"
    if ip.version != 4:
        return "the lab's stacks listen on IPv4 addresses"
    if ip.is_unspecified or (ip.is_loopback and not same_machine):
        return "the lab's clients could not reach it there (SSH arrived through a tunnel?)"
    return None


def provision_facts() -> dict:
    """What decides the bytes of the provisioned WordPress here (its cache key) and the
    versions behind it: a stack and its database on two hosts must agree on them."""
    from stackbench.workloads.wordpress import provision
    return {"key": provision.key(), "wordpress": provision.wordpress_version(), "mariadb": provision.mariadb_version()}


def arrival_address() -> str | None:
    """The address the lab reached this host by: where the stack listens, so the lab's
    clients reach it the same way (sshd's SSH_CONNECTION: client ip, port, server ip, port)."""
    parts = os.environ.get("SSH_CONNECTION", "").split()
    return parts[2] if len(parts) == 4 else None


def _window(started_unix_us: int, ended_unix_us: int, completed: int, requests_per_s: float | None) -> SimpleNamespace:
    """A profile pass's load as StackMonitor.end_profile reads it from an engine result."""
    return SimpleNamespace(started_unix_us=started_unix_us, ended_unix_us=ended_unix_us,
                           requests=SimpleNamespace(completed=completed), requests_per_s=requests_per_s)


def _events(events: MemoryEvents | None) -> dict | None:
    """A machine's memory events as they cross the channel (wire.events_from_dict)."""
    return events.as_dict() if events else None


class Agent:
    def __init__(self) -> None:
        self.lock: RunLock | None = None
        self.pins: pinning_mod.Pinning | None = None
        self.machine: machine_mod.MachineProfile | None = None
        self.run_monitor: RunMonitor | None = None
        self.address: str | None = None
        self.instances: dict[int, StackInstance] = {}
        self.monitors: dict[int, StackMonitor] = {}
        self.readings: dict[int, CellReadings] = {}
        self.databases: dict[int, DatabaseInstance] = {}
        self._next = 1

    # -- the run ---------------------------------------------------------------------------
    def op_hello(self, lab_boot_id: str | None, server_cpus: list[int], engine_cpus: list[int],
                 sample_interval_s: float, syscalls: bool, machine: dict | None, address: str | None = None,
                 role: str = "server", peer_boot_id: str | None = None) -> dict:
        """`role`: "server" (the stack's host) or "database"; `peer_boot_id`: the machine
        that connects to what this host serves (the lab's for a stack; the stack's for a
        database), for which this host's loopback would be its own."""
        same = lab_boot_id is not None and lab_boot_id == boot_id()
        if same:
            pins = pinning_mod.Pinning(server_cpus, engine_cpus)  # the lab's choice, under its lock
        else:
            self.lock = RunLock()
            self.lock.acquire()
            leftovers.sweep()
            pins = pinning_mod.choose()
        self.machine = machine_mod.MachineProfile(**machine) if machine else None
        if not same:  # on the lab's machine the lab checked it
            limits.check_profile(self.machine, "the plan")
        self.pins = machine_mod.pinning(self.machine, pins) if not same else pins
        pinning_mod.pin_self(self.pins.engine_cpus)  # the agent and its samplers off the server's cores
        self.run_monitor = RunMonitor(self.pins.engine_cpus, sample_interval_s, syscalls)
        self.address = address or arrival_address()
        peer = peer_boot_id or lab_boot_id
        problem = address_problem(self.address, peer is not None and peer == boot_id())
        if problem:
            what, key = ("the database", "db_address") if role == "database" else ("the stack", "server_address")
            raise HostError(f"{what} cannot listen on {self.address or 'an unknown address'}: {problem}",
                            hint=f"set hosts.{key} to this host's IPv4 address the others reach it by")
        env = environment.collect(self.pins, engine_version=False)
        return {"same_machine": same, "address": self.address, "environment": env, "boot_id": boot_id(),
                "syscall_method": self.run_monitor.syscall_method}

    def op_clock(self) -> int:
        return clock.now_us()

    def op_require(self, stack: str) -> None:
        installed.require(registry.get(stack))

    def op_require_workload(self, workload: str) -> None:
        installed.require_workload(workloads_mod.get(workload))

    def op_provision_key(self) -> dict:
        return provision_facts()

    def op_versions(self, stack: str) -> dict:
        return installed.versions(registry.get(stack))

    # -- a stack -----------------------------------------------------------------------------
    def _instance(self, spec: dict, started: bool) -> StackInstance:
        assert self.pins is not None and self.run_monitor is not None, "hello first"
        return StackInstance(registry.get(spec["stack"]), spec["knobs"], label=spec["label"],
                             cpus=self.pins.server_cpus if started else [], port=spec.get("port"),
                             keep_rundir=bool(spec.get("keep_rundir")),
                             cgroup_parent=self.run_monitor.cgroup_parent if started else None,
                             workloads=[workloads_mod.get(w) for w in spec["workloads"]], host=self.address,
                             machine=self.machine if started else None, database=spec.get("database"),
                             database_password=spec.get("database_password"), site_logins=spec.get("site_logins"))

    def op_preflight(self, spec: dict) -> None:
        self._instance(spec, started=False).preflight()

    def op_up(self, spec: dict) -> dict:
        instance = self._instance(spec, started=True)
        try:
            instance.up()
        except StackbenchError as e:
            # What the lab keeps of a start that failed, as it would of a local one: the
            # rendered files, where they are (--keep-rundir), the machine's events so far.
            e.state = {"files": instance.files, "rundir": str(instance.ctx.rundir) if instance.ctx else None,
                       "since_start": _events(instance.machine_cgroup.since_start() if instance.machine_cgroup
                                              else None)}
            raise
        sid, self._next = self._next, self._next + 1
        self.instances[sid] = instance
        return {"id": sid, "host": instance.host, "port": instance.port, "files": instance.files,
                "rundir": str(instance.ctx.rundir), "cpus": instance.cpus, "knobs": instance.knobs,
                "machine_cgroup": instance.machine_cgroup is not None,
                # The site's accounts' passwords go to the lab over SSH: its visitors log in from there.
                "site_logins": instance.ctx.site_logins}

    def op_verify(self, sid: int, workload_ids: list[str]) -> dict | None:
        instance = self.instances[sid]
        instance.verify(workload_ids)
        self.monitors[sid] = self.run_monitor.for_stack(instance)
        return instance.php_state

    def op_dead(self, sid: int) -> list[dict]:
        return [{"name": p.name, "exit_status": p.exit_status} for p in self.instances[sid].dead_servers()]

    def op_check_alive(self, sid: int) -> None:
        self.instances[sid].check_alive()

    def op_since_start(self, sid: int) -> dict | None:
        cgroup = self.instances[sid].machine_cgroup
        return _events(cgroup.since_start() if cgroup else None)

    def op_down(self, sid: int) -> None:
        monitor = self.monitors.pop(sid, None)
        self.readings.pop(sid, None)
        try:
            if monitor:
                monitor.stop()
        finally:
            instance = self.instances.pop(sid, None)
            if instance:
                instance.down()

    # -- a database on this host, for a stack on another (hosts.db) --------------------------
    def op_db_prepare(self, workloads: list[str]) -> None:
        DatabaseInstance.prepare([workloads_mod.get(w) for w in workloads])

    def op_db_up(self, workloads: list[str]) -> dict:
        assert self.pins is not None and self.run_monitor is not None, "hello first"
        database = DatabaseInstance([workloads_mod.get(w) for w in workloads], self.address, self.pins.server_cpus,
                                    self.run_monitor.cgroup_parent)
        address = database.up()
        did, self._next = self._next, self._next + 1
        self.databases[did] = database
        # The password goes to the lab over SSH, and from there to the stack's PHP only.
        return {"id": did, "address": address, "password": database.password, "site_logins": database.site_logins}

    def op_db_dead(self, did: int) -> list[dict]:
        return self.databases[did].dead()

    def op_db_begin_cell(self, did: int) -> None:
        self.databases[did].begin_cell()

    def op_db_end_cell(self, did: int) -> dict:
        return self.databases[did].end_cell()

    def op_db_down(self, did: int) -> None:
        database = self.databases.pop(did, None)
        if database:
            database.down()

    # -- a cell ------------------------------------------------------------------------------
    def op_begin_cell(self, sid: int) -> None:
        self.monitors[sid].begin_cell()

    def op_end_cell(self, sid: int) -> dict:
        readings = self.readings[sid] = self.monitors[sid].end_cell()
        return wire.readings_to_dict(readings)

    def op_cpu_used(self, sid: int) -> int | None:
        """The stack's and its services' CPU time so far: a capacity search waits on it
        until a probe's abandoned requests are worked off (runner/capacity_search.py settle)."""
        return self.monitors[sid].cpu_used_us()

    def op_begin_profile(self, sid: int) -> bool:
        return self.monitors[sid].begin_profile()

    def op_end_profile(self, sid: int, started_unix_us: int, ended_unix_us: int, completed: int,
                       requests_per_s: float | None) -> dict:
        readings = self.readings.pop(sid, None) or CellReadings()
        notes = len(readings.cost.notes)
        self.monitors[sid].end_profile(readings, _window(started_unix_us, ended_unix_us, completed, requests_per_s))
        events = readings.cost.memory_events
        return {"syscalls": dataclasses.asdict(readings.syscalls) if readings.syscalls else None,
                "syscalls_requests_per_s": readings.cost.syscalls_requests_per_s,
                "notes": list(readings.cost.notes[notes:]),
                "memory_events": events.as_dict() if events else None}  # with the pass's OOM kills

    # -- the end -----------------------------------------------------------------------------
    def close(self) -> None:
        """Everything it started stopped, everything it made removed (each step even when
        one before fails)."""
        for sid in list(self.instances):
            try:
                self.op_down(sid)
            except Exception:
                traceback.print_exc()
        for did in list(self.databases):
            try:
                self.op_db_down(did)
            except Exception:
                traceback.print_exc()
        if self.run_monitor:
            self.run_monitor.close()
        if self.lock:
            self.lock.release()

    def handle(self, op: str, args: dict[str, Any]) -> Any:
        method = getattr(self, f"op_{op}", None)
        if method is None:
            raise HostError(f"the agent has no operation {op!r} (a lab and an agent of different builds?)")
        return method(**args)


def serve(requests: TextIO, answers: TextIO) -> None:
    agent = Agent()
    try:
        for line in requests:
            if not line.strip():
                continue
            request = json.loads(line)
            rid = request.get("id", 0)
            try:
                answers.write(wire.answer(rid, agent.handle(request["op"], request.get("args") or {})))
            except StackbenchError as e:
                answers.write(wire.answer(rid, error=e))
            except Exception as e:  # a bug here must reach the lab as a sentence, not hang it
                answers.write(wire.answer(rid, error=HostError(f"the agent failed: {e!r}",
                                                               detail=traceback.format_exc())))
            answers.flush()
    finally:
        agent.close()


def main() -> int:
    def stop(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
        signal.signal(sig, stop)
    # The answers are the protocol: anything the lab's code prints goes to stderr instead.
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    sys.stdout = sys.stderr
    try:
        serve(sys.stdin, answers)
    except KeyboardInterrupt:
        return 130
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
