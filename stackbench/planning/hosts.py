"""The plan's `[hosts]` table: where the server, the database and the load's clients run.

    [hosts]
    client = ["local", "ssh:bench@loadbox"]   # one or more; default ["local"]
    server = "ssh:root@web1"                   # default "local": this machine
    db = "ssh:root@db1"                        # default: beside the server
    server_address = "10.0.0.5"                # optional: the address clients use (default:
                                               #   the one SSH reached the server host by)
    ssh_config = "lab-ssh.conf"                # optional: ssh -F (default: ~/.ssh/config)

A client is `local` (an engine on this machine, on the engine's cores), `namespace` (an
engine in the client namespace of the plan's network profile) or `ssh:DEST` (an engine
shipped to DEST and run there; DEST is anything `ssh` takes: user@host, an alias of
~/.ssh/config, ssh://user@host:port). SSH uses the user's own keys and agent in batch
mode: no password is asked for or stored.

The server is `local`, `namespace` (the stack in the server namespace of the plan's
network profile — what a profile other than loopback does anyway) or `ssh:DEST`: the lab
ships its own code there and runs it as an agent (hosts/agent.py) that starts, watches
and measures the stack through that host's /proc, cgroups and perf, as the lab does here.
The database is a service of its workload (MariaDB for WordPress), started, measured and
stopped with each start of the stack: beside it (the default), or on a host of its own
(`db = "ssh:DEST"`: an agent there starts it listening on TCP, hosts/database.py).
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping

from stackbench.keys import reject_unknown

KEYS = ("client", "server", "db", "server_address", "db_address", "ssh_config")
KINDS = ("local", "namespace", "ssh:DEST")
SSH = "ssh:"


@dataclass(frozen=True)
class Client:
    kind: str  # "local" | "namespace" | "ssh"
    destination: str | None = None  # ssh only, as written

    @property
    def label(self) -> str:
        return f"ssh:{self.destination}" if self.kind == "ssh" else self.kind


@dataclass(frozen=True)
class Hosts:
    clients: tuple[Client, ...] = (Client("local"),)
    ssh_config: str | None = None  # a path (a str: the checked plan is stored as JSON)
    server: Client = Client("local")  # the database goes with it
    server_address: str | None = None  # what the clients connect to (default: SSH's arrival address)
    db: Client | None = None  # the workload's database on a host of its own (None: beside the stack)
    db_address: str | None = None  # what the stack connects to it by (default: SSH's arrival address)

    @property
    def single_local(self) -> bool:
        """Today's lab: one engine, here. Nothing to spread, merge or synchronise."""
        return self.clients == (Client("local"),)

    @property
    def remote(self) -> list[Client]:
        return [c for c in self.clients if c.kind == "ssh"]

    @property
    def remote_server(self) -> bool:
        return self.server.kind == "ssh"

    @property
    def remote_db(self) -> bool:
        return self.db is not None


def parse(data: dict[str, Any], source: str, fail: Callable[[str], Exception]) -> Hosts:
    table = data.get("hosts")
    if table is None:
        return Hosts()
    if not isinstance(table, dict):
        raise fail('hosts must be a table: [hosts] with client = ["local", "ssh:user@host"]')
    reject_unknown(table, KEYS, "[hosts]", fail)
    server_text = table.get("server", "local")
    if not isinstance(server_text, str):
        raise fail(f"hosts.server takes one of {', '.join(KINDS)}, not {server_text!r}")
    server = _client(server_text, fail, "server")
    db_text = table.get("db", server_text)
    db = None
    if db_text != server_text:
        if not isinstance(db_text, str) or not db_text.startswith(SSH):
            raise fail(f"hosts.db = {db_text!r} while hosts.server = {server_text!r}: the database runs beside the "
                       "stack (leave db out) or on a host of its own, reached over SSH (\"ssh:DEST\")")
        db = _client(db_text, fail, "db")
    address = _address(table, "server_address", server.kind == "ssh", "the clients reach a server on another host by",
                       "hosts.server", fail)
    db_address = _address(table, "db_address", db is not None, "the stack reaches a database on another host by",
                          "hosts.db", fail)
    raw = table.get("client", ["local"])
    raw = [raw] if isinstance(raw, str) else raw
    if not isinstance(raw, list) or not raw or not all(isinstance(c, str) for c in raw):
        raise fail('hosts.client takes a list of "local", "namespace" or "ssh:DEST", e.g. ["local", "ssh:bench@loadbox"]')
    clients = tuple(_client(c, fail) for c in raw)
    config = table.get("ssh_config")
    if config is not None:
        if not isinstance(config, str):
            raise fail(f"hosts.ssh_config must be a path, not {config!r}")
        path = Path(config).expanduser()
        if not path.is_absolute():
            path = Path(source).resolve().parent / path
        if not path.is_file():
            raise fail(f"hosts.ssh_config: no file {path}")
        config = str(path)
    return Hosts(clients, config, server, address, db, db_address)


def _address(table: dict, key: str, applies: bool, what: str, role: str,
             fail: Callable[[str], Exception]) -> str | None:
    address = table.get(key)
    if address is None:
        return None
    if not isinstance(address, str) or not address or not applies:
        raise fail(f'hosts.{key} is the address {what} (a string, with {role} = "ssh:DEST")')
    try:
        ipaddress.ip_address(address)
    except ValueError:
        raise fail(f"hosts.{key} {address!r} is not an IP address") from None
    return address


def _client(text: str, fail: Callable[[str], Exception], role: str = "client") -> Client:
    if text in ("local", "namespace"):
        return Client(text)
    destination = text[len(SSH):].strip() if text.startswith(SSH) else ""
    if destination and not destination.startswith("-"):  # "-o…" would be an option, not a host
        return Client("ssh", destination)
    raise fail(f"hosts.{role} {text!r}: {'each client' if role == 'client' else 'the ' + role} is one of "
               f"{', '.join(KINDS)}")


def resume_flags(hosts: Mapping[str, Any]) -> str:
    """What `run --resume` of a stored run needs besides its id (`hosts`: the checked
    plan's, as stored): a plan with SSH clients needs --allow-remote-target again, and so
    does one with its server on another host."""
    named = [*(hosts.get("clients") or []), hosts.get("server") or {}, hosts.get("db") or {}]
    return " --allow-remote-target" if any(c.get("kind") == "ssh" for c in named) else ""
