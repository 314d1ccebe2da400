"""The explicit table of stack families. A new family is added here, by hand: no
discovery by globbing at import time (STYLE.md: TechEmpower's toolset does that and it hurts)."""

from __future__ import annotations

from stackbench.errors import UsageError
from stackbench.stacks.apache_prefork_modphp import ApachePreforkModphp
from stackbench.stacks.base import Stack
from stackbench.stacks.nginx_fpm import NginxFpm

STACKS: dict[str, Stack] = {s.id: s for s in (
    NginxFpm(),
    ApachePreforkModphp(),
)}


def get(stack_id: str) -> Stack:
    try:
        return STACKS[stack_id]
    except KeyError:
        known = ", ".join(STACKS)
        raise UsageError(f"unknown stack {stack_id!r}; known stacks: {known}",
                         hint="`stackbench stacks` lists them with their knobs") from None
