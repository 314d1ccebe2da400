"""What a run's report warns of (pure): the servers' errors and the caveats of its cells,
each kind once with the cells it concerns — so a caveat met in 16 cells is one warning,
not 16. The sentences are the reports' (report/text/caveats.py)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from stackbench.analysis.cells import CellAnalysis
from stackbench.engine.result import Caveat


@dataclass(frozen=True)
class ErrorGroup:
    """A server's error message, once per stack, with the cells that ended with it."""

    stack_label: str
    error: str
    cells: tuple[CellAnalysis, ...]


@dataclass(frozen=True)
class CaveatGroup:
    """One kind of caveat — its code, and for the engine's free text ("text") the text —
    with each cell it concerns and the caveat as that cell had it (figures differ)."""

    cells: tuple[tuple[CellAnalysis, Caveat], ...]  # in the order the cells were given
    gate: bool  # it kept the first of those cells out of verdicts

    @property
    def first(self) -> Caveat:
        return self.cells[0][1]


@dataclass(frozen=True)
class Warnings:
    errors: tuple[ErrorGroup, ...]  # errors first: a failed cell explains the caveats after it
    caveats: tuple[CaveatGroup, ...]


def of(cells: Iterable[CellAnalysis]) -> Warnings:
    errors: dict[tuple[str, str], list[CellAnalysis]] = {}
    seen: dict[tuple[str, Any], list[tuple[CellAnalysis, Caveat]]] = {}
    for c in cells:
        f = c.figures
        if f.error:
            errors.setdefault((f.stack_label, f.error), []).append(c)
        for caveat in f.caveats:
            # A free-text caveat (the engine's own words) is grouped by its text.
            seen.setdefault((caveat.code, caveat.params.get("text")), []).append((c, caveat))
    return Warnings(
        tuple(ErrorGroup(label, error, tuple(cs)) for (label, error), cs in errors.items()),
        tuple(CaveatGroup(tuple(items), items[0][1].code in items[0][0].invalid_reasons) for items in seen.values()))
