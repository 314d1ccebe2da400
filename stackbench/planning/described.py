"""What a plan's workloads are, in one line each, for the reports that name them
("php-hello: a PHP script printing "Hello World" (11 bytes)"): the workload table's
descriptions (docs/reference/workloads.md), read without building what a workload serves."""

from __future__ import annotations

from typing import Any, Mapping

from stackbench import workloads
from stackbench.workloads import app as app_workload


def workload(workload_id: str, plan: Mapping[str, Any] | None = None) -> str | None:
    """The line of a workload a stored run measured; the user's application by its plan's
    [app] table (never checked again: the tree may be gone); None for an id this version
    does not know."""
    if workload_id == app_workload.ID:
        table = (plan or {}).get("app")
        root = table.get("docroot") if isinstance(table, dict) else None
        return f"your own PHP application{f' at {root}' if root else ''} (the plan's [app] table)"
    return workloads.describe(workload_id)
