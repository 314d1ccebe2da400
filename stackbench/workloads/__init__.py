"""Workloads: what the lab asks a stack to serve, and how it checks the answers.

The registry is this explicit table (no discovery by globbing, STYLE.md); the contract
is base.py; a new workload is a module beside documents.py and one line here.
"""

from __future__ import annotations

from stackbench.errors import UsageError
from stackbench.workloads.base import Check, Url, Workload
from stackbench.workloads.documents import PHP_100K, PHP_HELLO, STATIC_12B

WORKLOADS: dict[str, Workload] = {w.id: w for w in (
    STATIC_12B,
    PHP_HELLO,
    PHP_100K,
)}

# The docroot's index, so a stack answers / the same way whatever the workloads.
INDEX_HTML = b"<!doctype html><title>stackbench</title>\n"


def get(workload_id: str) -> Workload:
    try:
        return WORKLOADS[workload_id]
    except KeyError:
        known = ", ".join(WORKLOADS)
        raise UsageError(f"unknown workload {workload_id!r}; known workloads: {known}") from None


__all__ = ["Check", "Url", "Workload", "WORKLOADS", "INDEX_HTML", "get"]
