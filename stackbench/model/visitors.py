"""The other visitor classes of a cell (the plan's `background`): what each of them got
while the measured visitors were measured, and what the server held meanwhile. The
runner makes it (the classes' engines: engine/background.py; the status pages:
monitor/status_pages.py); the store keeps it as cells.classes_json."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any, Mapping

SERVER = "server"  # the key the server's own counts are stored under, beside the classes'


@dataclass(frozen=True)
class ClassSummary:
    """One class's engine, summarized (engine/background.py's summary), or why it did
    not run (`error`: its connections and the sentence alone)."""

    connections: int = 0
    keepalive: bool | None = None
    read_rate: int | None = None
    rcvbuf: int | None = None
    requests_per_s: float | None = None
    completed: int | None = None
    failed: int | None = None
    non_2xx: int | None = None
    latency_p50_us: int | None = None
    latency_p99_us: int | None = None
    without_response: int | None = None
    duration_us: int | None = None
    error: str | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> ClassSummary:
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in d.items() if k in known})

    def as_dict(self) -> dict[str, Any]:
        """As engine/background.py made it, and as stored."""
        if self.error is not None:
            return {"connections": self.connections, "error": self.error}
        out = asdict(self)
        del out["error"]
        return out


@dataclass(frozen=True)
class ServerHeld:
    """What the server held over the window, from its own status pages."""

    busy_max: Mapping[str, int] = field(default_factory=dict)  # by server: the most workers busy at once
    unanswered: Mapping[str, int] = field(default_factory=dict)  # by server: polls its page did not answer
    procs_max: int | None = None  # the stack's processes, the most at once

    @property
    def busy(self) -> int | None:
        """The most workers busy, over every server (None: no page said)."""
        return sum(self.busy_max.values()) or None if self.busy_max else None


@dataclass(frozen=True)
class VisitorClasses:
    """By class name, what each got; and the server's counts (None: not recorded)."""

    others: Mapping[str, ClassSummary] = field(default_factory=dict)
    server: ServerHeld | None = None

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> VisitorClasses:
        held = d.get(SERVER)
        return cls({k: ClassSummary.from_dict(v) for k, v in d.items() if k != SERVER and isinstance(v, dict)},
                   ServerHeld(dict(held.get("busy_max") or {}), dict(held.get("unanswered") or {}),
                              held.get("procs_max")) if isinstance(held, dict) else None)

    def as_dict(self) -> dict[str, Any]:
        """As stored: each class by name, the server's counts under SERVER."""
        out: dict[str, Any] = {k: v.as_dict() for k, v in self.others.items()}
        if self.server is not None:
            out[SERVER] = {"busy_max": dict(self.server.busy_max), "unanswered": dict(self.server.unanswered),
                           "procs_max": self.server.procs_max}
        return out
