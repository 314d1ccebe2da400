"""The contract every stack family follows.

A *Stack* is a family (nginx-fpm, apache-prefork-modphp, ...) with named knobs. Given a
Context and knob values it returns its *Servers* (servers/base.py), back first (PHP-FPM
before nginx). Everything else (checking, starting, waiting, verifying, stopping) is
generic and lives in lifecycle.py, so a new family is mostly a template and a few lines
of composition.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from stackbench.errors import UsageError
from stackbench.servers.base import Context, Knob, Pool, Requirement, Server

__all__ = ["PROTOCOLS", "Pool", "Stack"]

# The protocols a plan can ask of a stack: clear HTTP/1.1, HTTP/1.1 over TLS, HTTP/2 over TLS.
PROTOCOLS = ("http/1.1", "https", "h2")


class Stack(ABC):
    id: str
    description: str
    knobs: tuple[Knob, ...]
    # Response headers whose values the load engine counts per cell, e.g. X-Cache on
    # caching stacks, so that a cache hit is never mistaken for a fast PHP stack.
    count_headers: tuple[str, ...] = ()
    # What the stack can do for a workload (Workload.needs): a static-only front would
    # offer neither, and a plan asking it for PHP is refused before anything starts.
    offers: frozenset[str] = frozenset({"php", "front_controller"})
    # What its front serves (protocols()): every packaged front here speaks TLS and
    # HTTP/2, but a family says so itself rather than inherit it.
    serves: frozenset[str] = frozenset({"http/1.1"})
    # The pool of processes that run PHP, which `stackbench tune` sizes for the machine
    # (analysis/tuning.py); None: nothing here to size (a static front).
    pool: Pool | None = None
    # How long a fresh start of it takes to serve at a steady rate under load, as measured
    # on the 2-core VMs the lab was built on (docs/servers.md), for a stack that warms up in
    # steps (a JVM's JIT): a steady warm-up (planning/steady.py) does not judge it before
    # then, or before its cap — a plateau between two steps looks steady to any rule on
    # throughput (bench/RESULTS.md, "Steady state before measuring") — and a dry run counts
    # it. 0: judged from its first windows.
    steady_after_s: float = 0.0

    @abstractmethod
    def requirements(self) -> list[Requirement]:
        """What must be installed, with the package to install."""

    @abstractmethod
    def servers(self, ctx: Context, knobs: dict[str, Any]) -> list[Server]:
        """The servers of this stack, in start order (back end first)."""

    def protocols(self, knobs: dict[str, Any]) -> set[str]:
        """What a plan can ask of this stack (a subset of PROTOCOLS). "h2" is asked, not
        promised: a front whose server falls back to HTTP/1.1 (Apache prefork: mod_http2
        refuses it) keeps it, and the negotiated protocol read back is the result."""
        return set(self.serves)

    def unavailable(self) -> str | None:
        """Why this stack cannot run here even with its requirements met, or None."""
        return None

    def resolve_knobs(self, given: dict[str, Any]) -> dict[str, Any]:
        """Defaults overlaid with the plan's values; unknown knobs are an error."""
        by_name = {k.name: k for k in self.knobs}
        unknown = sorted(set(given) - set(by_name))
        if unknown:
            known = ", ".join(sorted(by_name))
            raise UsageError(f"stack {self.id!r} has no knob {unknown[0]!r}; its knobs are: {known}")
        return {name: (knob.parse(given[name]) if name in given else knob.default)
                for name, knob in by_name.items()}
