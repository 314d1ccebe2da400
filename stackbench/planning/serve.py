"""What `stackbench serve` asks — a stack, its knobs, the pages, the protocols, a machine
profile, a port — as a plan of one stack start, checked as a plan file is
(planning/plan.py): an unknown stack or knob, a workload or a protocol the stack cannot
serve is one line before anything starts. The runner then starts it as it starts any
plan's stack (runner/serve.py)."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

from stackbench.errors import PlanError, UsageError
from stackbench.planning import plan as plan_mod
from stackbench.stacks import registry
from stackbench.workloads import app as app_workload

SOURCE = "stackbench serve"


def plan(stack_id: str, knobs: dict[str, Any] | None = None, workloads: list[str] | None = None,
         protocols: list[str] | None = None, machine: dict[str, Any] | None = None, port: int | None = None,
         app: dict[str, Any] | None = None) -> plan_mod.Plan:
    """`workloads`: default the plan's default ones (the lab's documents), or "app" alone
    when `app` (a plan's [app] table) is given; `protocols`: default clear HTTP/1.1 (with
    "https" or "h2" the stack serves HTTPS beside it, as a run's TLS starts do)."""
    stack = registry.get(stack_id)  # worded for one stack, not as a plan's stacks[0]
    stack.resolve_knobs(knobs or {})
    if port is not None and not 1 <= port <= 65535:
        raise UsageError(f"--port must be 1..65535, not {port}")
    if app is None and app_workload.ID in (workloads or []):
        raise UsageError(f"workload {app_workload.ID!r} is your application: give it with --app PATH (its public "
                         "directory, or a plan file with an [app] table)")
    if app is not None and workloads and workloads != [app_workload.ID]:
        raise UsageError(f"--app serves your application (workload {app_workload.ID!r}) alone, not beside "
                         f"{', '.join(w for w in workloads if w != app_workload.ID)}")
    entry: dict[str, Any] = {"id": stack_id, "knobs": dict(knobs or {})}
    if port is not None:
        entry["port"] = port
    data: dict[str, Any] = {
        "name": f"serve {stack_id}", "stacks": [entry],
        "workloads": [app_workload.ID] if app is not None else list(workloads or plan_mod.DEFAULT_WORKLOADS),
        # Read by the preflight's limits only: no load is made.
        "concurrency": [1], "keepalive": [True], "syscalls": False,
    }
    for key, value in (("protocol", protocols), ("machine", machine), ("app", app)):
        if value:
            data[key] = value
    checked = plan_mod.parse(data, SOURCE)
    groups = checked.start_groups()
    if len(groups) > 1:
        own = next(w for w in checked.workloads if checked.workload(w).docroot)
        raise UsageError(f"workload {own!r} serves a tree of its own and cannot share a stack start with "
                         f"{', '.join(w for w in checked.workloads if w != own)}",
                         hint="serve one of them at a time")
    return checked


def app_table(path: str) -> dict[str, Any]:
    """--app PATH: a directory (its tree served as it is, "/" expected to answer 200), or a
    plan file whose [app] table says the rest (front controller, environment, URLs and
    their checks: docs/guide/your-application.md)."""
    p = Path(path)
    if p.is_dir():
        return {"docroot": str(p.resolve())}
    try:
        data = tomllib.loads(p.read_text())
    except OSError as e:
        raise UsageError(f"--app {path}: {e.strerror}",
                         hint="give your application's public directory, or a plan file with an [app] table") from None
    except tomllib.TOMLDecodeError as e:
        raise PlanError(f"--app {path}: not valid TOML: {e}") from None
    table = data.get("app")
    if not isinstance(table, dict):
        raise UsageError(f"--app {path}: the file has no [app] table",
                         hint="docs/guide/your-application.md shows one")
    return table
