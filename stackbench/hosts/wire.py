"""What crosses the SSH channel between the lab and its agent on the server's host
(hosts/agent.py): one JSON object a line each way. A request names an operation and
carries an id; the answer echoes the id with `ok` (the operation's result) or `error`
(a StackbenchError as its class, sentence, detail and hint — raised again on the lab's
side as the same class, so a server that fails its config check there fails the cell
here exactly as a local one does).

A cell's cost goes over as its dataclasses' fields; times move between the two clocks
by the offset the lab measured (the host's clock minus the lab's), so the samples line up
with the engine's timeline.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from stackbench import errors
from stackbench.model.cost import CacheCounts, CgroupSample, MemoryEvents, ProcessMemory, StoredCost
from stackbench.monitor.session import CellReadings
from stackbench.monitor.status_pages import StatusSample
from stackbench.monitor.syscalls import WindowCounts


def request(rid: int, op: str, args: dict[str, Any]) -> bytes:
    return (json.dumps({"id": rid, "op": op, "args": args}) + "\n").encode()


def answer(rid: int, ok: Any = None, error: errors.StackbenchError | None = None) -> str:
    if error is not None:
        return json.dumps({"id": rid, "error": error_to_dict(error)}) + "\n"
    return json.dumps({"id": rid, "ok": ok}) + "\n"


def error_to_dict(e: errors.StackbenchError) -> dict:
    return {"kind": type(e).__name__, "message": e.message, "detail": e.detail, "hint": e.hint,
            "state": getattr(e, "state", None)}


def _kinds(base: type[errors.StackbenchError] = errors.StackbenchError) -> dict[str, type[errors.StackbenchError]]:
    """Every StackbenchError class loaded, by name (some live beside their module:
    NetworkError, MachineUnavailable)."""
    found: dict[str, type[errors.StackbenchError]] = {base.__name__: base}
    for sub in base.__subclasses__():
        found |= _kinds(sub)
    return found


def error_from_dict(d: dict, where: str) -> errors.StackbenchError:
    """The agent's error as the same class here (HostError for a class unknown here),
    saying where; a failed start's state (its files, run directory, machine events) rides
    along as `state`. Built without the class's own constructor, which may take other
    arguments (MissingBinary's)."""
    kind = _kinds().get(str(d.get("kind")), errors.HostError)
    e = kind.__new__(kind)
    errors.StackbenchError.__init__(e, f"{d.get('message')} (on {where})", detail=d.get("detail"), hint=d.get("hint"))
    e.state = d.get("state")
    return e


def readings_to_dict(readings: CellReadings) -> dict:
    return dataclasses.asdict(readings)


def readings_from_dict(d: dict, offset_us: int = 0) -> CellReadings:
    """What the agent's monitor read over a cell, its sample times moved to the lab's clock."""
    return CellReadings(
        cost=cost_from_dict(d.get("cost") or {}),
        samples=[CgroupSample(**{**s, "t_unix_us": s["t_unix_us"] - offset_us}) for s in d.get("samples") or []],
        processes=[ProcessMemory(**p) for p in d.get("processes") or []],
        status=[StatusSample(**{**s, "t_unix_us": s["t_unix_us"] - offset_us}) for s in d.get("status") or []],
        syscalls=syscalls_from_dict(d.get("syscalls")), sampler_cost_s=d.get("sampler_cost_s", 0.0))


def cost_from_dict(d: dict) -> StoredCost:
    return StoredCost(**{**d, "notes": tuple(d.get("notes") or ()),
                         "memory_events": events_from_dict(d.get("memory_events")),
                         "cache": CacheCounts.from_dict(d["cache"]) if d.get("cache") else None})


def events_from_dict(d: dict | None) -> MemoryEvents | None:
    return MemoryEvents.from_dict(d) if d is not None else None


def syscalls_from_dict(d: dict | None) -> WindowCounts | None:
    return WindowCounts(**d) if d else None
