"""Typed errors. Each carries the sentence a user sees and the exit status the CLI returns.

The CLI's single top-level handler (cli.main) turns these into one line on stderr; a
traceback only appears with --debug (the pattern of HTTPie and hyperfine).
"""

from __future__ import annotations

from typing import Any


class StackbenchError(Exception):
    exit_code = 1
    # What a stack start that failed on another host left (its files, run directory,
    # machine events), carried back with the error (hosts/wire.py); None elsewhere.
    state: dict[str, Any] | None = None

    def __init__(self, message: str, *, detail: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.detail = detail  # e.g. the tail of a server's error log
        self.hint = hint  # what the user can do about it

    def render(self) -> str:
        parts = [f"error: {self.message}"]
        if self.detail:
            parts.append(_indent(self.detail.rstrip()))
        if self.hint:
            parts.append(f"hint: {self.hint}")
        return "\n".join(parts)


class UsageError(StackbenchError):
    """Bad input from the user: plan file, stack id, knob, flag."""

    exit_code = 2


class PlanError(UsageError):
    pass


class MissingBinary(StackbenchError):
    exit_code = 3

    def __init__(self, binary: str, package: str):
        super().__init__(
            f"{binary} is not installed",
            hint=f"apt-get install {package}   (or run ./scripts/setup.sh, which installs every stack)",
        )
        self.binary = binary
        self.package = package


class PortInUse(StackbenchError):
    exit_code = 4

    def __init__(self, port: int, host: str = "127.0.0.1"):
        super().__init__(
            f"port {host}:{port} is already in use",
            hint="stop whatever listens there, or leave `port` out of the plan so a free port is picked",
        )
        self.port = port


class ServerError(StackbenchError):
    """A server failed: config check, start, readiness, or it died while measured."""

    exit_code = 5


class ConfigCheckFailed(ServerError):
    pass


class ServerExited(ServerError):
    pass


class VerifyFailed(ServerError):
    """The stack answered, but not with what the workload must serve: not measured."""


class EngineError(StackbenchError):
    exit_code = 6


class StorageError(StackbenchError):
    """The lab cannot write where it must: the results store or a run directory (disk
    full, read-only, missing)."""

    exit_code = 7


class Interrupted(StackbenchError):
    exit_code = 130


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


class Crashed(StackbenchError):
    """The lab stopped on an error nobody planned for (a bug, or an operating-system error
    such as a pipe to a child that died): the run is stored as crashed, and says why."""

    exit_code = 9

    @classmethod
    def of(cls, error: BaseException) -> "Crashed":
        return cls(f"the lab stopped on an unexpected error: {type(error).__name__}: {error}",
                   hint="`--debug` shows where it happened; a run it stopped keeps the cells measured "
                        "before it")


class HostError(StackbenchError):
    """A client host of the plan's [hosts] cannot be reached or used (SSH refused, no
    key, another CPU architecture, no route)."""

    exit_code = 8
