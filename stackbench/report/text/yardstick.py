"""`stackbench yardstick` on the terminal: the figure first, what it is, and how to carry
it (report/words/sizing.py words a sizing's core the same way)."""

from __future__ import annotations

from typing import TextIO

from stackbench.model.environment import Yardstick
from stackbench.report.words import sizing as words


def render(found: Yardstick, cpu_model: str | None, out: TextIO) -> None:
    where = f"core {found.cpu}" if found.cpu is not None else "a core"
    out.write(f"yardstick: {found.score:.0f}\n")
    out.write(f"  {words.yardstick_means(found)}, on {where} of {cpu_model or 'an unknown CPU'}\n")
    out.write(f"  carry it: `stackbench sizings ID --core {found.score:.0f}` says a sizing measured on another "
              "machine in cores like this one\n")
