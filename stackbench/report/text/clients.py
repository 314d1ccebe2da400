"""The load's clients for a terminal, after the table (report/words/clients.py words them)."""

from __future__ import annotations

from typing import TextIO

from stackbench.analysis.clients import Clients
from stackbench.report.text.style import Style
from stackbench.report.words.clients import lines


def render(found: Clients, out: TextIO) -> None:
    style = Style(out)
    out.write("\n" + style.bold(f"clients: the load of each cell spread over {len(found.clients)}, their latency "
                                "histograms merged exactly") + "\n")
    for line in lines(found):
        out.write(f"  {line}\n")
