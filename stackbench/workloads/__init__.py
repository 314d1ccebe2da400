"""Workloads: what the lab asks a stack to serve, and how it checks the answers.

The registry is this explicit table (no discovery by globbing: docs/architecture.md); the contract
is base.py; a new workload is a module beside documents.py and one line here.

Entries are built on first use: the generated JPEGs take ~0.35 s to encode, which
`stackbench show`, `runs` and every other command that serves nothing should not pay.
"""

from __future__ import annotations

import functools
from typing import Callable

from stackbench.errors import UsageError
from stackbench.workloads import documents, mixed_page, wordpress
from stackbench.workloads.base import Check, Url, Workload

# The lab's generated documents: small, written into every stack's docroot on demand.
_DOCUMENTS: dict[str, Callable[[], Workload]] = {
    "static-12b": lambda: documents.STATIC_12B,
    "static-100k": lambda: documents.STATIC_100K,
    "static-jpeg-150k": documents.static_jpeg_150k,
    "php-hello": lambda: documents.PHP_HELLO,
    "php-100k": lambda: documents.PHP_100K,
    "php-sleep": lambda: documents.PHP_SLEEP,
    "mixed-page": mixed_page.mixed_page,
}
_TABLE: dict[str, Callable[[], Workload]] = {
    **_DOCUMENTS,
    "wordpress-home": lambda: wordpress.WORDPRESS_HOME,
    "wordpress-mix": lambda: wordpress.WORDPRESS_MIX,
    "wordpress-mix-slow": lambda: wordpress.WORDPRESS_MIX_SLOW,
}
IDS: tuple[str, ...] = tuple(_TABLE)

# The docroot's index, so a stack answers / the same way whatever the workloads.
INDEX_HTML = b"<!doctype html><title>stackbench</title>\n"


@functools.cache
def get(workload_id: str) -> Workload:
    try:
        factory = _TABLE[workload_id]
    except KeyError:
        raise UsageError(f"unknown workload {workload_id!r}; known workloads: {', '.join(IDS)}") from None
    return factory()


# The generated workloads' descriptions, said without generating their images.
_DESCRIBED = {"static-jpeg-150k": documents.JPEG_150K_DESCRIPTION, "mixed-page": mixed_page.DESCRIPTION}


def describe(workload_id: str) -> str | None:
    """A workload's one line ("a 12-byte static HTML file"), never building what it
    serves; None for an id the table does not have (a stored run's, since removed)."""
    if workload_id in _DESCRIBED:
        return _DESCRIBED[workload_id]
    return get(workload_id).description if workload_id in _TABLE else None


def __getattr__(name: str):
    """WORKLOADS (id -> workload) and DOCUMENTS (the generated ones), built when asked."""
    if name == "WORKLOADS":
        return {wid: get(wid) for wid in IDS}
    if name == "DOCUMENTS":
        return tuple(get(wid) for wid in _DOCUMENTS)
    raise AttributeError(name)


__all__ = ["Check", "Url", "Workload", "IDS", "INDEX_HTML", "describe", "get"]
