"""The contract every workload follows, like the stacks' (stacks/base.py).

A workload is what the lab asks a stack to serve: files it installs into the docroot
(or a docroot it points at), the URLs the load engine requests with their weights, how a
correct response looks (checked before anything is measured, as TechEmpower's
verifications do), what it needs installed (packages; PHP) and the services it brings
along (a database server, started in its own cgroup like a stack's servers).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from stackbench.stacks.base import Context, Requirement, Server


@dataclass(frozen=True)
class Check:
    """What a correct answer looks like: status, content type, exact body or length."""

    content_type: str = "text/html"
    body: bytes | None = None  # the exact body, or None to check only the length
    length: int | None = None
    status: int = 200

    def expected_length(self) -> int:
        return len(self.body) if self.body is not None else (self.length or 0)

    def problem(self, status: int, headers: dict[str, str], body: bytes) -> tuple[str, str | None] | None:
        """None when the response is right; else (what is wrong, a detail to show)."""
        if status != self.status:
            return f"status {status}, expected {self.status}", body[:300].decode(errors="replace")
        ctype = headers.get("content-type", "")
        if not ctype.startswith(self.content_type):
            return f"content type {ctype!r}, expected {self.content_type}", None
        if self.body is not None and body != self.body:
            return (f"body differs from the expected {len(self.body)} bytes (got {len(body)} bytes)",
                    body[:300].decode(errors="replace"))
        if self.body is None and len(body) != self.expected_length():
            return f"body is {len(body)} bytes, expected {self.expected_length()}", None
        return None


@dataclass(frozen=True)
class Url:
    path: str  # starts with /
    check: Check
    weight: int = 1  # share of the requests in a URL mix


@dataclass(frozen=True)
class Workload:
    id: str
    description: str
    urls: tuple[Url, ...]
    files: dict[str, bytes] = field(default_factory=dict)  # docroot-relative name -> content
    needs_php: bool = False
    requirements: tuple[Requirement, ...] = ()  # packages beyond the stack's own
    # Services the workload brings (e.g. a database), started before the stack's servers
    # and stopped after them; None for a workload that is only documents.
    services: Callable[[Context], list[Server]] | None = None

    @property
    def path(self) -> str:
        """The URL the load goes to (the first of a mix)."""
        return self.urls[0].path

    @property
    def check(self) -> Check:
        return self.urls[0].check

    def install(self, docroot: Path) -> None:
        """Write the workload's documents into a stack's docroot."""
        for name, content in self.files.items():
            path = docroot / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)
