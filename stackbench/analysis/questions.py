"""The question a cell answers: the same workload, load level (concurrency, or an open
loop's rate; in an up-then-down ramp, which way) and keep-alive mode, asked of several
stacks. Tables put a question's rows side by side; verdicts compare stacks
within a question; a cell is found by its stack label and question."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.model.cell import StoredCell


LEGS = {None: 0, "up": 0, "down": 1}


@dataclass(frozen=True)
class Question:
    workload: str
    concurrency: int  # closed loop: clients; open loop: the engine's connections
    keepalive: bool
    rate: float | None = None  # open loop: requests/s asked
    leg: str | None = None  # "up" / "down": the same level asked on the way up and down
    network: str = "loopback"  # where the measured visitors were (a network profile)
    background: str = "none"  # visitor classes loading the stack at the same time

    def sort_key(self) -> tuple:
        """Table order: by workload, closed loops before open ones, by level, the way up
        before the way down, keep-alive on before off; a level's networks and
        backgrounds in the order the plan is likely to list them (loopback, none first)."""
        return (self.workload, self.rate is not None, self.rate or 0, self.concurrency, LEGS.get(self.leg, 2),
                self.network != "loopback", self.network, self.background != "none", self.background,
                not self.keepalive)

    def level(self) -> str:
        """"c=16", "500/s", "c=16 down", "c=16 lan", "c=16 veth +slow"."""
        text = f"{self.rate:,g}/s" if self.rate is not None else f"c={self.concurrency}"
        return (text + (f" {self.leg}" if self.leg else "") + (f" {self.network}" if self.network != "loopback" else "")
                + (f" +{self.background}" if self.background != "none" else ""))


def of(cell: StoredCell) -> Question:
    return Question(cell.workload, cell.concurrency, cell.keepalive, cell.rate, cell.leg, cell.network or "loopback",
                    cell.background or "none")


def levels(cells: Iterable[StoredCell]) -> list[StoredCell]:
    """The cells that answer a question at a level the plan named: all but a capacity
    search's probes (whose rates the search chose; analysis/capacity.py reads those)."""
    return [c for c in cells if c.load != "capacity"]


def group(cells: Iterable[StoredCell]) -> dict[Question, list[StoredCell]]:
    """Cells by question, in table order; within a question, in run order."""
    groups: dict[Question, list[StoredCell]] = {}
    for c in sorted(levels(cells), key=lambda c: (of(c).sort_key(), c.seq)):
        groups.setdefault(of(c), []).append(c)
    return groups


def matching(cells: Iterable[StoredCell], label: str, *, workload: str | None = None,
             concurrency: int | None = None, keepalive: bool | None = None,
             repetition: int | None = None) -> list[StoredCell]:
    """The cells of stack `label` whose question (and repetition) fit what was given
    (None: any)."""
    return [c for c in cells if c.stack_label == label
            and (workload is None or c.workload == workload)
            and (concurrency is None or c.concurrency == concurrency)
            and (keepalive is None or c.keepalive == keepalive)
            and (repetition is None or c.repetition == repetition)]
