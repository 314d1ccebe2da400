"""Is a stack installed, and which versions of its servers are there."""

from __future__ import annotations

import functools
import os
import re
import shutil
from dataclasses import dataclass

from stackbench.errors import MissingBinary
from stackbench.servers.base import Requirement
from stackbench.stacks.base import Stack
from stackbench.upkeep.supervise import run_checked

# How each server tells its version (first match of VERSION_RE in the output).
VERSION_COMMANDS = {
    "nginx": ["nginx", "-v"],
    "apache2": ["apache2", "-v"],
    "php-fpm8.2": ["php-fpm8.2", "-v"],
    "php8.2": ["php8.2", "-v"],
    "php-cgi8.2": ["php-cgi8.2", "-v"],
    "varnishd": ["varnishd", "-V"],
    "lighttpd": ["lighttpd", "-v"],
    "h2o": ["h2o", "-v"],
    "caddy": ["caddy", "version"],
    "hitch": ["hitch", "--version"],
    "java": ["java", "-version"],
    # Jetty is jars, which print no version: the package's is Jetty's (9.4.57-1.1~deb12u1).
    "/usr/share/java/jetty9-server.jar": ["dpkg-query", "-W", "-f=${Version}", "libjetty9-java"],
    "hhvm": ["hhvm", "--version"],
    "/usr/local/lsws/bin/openlitespeed": ["/usr/local/lsws/bin/openlitespeed", "-v"],
}
# What a version is recorded and shown under, where the requirement is a file, not a name.
VERSION_NAMES = {"/usr/share/java/jetty9-server.jar": "jetty"}
VERSION_RE = re.compile(r"(\d+\.\d+(?:\.\d+)?)")


def present(req: Requirement) -> bool:
    if req.path.startswith("/"):
        return os.path.exists(req.path)
    return shutil.which(req.path, path=_search_path()) is not None


def missing(stack: Stack) -> list[Requirement]:
    return [r for r in stack.requirements() if not present(r)]


@dataclass(frozen=True)
class Availability:
    state: str  # "available" | "missing" (apt-get install fixes it) | "unavailable"
    detail: str  # the packages to install, or the reason; "" when available
    packages: tuple[str, ...] = ()


def availability(stack: Stack) -> Availability:
    """Can the stack run here, and if not what to do: one line for `stackbench stacks`."""
    gone = missing(stack)
    unpackaged = [r for r in gone if not r.package]
    if unpackaged:
        return Availability("unavailable", unpackaged[0].reason or f"{unpackaged[0].path} not found")
    if gone:
        pkgs = tuple(sorted({r.package for r in gone}))
        return Availability("missing", "apt-get install " + " ".join(pkgs), pkgs)
    reason = stack.unavailable()
    if reason:
        return Availability("unavailable", reason)
    return Availability("available", "")


def describe(stack: Stack) -> str:
    """available (versions) / missing: apt-get install ... / unavailable: reason."""
    a = availability(stack)
    if a.state == "available":
        return "available (" + ", ".join(f"{k} {v}" for k, v in versions(stack).items() if v) + ")"
    return f"{a.state}: {a.detail}"


def require(stack: Stack) -> None:
    a = availability(stack)
    if a.state == "missing":
        gone = missing(stack)
        raise MissingBinary(gone[0].path, " ".join(a.packages))
    if a.state == "unavailable":
        err = MissingBinary(stack.id, "")
        err.message = f"stack {stack.id!r} cannot run here: {a.detail}"
        err.args = (err.message,)
        err.hint = "`stackbench stacks` lists the stacks that can run on this machine"
        raise err


def require_workload(workload) -> None:
    """A workload's own packages (e.g. php8.2-mysql for WordPress)."""
    for req in workload.requirements:
        if not present(req):
            raise MissingBinary(req.path, req.package)


@functools.cache
def version(binary: str) -> str | None:
    argv = VERSION_COMMANDS.get(binary)
    if not argv or shutil.which(argv[0], path=_search_path()) is None:
        return None
    try:
        _, out = run_checked(argv, timeout=10)
    except OSError:
        return None
    m = VERSION_RE.search(out)
    return m.group(1) if m else None


def versions(stack: Stack) -> dict[str, str | None]:
    """Versions of every versioned binary a stack needs (and PHP's, for PHP stacks)."""
    result = {}
    for req in stack.requirements():
        if req.path in VERSION_COMMANDS:
            result[VERSION_NAMES.get(req.path, req.path)] = version(req.path)
        if "php" in req.package:
            result["php"] = version("php8.2") or version("php-fpm8.2")
    return result


def _search_path() -> str:
    # Servers live in /usr/sbin, which a non-root PATH often lacks.
    return os.environ.get("PATH", "") + ":/usr/sbin:/sbin"
