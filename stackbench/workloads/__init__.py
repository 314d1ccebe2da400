"""Workloads: what the lab asks a stack to serve, and how it checks the answers.

The registry is this explicit table (no discovery by globbing, STYLE.md); the contract
is base.py; a new workload is a module beside documents.py and one line here.
"""

from __future__ import annotations

from stackbench.errors import UsageError
from stackbench.workloads.base import Check, Url, Workload
from stackbench.workloads.documents import (PHP_100K, PHP_HELLO, PHP_SLEEP, STATIC_12B, STATIC_100K,
                                            STATIC_JPEG_150K)
from stackbench.workloads.mixed_page import MIXED_PAGE
from stackbench.workloads.wordpress import WORDPRESS_HOME, WORDPRESS_MIX

# The lab's generated documents: small, written into every stack's docroot on demand.
DOCUMENTS: tuple[Workload, ...] = (
    STATIC_12B,
    STATIC_100K,
    STATIC_JPEG_150K,
    PHP_HELLO,
    PHP_100K,
    PHP_SLEEP,
    MIXED_PAGE,
)
WORKLOADS: dict[str, Workload] = {w.id: w for w in (
    *DOCUMENTS,
    WORDPRESS_HOME,
    WORDPRESS_MIX,
)}

# The docroot's index, so a stack answers / the same way whatever the workloads.
INDEX_HTML = b"<!doctype html><title>stackbench</title>\n"


def get(workload_id: str) -> Workload:
    try:
        return WORKLOADS[workload_id]
    except KeyError:
        known = ", ".join(WORKLOADS)
        raise UsageError(f"unknown workload {workload_id!r}; known workloads: {known}") from None


__all__ = ["Check", "Url", "Workload", "DOCUMENTS", "WORKLOADS", "INDEX_HTML", "get"]
