"""`stackbench stacks`: every stack, whether it can run here, versions, knobs."""

from __future__ import annotations

from typing import TextIO

from stackbench.report.text.style import Style
from stackbench.stacks import installed
from stackbench.stacks.registry import STACKS


def render(out: TextIO) -> None:
    style = Style(out)
    for stack in STACKS.values():
        # available (versions) | missing: apt-get install … | unavailable: reason
        state = installed.describe(stack)
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
