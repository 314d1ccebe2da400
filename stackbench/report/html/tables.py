"""HTML tables: every chart's numbers as a table under it (screen readers and copy-paste
get the figures; no number exists only in a picture). Cells are raw text, escaped here."""

from __future__ import annotations

import re
from html import escape
from typing import Sequence

_NUMBER = re.compile(r"^[−+-]?[\d,.]+( ?[%x×])?$|^-$")


def table(head: Sequence[str], rows: Sequence[Sequence[str]], caption: str | None = None) -> str:
    """Columns whose cells are all numbers (or '-') are right-aligned. No head: a table of
    name / value rows, the names as row headers."""
    width = len(head) or max((len(r) for r in rows), default=0)
    numeric = [bool(rows) and all(_NUMBER.match(str(r[i]).strip()) for r in rows) for i in range(width)]
    th = "".join(f'<th scope="col"{_n(numeric[i])}>{escape(h)}</th>' for i, h in enumerate(head))
    body = "".join("<tr>" + "".join(_cell(i, v, numeric[i], bool(head)) for i, v in enumerate(r)) + "</tr>"
                   for r in rows)
    cap = f"<caption>{escape(caption)}</caption>" if caption else ""
    return f"<table>{cap}" + (f"<thead><tr>{th}</tr></thead>" if head else "") + f"<tbody>{body}</tbody></table>"


def _cell(i: int, v: object, numeric: bool, headed: bool) -> str:
    if i == 0 and not headed:
        return f'<th scope="row">{escape(str(v))}</th>'
    return f"<td{_n(numeric)}>{escape(str(v))}</td>"


def numbers(head: Sequence[str], rows: Sequence[Sequence[str]], summary: str = "the numbers") -> str:
    """A table folded under a chart."""
    return f'<details class="numbers"><summary>{escape(summary)}</summary>{table(head, rows)}</details>'


def _n(numeric: bool) -> str:
    return ' class="n"' if numeric else ""
