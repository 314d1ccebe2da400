"""Columns aligned for a terminal: text left, numbers right."""

from __future__ import annotations

from typing import Iterable, Sequence


def lines(head: Sequence[str], body: Iterable[Sequence[str]], text_columns: Iterable[str] = ()) -> list[str]:
    """`head` then each row, every column as wide as its widest value; columns named in
    `text_columns` are left-aligned, the others right-aligned (numbers)."""
    body = [tuple(r) for r in body]
    left = set(text_columns)
    widths = [max([len(h)] + [len(r[i]) for r in body]) for i, h in enumerate(head)]

    def line(values: Sequence[str]) -> str:
        return "  ".join(v.ljust(w) if h in left else v.rjust(w) for v, w, h in zip(values, widths, head)).rstrip()

    return [line(head)] + [line(r) for r in body]
