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

from stackbench.servers.base import Context, Requirement, Server
from stackbench.workloads.login import Login


@dataclass(frozen=True)
class Check:
    """What a correct answer looks like: status, content type, and the body — exactly,
    by length, or (a real application, whose bytes the lab does not write) by what it
    must and must not contain, e.g. the site's title and no PHP warning."""

    content_type: str = "text/html"
    body: bytes | None = None  # the exact body, or None
    length: int | None = None  # the exact length, when the body is not given
    status: int = 200
    contains: tuple[bytes, ...] = ()
    forbids: tuple[bytes, ...] = ()

    def expected_length(self) -> int | None:
        """The body's length when the check pins it, else None."""
        return len(self.body) if self.body is not None else self.length

    def problem(self, status: int, headers: dict[str, str], body: bytes) -> tuple[str, str | None] | None:
        """None when the response is right; else (what is wrong, a detail to show)."""
        if status != self.status:
            # An error page that names its cause (WordPress's "Error establishing a database
            # connection", a PHP fatal error) says more than its first bytes.
            cause = next((n for n in self.forbids if n in body), None)
            if cause is not None:
                return (f"status {status}, expected {self.status}: the page says "
                        f"{cause.decode(errors='replace').strip('<b>/: ')!r}", around(body, cause))
            return f"status {status}, expected {self.status}", body[:300].decode(errors="replace")
        ctype = headers.get("content-type", "")
        if self.content_type and not ctype.startswith(self.content_type):
            return f"content type {ctype!r}, expected {self.content_type}", None
        if self.body is not None and body != self.body:
            return (f"body differs from the expected {len(self.body)} bytes (got {len(body)} bytes)",
                    body[:300].decode(errors="replace"))
        if self.body is None and self.length is not None and len(body) != self.length:
            return f"body is {len(body)} bytes, expected {self.length}", None
        for needle in self.contains:
            if needle not in body:
                return f"body ({len(body)} bytes) does not contain {needle.decode(errors='replace')!r}", \
                    body[:300].decode(errors="replace")
        for needle in self.forbids:
            if needle in body:
                return f"body contains {needle.decode(errors='replace')!r}", around(body, needle)
        return None


def around(body: bytes, needle: bytes) -> str:
    """The part of a body around what went wrong, for an error message."""
    at = body.find(needle)
    return body[max(0, at - 100):at + 200].decode(errors="replace")


# What PHP prints when a script warns or dies (display_errors is on in Debian's php.ini
# for the CLI only; FPM and mod_php log instead, but a misconfigured site shows them).
PHP_ERRORS = (b"<b>Warning</b>:", b"<b>Fatal error</b>:", b"<b>Notice</b>:", b"<b>Deprecated</b>:",
              b"<b>Parse error</b>:", b"Error establishing a database connection")


@dataclass(frozen=True)
class Url:
    path: str  # starts with /
    check: Check
    weight: int = 1  # share of the requests in a URL mix
    # A deliberately slow request: the page holds its PHP worker this many milliseconds
    # (WordPress's ?stackbench_slow=MS), so verification waits for at least that long, and a
    # tuning judges its SLO on the other pages (docs/methods/tuning.md); 0: an ordinary page.
    slow_ms: int = 0


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
    # Page mode: the first URL is a page, the others its assets, fetched the way a
    # browser does (the engine's --page/--assets); the result is pages/s and page load time.
    page_mode: bool = False
    page_conns: int = 6  # connections per visitor, as browsers open per host
    # A tree of its own (WordPress, the user's application) served instead of the lab's
    # generated docroot: returns its path, provisioning it first if needed. Never
    # written to by a stack (extra files such as Apache's .htaccess are not added).
    docroot: Callable[[], Path] | None = None
    front_controller: str | None = None  # "/index.php": pretty URLs go to it
    # Apache with AllowOverride All takes its rewrite rules from the tree's .htaccess
    # (WordPress's own) instead of the vhost.
    htaccess_rewrites: bool = False
    php_env: dict[str, str] = field(default_factory=dict)  # environment given to PHP
    php_ini: dict[str, str] = field(default_factory=dict)  # admin ini values given to PHP
    # How PHP's state in force (opcache) is read back: a probe script in the docroot, or
    # (a tree the lab must not write to) an auto_prepend file answering a probe header.
    probe: str = "script"  # "script" | "prepend" | "none"
    # How a visitor logs in (workloads/login.py); the accounts are each start's own
    # (Context.site_logins), made by the workload's services. None: nobody logs in.
    login: Login | None = None

    @property
    def path(self) -> str:
        """The URL the load goes to (the first of a mix; the page in page mode)."""
        return self.urls[0].path

    @property
    def check(self) -> Check:
        return self.urls[0].check

    @property
    def assets(self) -> tuple[Url, ...]:
        return self.urls[1:] if self.page_mode else ()

    def install(self, docroot: Path) -> None:
        """Write the workload's documents into a stack's docroot."""
        for name, content in self.files.items():
            path = docroot / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(content)

    def needs(self) -> set[str]:
        """What a stack must offer to serve this workload (Stack.offers)."""
        wanted = set()
        if self.needs_php:
            wanted.add("php")
        if self.front_controller:
            wanted.add("front_controller")
        return wanted
