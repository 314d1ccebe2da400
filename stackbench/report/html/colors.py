"""One colour per stack label, the same on every chart of a report: the Okabe–Ito
palette (Okabe & Ito 2002, "Color Universal Design"), which stays distinguishable
under the common colour-vision deficiencies; yellow last (weak on white). Past eight
stacks the colours repeat with a dashed line (class `dN`).

Colours are CSS variables, so `prefers-color-scheme: dark` swaps in lighter tones."""

from __future__ import annotations

from typing import Iterable

LIGHT = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#000000", "#B8A000")
DARK = ("#56B4E9", "#E69F00", "#2FD1A0", "#FF7A33", "#E08BC0", "#9AD3F5", "#DDDDDD", "#F0E442")


class Palette:
    def __init__(self, labels: Iterable[str]):
        self.index = {label: i for i, label in enumerate(dict.fromkeys(labels))}

    def cls(self, label: str) -> str:
        """`c3` (and ` d` when the colours have gone round once): for SVG and legends."""
        i = self.index.setdefault(label, len(self.index))
        return f"c{i % len(LIGHT)}" + (" d" if i >= len(LIGHT) else "")


def css() -> str:
    """The variables and the classes that use them (stroke for lines, fill for marks)."""
    light = "".join(f"--c{i}:{c};" for i, c in enumerate(LIGHT))
    dark = "".join(f"--c{i}:{c};" for i, c in enumerate(DARK))
    classes = "".join(f".c{i}{{stroke:var(--c{i});fill:var(--c{i});color:var(--c{i})}}" for i in range(len(LIGHT)))
    return (f":root{{{light}}}@media (prefers-color-scheme:dark){{:root{{{dark}}}}}"
            f"@media print{{:root{{{light}}}}}{classes}.d{{stroke-dasharray:6 3}}")
