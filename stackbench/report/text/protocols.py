"""What TLS costs each stack, for a terminal: the server's cost per new TLS connection,
in report/words/protocols.py's rows and columns."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.protocols import HandshakeCost
from stackbench.report.text import legend
from stackbench.report.text.style import Style
from stackbench.report.words.protocols import COST_NOTE, HEAD, cost_rows


def render(costs: Sequence[HandshakeCost], out: TextIO, explain: bool = True) -> None:
    """`explain`: how the cost per connection is made, in full, else a short legend."""
    if not costs:
        return
    style = Style(out)
    body = cost_rows(costs)
    widths = [max([len(x)] + [len(r[i]) for r in body]) for i, x in enumerate(HEAD)]

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) if i < 5 else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths))).rstrip()

    out.write("\n" + style.bold("the server's cost per new TLS connection (medians of valid runs)") + "\n")
    out.write(style.bold(line(HEAD)) + "\n")
    for r in body:
        out.write(line(r) + "\n")
    if explain:
        out.write(style.dim(COST_NOTE) + "\n")
    else:
        legend.short(["CPU µs/new conn"], out)
