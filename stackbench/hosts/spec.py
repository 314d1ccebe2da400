"""The plan's `[hosts]` table: where the server, the database and the load's clients run.

    [hosts]
    client = ["local", "ssh:bench@loadbox"]   # one or more; default ["local"]
    server = "local"                           # this machine (the lab runs here)
    db = "local"
    ssh_config = "lab-ssh.conf"                # optional: ssh -F (default: ~/.ssh/config)

A client is `local` (an engine on this machine, on the engine's cores), `namespace` (an
engine in the client namespace of the plan's network profile) or `ssh:DEST` (an engine
shipped to DEST and run there; DEST is anything `ssh` takes: user@host, an alias of
~/.ssh/config, ssh://user@host:port). SSH uses the user's own keys and agent in batch
mode: no password is asked for or stored.

The server and the database run where the lab runs: the lab starts, watches and
measures them through /proc, cgroups and perf, which do not reach over SSH. Put the lab
on the server's host and the clients on the others.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from stackbench.keys import reject_unknown

KEYS = ("client", "server", "db", "ssh_config")
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

    @property
    def single_local(self) -> bool:
        """Today's lab: one engine, here. Nothing to spread, merge or synchronise."""
        return self.clients == (Client("local"),)

    @property
    def remote(self) -> list[Client]:
        return [c for c in self.clients if c.kind == "ssh"]


def parse(data: dict[str, Any], source: str, fail: Callable[[str], Exception]) -> Hosts:
    table = data.get("hosts")
    if table is None:
        return Hosts()
    if not isinstance(table, dict):
        raise fail('hosts must be a table: [hosts] with client = ["local", "ssh:user@host"]')
    reject_unknown(table, KEYS, "[hosts]", fail)
    for role, what in (("server", "the stack"), ("db", "the database")):
        where = table.get(role, "local")
        if where != "local":
            raise fail(f"hosts.{role} = {where!r}: {what} runs where the lab runs (it is started, watched and "
                       "measured through /proc, cgroups and perf, which do not reach over SSH); run stackbench "
                       "on that host and put the clients on the others: hosts.client = [\"ssh:user@host\"]")
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
    return Hosts(clients, config)


def _client(text: str, fail: Callable[[str], Exception]) -> Client:
    if text in ("local", "namespace"):
        return Client(text)
    destination = text[len(SSH):].strip() if text.startswith(SSH) else ""
    if destination and not destination.startswith("-"):  # "-o…" would be an option, not a host
        return Client("ssh", destination)
    raise fail(f"hosts.client {text!r}: each client is one of {', '.join(KINDS)}")


def resume_flags(plan_checked: dict | None) -> str:
    """What `run --resume` of a stored run needs besides its id: a plan with SSH clients
    needs --allow-remote-target again."""
    clients = ((plan_checked or {}).get("hosts") or {}).get("clients") or []
    return " --allow-remote-target" if any(c.get("kind") == "ssh" for c in clients) else ""
