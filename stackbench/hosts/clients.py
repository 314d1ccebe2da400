"""One load spread over the plan's clients (hosts.client): local engines and engines
shipped to other hosts over SSH, started at the same instant and merged into one result.

Per run: each SSH host is connected once, the engine shipped once, its clock offset
measured once (clock.py). Per load: the connections (and an open loop's rate) are
shared out as the engine shares them over its threads; every engine is told the same
instant, each in its own clock; the results merge exactly (engine/merge.py) and keep
what each client did, and how far apart they began, measured by the engines themselves
and corrected by the offsets (so "how well synchronised" is within ± the offsets'
uncertainty, which is reported beside it).

A remote engine is bounded by its duration, and tied to the lab by its SSH channel
(`--watch-stdin`): a Ctrl-C (the lab kills its SSH clients), a lab killed outright (its
master connection dies with it) or a dropped connection ends the channel and the
engine at once (tests/test_hosts.py: gone within 3 s of a Ctrl-C and of a kill -9).
"""

from __future__ import annotations

import ipaddress
import json
import shlex
import shutil
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable

from stackbench.upkeep import leftovers
from stackbench.engine import process as engine
from stackbench.engine.merge import merge
from stackbench.engine.process import LoadSpec
from stackbench.engine.result import EngineResult, Progress
from stackbench.errors import HostError, StackbenchError, UsageError
from stackbench.hosts import clock
from stackbench.planning.hosts import Client, Hosts
from stackbench.hosts.ssh import Remote, Ssh
from stackbench.model.environment import ClientHost
from stackbench.network import netns

CLOCK_REPROBE_S = 60.0
LOCAL_LEAD_S = 0.25  # to spawn the local engines before the instant (50 ms was too little: they began late)


@dataclass
class Prepared:
    client: Client
    ssh: Ssh | None = None
    remote: Remote | None = None
    offset: clock.Offset | None = None
    label: str = ""  # the client's label, numbered when two are alike ("local #2")
    probed: float = 0.0  # when the offset was measured (time.monotonic)

    def probe_clock(self) -> None:
        probe = self.ssh.popen(f"{self.remote.engine} --clock", stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE)
        try:
            self.offset = clock.measure(probe)
        except HostError as e:
            err = probe.stderr.read().decode(errors="replace").strip() if probe.stderr else ""
            raise HostError(f"{self.label}: {e.message}", detail=err or None) from None
        self.probed = time.monotonic()

    def host(self) -> ClientHost:
        """What the terminal says of it as the run connects it."""
        return ClientHost(self.label or self.client.label, self.remote.cpus if self.remote else None,
                          self.offset.offset_us if self.offset else None,
                          self.offset.uncertainty_us if self.offset else None)

    def facts(self) -> dict:
        out: dict = {"host": self.label or self.client.label}
        if self.remote:
            out |= {"arch": self.remote.arch, "cpus": self.remote.cpus}
        if self.offset:
            out |= self.offset.as_dict()
        return out


def share(total: int, parts: int, k: int) -> int:
    """The engine's own rule for connections over threads: part k gets one extra while
    k < the remainder."""
    return total // parts + (1 if k < total % parts else 0)


@dataclass
class ClientSession:
    """The run's clients, connected. `load` has the signature of engine.run."""

    hosts: Hosts
    clients: list[Prepared] = field(default_factory=list)
    listen: str | None = None  # the address the stack must listen on for the remote clients
    control_dir: Path | None = None

    @classmethod
    def open(cls, hosts: Hosts, engine_binary: Callable[[], str] = engine.binary) -> "ClientSession":
        """Connect the plan's clients (preflight has checked they are allowed:
        `check_allowed`)."""
        session = cls(hosts)
        labels = [c.label for c in hosts.clients]
        numbered = [f"{lbl} #{labels[:k].count(lbl) + 1}" if labels.count(lbl) > 1 else lbl
                    for k, lbl in enumerate(labels)]
        if not hosts.remote:
            session.clients = [Prepared(c, label=lbl) for c, lbl in zip(hosts.clients, numbered)]
            return session
        # Marked as this lab's: if it is killed, the next lab's sweep removes it.
        session.control_dir = leftovers.make_dir("stackbench-ssh-")
        try:
            binary = Path(engine_binary())
            for c, label in zip(hosts.clients, numbered):
                if c.kind != "ssh":
                    session.clients.append(Prepared(c, label=label))
                    continue
                ssh = Ssh(c.destination, session.control_dir, Path(hosts.ssh_config) if hosts.ssh_config else None)
                prepared = Prepared(c, ssh, label=label)
                session.clients.append(prepared)  # closed with the session from here on
                ssh.open()
                prepared.remote = ssh.prepare(binary)
                prepared.probe_clock()
            if not hosts.remote_server:  # the clients reach a stack on another host by its own address
                session.listen = _listen_address([p.ssh for p in session.clients if p.ssh])
        except BaseException:
            session.close()
            raise
        return session

    @property
    def spread(self) -> bool:
        return not self.hosts.single_local

    def hosts_connected(self) -> list[ClientHost]:
        return [p.host() for p in self.clients]

    def facts(self) -> list[dict]:
        return [p.facts() for p in self.clients]

    def load(self, spec: LoadSpec, cpus: list[int],
             started: Callable[[subprocess.Popen], None] | None = None) -> EngineResult:
        """`spec` on the lab's engine, or spread over the clients; `started` is told each
        engine process (engine/process.py `run`), as a caller on a thread needs."""
        if not self.spread:
            return engine.run(spec, cpus, started=started)
        n = len(self.clients)
        if spec.connections < n:
            raise UsageError(f"{spec.connections} connection(s) cannot be spread over {n} clients",
                             hint="every load of the plan needs at least one connection per client")
        # Each SSH host's channel timed now (reopening a connection closed for being idle),
        # and its clock probed again once a minute: clocks drift by tens of ppm.
        lead = LOCAL_LEAD_S
        for p in self.clients:
            if p.ssh is not None:
                lead = max(lead, LOCAL_LEAD_S + 3 * p.ssh.channel())
                if time.monotonic() - p.probed > CLOCK_REPROBE_S:
                    p.probe_clock()
        at = clock.now_us() + int(lead * 1e6)
        results: list[EngineResult | None] = [None] * n
        failures: list[StackbenchError | None] = [None] * n
        procs: list[subprocess.Popen] = []

        progress = _Progress(spec.on_progress, n) if spec.on_progress else None

        def begun(proc: subprocess.Popen) -> None:
            procs.append(proc)
            if started is not None:
                started(proc)

        def one(k: int, prepared: Prepared) -> None:
            conns = share(spec.connections, n, k)
            offset = prepared.offset.offset_us if prepared.offset else 0
            part = replace(spec, connections=conns, histogram=True, start_at_us=at + offset,
                           rate=spec.rate * conns / spec.connections if spec.rate is not None else None,
                           requests=share(spec.requests, n, k) if spec.requests is not None else None,
                           on_progress=(lambda line, k=k: progress.update(k, line)) if progress else None)
            try:
                if prepared.ssh is None:
                    results[k] = engine.run(part, cpus, started=begun)
                else:
                    part = replace(part, threads=max(1, min(conns, prepared.remote.cpus)), watch_stdin=True)
                    budget = engine.budget_s(replace(part, start_at_us=at))  # on the lab's clock
                    results[k] = engine.run(part, None, prepared.remote.engine, budget=budget,
                                            started=begun,
                                            wrap=lambda argv: prepared.ssh.argv(f"exec {shlex.join(argv)}"))
            except StackbenchError as e:
                e.message = f"{prepared.label}: {e.message}"
                failures[k] = e
            except Exception as e:  # noqa: BLE001 - any failure is this client's, and says so
                failures[k] = HostError(f"{prepared.label}: {type(e).__name__}: {e}")

        # Every engine in a thread of its own, started from this one: a thread inherits
        # the network namespace of the thread that made it (the client namespace here).
        # Ctrl-C kills every engine here; an SSH client killed closes its remote engine's
        # stdin, which stops that engine (--watch-stdin).
        engine.run_threads([partial(one, k, p) for k, p in enumerate(self.clients)], procs)
        failed = next((f for f in failures if f), None)
        if failed:
            raise failed
        for p, result in zip(self.clients, results):
            _reached(p, result, spec.url)
        # The documents are merged whole (engine/merge.py): the merged one is stored as it is.
        return EngineResult.from_doc(merge([r.raw for r in results], [p.facts() for p in self.clients]))

    def close(self) -> None:
        for p in self.clients:
            if p.ssh is not None:
                try:
                    p.ssh.close()
                except (OSError, subprocess.SubprocessError):
                    pass
        if self.control_dir is not None:
            shutil.rmtree(self.control_dir, ignore_errors=True)
            self.control_dir = None


class _Progress:
    """Every client's progress line (over SSH too: its stderr comes back), summed into
    the one the terminal shows, each time one arrives: the latest line's phase, the
    furthest elapsed time, the counts and rates added."""

    def __init__(self, show: Callable[[Progress], None], n: int):
        self.show = show
        self.latest: list[Progress | None] = [None] * n
        self.lock = threading.Lock()

    def update(self, k: int, line: Progress) -> None:
        with self.lock:
            self.latest[k] = line
            known = [x for x in self.latest if x is not None]
            total = Progress(line.phase, max(x.elapsed_s for x in known), sum(x.completed for x in known),
                             sum(x.failed for x in known), sum(x.non_2xx for x in known),
                             sum(x.per_s for x in known))
        self.show(total)


def _reached(p: Prepared, result: EngineResult, url: str) -> None:
    """A remote client that could not connect at all measured nothing: the stack listens
    on the address the lab chose for it, and something between (a firewall, NAT, a jump
    host) stops its traffic. That stops the run, naming the host, rather than storing a
    cell that is really the other clients' alone."""
    if p.ssh is None or result.requests.completed:
        return
    connects = result.errors.connect if result.errors else 0
    if connects:
        raise HostError(f"{p.label} could not connect to the stack at {url} ({connects:,} failed connects)",
                        hint="the stack listens on this machine's address on the route to that host: the port must "
                             "be open to it, with no NAT or jump host in between")


def check_allowed(hosts: Hosts, allow_remote_target: bool, duration_s: float | None) -> None:
    """Before anything runs: load from or to other hosts crosses a real network, so it
    needs the user's --allow-remote-target and loads bounded in time."""
    if hosts.remote_server:
        who, named = "a server on another host takes the load over the network", f"hosts.server {hosts.server.label}"
    elif hosts.remote_db:
        who, named = ("a database on another host is reached over the network",
                      f"hosts.db {hosts.db.label}")
    elif hosts.remote:
        who, named = ("clients on other hosts send the load over the network",
                      f"hosts.client {', '.join(c.label for c in hosts.remote)}")
    else:
        return
    if not allow_remote_target:
        raise UsageError(f"{who}: pass --allow-remote-target", hint=f"the plan's {named}")
    if duration_s is None:
        raise UsageError(f"{who}: the plan's loads must be bounded in time (duration), not a request count")


def _listen_address(hosts: list[Ssh]) -> str:
    """This machine's address on the route to every remote client (they must agree: the
    stack listens on one address)."""
    found = {}
    for ssh in hosts:
        name = ssh.hostname()
        try:
            addr = socket.getaddrinfo(name, None, socket.AF_INET)[0][4][0]
        except socket.gaierror as e:
            raise HostError(f"{ssh.destination}: cannot resolve {name}: {e}") from None
        try:
            src = json.loads(netns.ip("-j", "route", "get", addr, check=False) or "[]")[0].get("prefsrc")
        except (ValueError, IndexError):
            src = None
        if not src:
            raise HostError(f"{ssh.destination}: no route to {addr} from this machine")
        found[ssh.destination] = src
    if len(set(found.values())) > 1:
        raise HostError("the client hosts reach this machine by different addresses "
                        f"({', '.join(f'{d}: {a}' for d, a in found.items())}): the stack listens on one")
    address = next(iter(found.values()))
    ipaddress.ip_address(address)  # ip's own output: an address
    return address
