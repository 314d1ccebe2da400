"""A stack left up for the user's own tools (`stackbench serve`): where it answers, what it
runs and on which cores. The runner makes it once the stack is up and verified
(runner/serve.py); the terminal prints it (report/text/serve.py). Not stored."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from stackbench.engine.result import Negotiated


@dataclass(frozen=True)
class ServedStack:
    label: str
    description: str
    url: str  # clear-text HTTP/1.1: "http://127.0.0.1:PORT"
    # HTTPS beside it when a TLS protocol was asked: HTTP/1.1, and HTTP/2 where the front
    # negotiates it (ALPN); None without TLS.
    tls_url: str | None
    ca_file: Path | None  # the run's own CA (PEM), what a client must trust for tls_url
    protocols: tuple[str, ...]  # what was asked (planning/protocols.py names)
    # What the TLS port agreed, as the start's verification read it back (ALPN, version,
    # cipher, group): offered http/1.1 alone, and offered h2 and http/1.1 (a front that
    # falls back to HTTP/1.1 answers the second with http/1.1). None without TLS.
    https: Negotiated | None
    h2: Negotiated | None
    paths: dict[str, tuple[str, ...]]  # each workload's URLs (a page first, then its assets)
    rundir: Path  # the private run directory: configs, logs, sockets
    docroot: Path  # what is served: in the run directory, or a tree of the workload's own
    files: tuple[str, ...]  # the rendered configs, relative to rundir
    pids: dict[str, list[int]]  # each server (a workload's services too): its processes
    server_cpus: list[int]  # the cores the stack's servers are pinned to
    engine_cpus: list[int]  # the cores a run's load engine takes: where the user's tools belong
    # The start's logins file (workloads/login.py: the readers' accounts and this start's
    # passwords, 0600) and the page to log in at; None: nobody logs in to this workload.
    logins: Path | None = None
    login_path: str | None = None
