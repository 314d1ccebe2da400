"""What every chart of the report is: a title, a sentence on how to read it, a legend
(the stacks' colours), one or more SVG panels, and the same figures as a table. A chart
module returns Figures; page.py lays them out."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from html import escape
from typing import Mapping, Protocol, Sequence

from stackbench.analysis.run import RunAnalysis
from stackbench.analysis.tuning import Review
from stackbench.model.cell import StoredCell
from stackbench.model.cost import CgroupSample, ProcessMemory
from stackbench.model.run import StoredRun
from stackbench.report.html import tables
from stackbench.report.html.colors import Palette
from stackbench.report.words.commands import typed


class Reader(Protocol):
    """What the report reads beyond a run's cells (stackbench.store.Store has these)."""

    def samples(self, cell_id: int) -> list[CgroupSample]: ...
    def processes(self, cell_id: int) -> list[ProcessMemory]: ...
    def syscalls(self, cell_id: int) -> dict[str, int]: ...
    def config_files(self, config_hash: str) -> dict[str, str]: ...


@dataclass
class Context:
    """One run, as every chart module sees it: its analysis (every figure and statistic a
    chart shows), the store for what a chart draws beyond it — a cell's samples,
    processes, system calls, its configuration files — and the tunings its stacks took."""

    analysis: RunAnalysis
    store: Reader
    palette: Palette
    # The stored tunings behind the run's tuned stacks, by the stack's label (or, in a
    # tuning's own candidates run, by the tuned stack's id): commands/report.py reads them.
    tunings: Mapping[str, Review] = field(default_factory=dict)

    @property
    def run(self) -> StoredRun:
        return self.analysis.run

    @property
    def cells(self) -> list[StoredCell]:
        return self.analysis.stored_cells

    @property
    def baseline(self) -> str | None:
        return self.analysis.baseline

    def anchor(self, *parts: object) -> str:
        """An HTML id unique in the report: run id + the parts, slugged."""
        slug = "-".join(re.sub(r"[^a-z0-9]+", "-", str(p).lower()).strip("-") for p in parts)
        return f"r{self.run.id}-{slug}"


@dataclass
class Figure:
    anchor: str
    title: str
    how_to_read: str
    panels: list[str]  # SVG documents, top to bottom
    head: Sequence[str]
    rows: Sequence[Sequence[str]]
    legend: list[tuple[str, str]] = field(default_factory=list)  # (label, colour class)
    marks: list[str] = field(default_factory=list)  # what dashed lines / hollow points mean
    command: str = ""  # the terminal command that prints the same (or more)
    # Why the figure is folded under its section (page.py puts the folded ones of a section
    # in one <details> saying this): it has little to show (two points a line) or details
    # a chart above sums up. "": shown.
    fold: str = ""


def render(f: Figure) -> str:
    items = "".join(f'<li><svg class="swatch" viewBox="0 0 24 12" aria-hidden="true"><line class="line {cls}" '
                    f'x1="1" x2="23" y1="6" y2="6"/><circle class="dot {cls}" cx="12" cy="6" r="4"/></svg>'
                    f"{escape(label)}</li>" for label, cls in f.legend)
    legend = f'<ul class="legend">{items}</ul>' if items else ""
    marks = "".join(f"<li>{escape(m)}</li>" for m in f.marks)
    return (f'<figure id="{f.anchor}"><figcaption><h4>{escape(f.title)}</h4><p>{escape(f.how_to_read)}</p>'
            f"</figcaption>{legend}{''.join(f.panels)}"
            + (f'<ul class="marks">{marks}</ul>' if marks else "")
            + (f'<p class="cmd">In a terminal: <code>{escape(typed(f.command))}</code></p>' if f.command else "")
            + tables.numbers(f.head, f.rows) + "</figure>")


def legend_of(palette: Palette, labels: Sequence[str]) -> list[tuple[str, str]]:
    return [(label, palette.cls(label)) for label in dict.fromkeys(labels)]
