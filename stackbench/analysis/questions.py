"""The question a cell answers: the same workload, concurrency and keep-alive mode, asked
of several stacks. Tables put a question's rows side by side; verdicts compare stacks
within a question; a cell is found by its stack label and question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping


@dataclass(frozen=True, order=True)
class Question:
    workload: str
    concurrency: int
    keepalive: bool

    def sort_key(self) -> tuple:
        """Table order: by workload, then concurrency, keep-alive on before off."""
        return (self.workload, self.concurrency, not self.keepalive)


def of(cell: Mapping) -> Question:
    return Question(cell["workload"], cell["concurrency"], bool(cell["keepalive"]))


def group(cells: Iterable[Mapping]) -> dict[Question, list[Mapping]]:
    """Cells by question, in table order; within a question, in run order."""
    groups: dict[Question, list[Mapping]] = {}
    for c in sorted(cells, key=lambda c: (of(c).sort_key(), c["seq"])):
        groups.setdefault(of(c), []).append(c)
    return groups


def matching(cells: Iterable[Mapping], label: str, *, workload: str | None = None,
             concurrency: int | None = None, keepalive: bool | None = None,
             repetition: int | None = None) -> list[Mapping]:
    """The cells of stack `label` whose question (and repetition) fit what was given
    (None: any)."""
    return [c for c in cells if c["stack_label"] == label
            and (workload is None or c["workload"] == workload)
            and (concurrency is None or c["concurrency"] == concurrency)
            and (keepalive is None or bool(c["keepalive"]) == keepalive)
            and (repetition is None or c["repetition"] == repetition)]
