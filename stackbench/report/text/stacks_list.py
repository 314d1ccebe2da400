"""`stackbench stacks`: every stack, whether it can run here, versions, knobs. What can
run here is asked of the machine by the command (stacks/installed.py); this renders it."""

from __future__ import annotations

from typing import TYPE_CHECKING, Sequence, TextIO

from stackbench.report.text.style import Style

if TYPE_CHECKING:
    from stackbench.stacks.base import Stack


def render(stacks: Sequence[tuple[Stack, str]], out: TextIO) -> None:
    """`stacks`: each stack in the registry's order with its state here: available
    (versions) | missing: apt-get install … | unavailable: reason."""
    style = Style(out)
    for stack, state in stacks:
        if not state.startswith("available"):
            state = style.warn(state)
        out.write(f"{style.bold(stack.id)}  {state}\n  {stack.description}\n")
        for knob in stack.knobs:
            choices = f" [{' | '.join(map(str, knob.choices))}]" if knob.choices else ""
            out.write(f"    {knob.name} = {_toml(knob.default)}{choices}  {style.dim(knob.help)}\n")
        out.write("\n")


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    return str(value)
