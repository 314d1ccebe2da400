"""A stackbench command as the HTML report writes it for its reader to type: the way the
README and docs/ type it — the program in the virtualenv scripts/setup.sh makes in the
checkout (`make bench` runs that one too). The terminal's own hints name the bare command:
whoever reads them has just run one."""

from __future__ import annotations

PROGRAM = ".venv/bin/stackbench"


def typed(commands: str) -> str:
    """"stackbench run plan.toml" → ".venv/bin/stackbench run plan.toml", each of several
    joined by "; "; any other text as it is."""
    return "; ".join(PROGRAM + c.removeprefix("stackbench") if c.startswith("stackbench ") else c
                     for c in commands.split("; "))
