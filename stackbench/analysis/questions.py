"""The question a cell answers: the same workload, load level (concurrency, or an open
loop's rate; in an up-then-down ramp, which way), keep-alive mode and protocol (clear
HTTP/1.1, HTTPS or HTTP/2, and over TLS the handshake mode), asked of several stacks.
Tables put a question's rows side by side; verdicts compare stacks within a question,
so like is compared with like; a cell is found by its stack label and question.

The protocol of a question is the one *asked*: a stack asked for HTTP/2 that negotiated
HTTP/1.1 (Apache prefork) answers the HTTP/2 question — that is the result — and is
labelled so ("h2 → http/1.1", `spoken_label`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from stackbench.model.cell import StoredCell


LEGS = {None: 0, "up": 0, "down": 1}
CLEAR = "http/1.1"  # clear text (planning/protocols.py names every protocol)
PROTOCOL_ORDER = {CLEAR: 0, "https": 1, "h2": 2}
HANDSHAKE_ORDER = {None: 0, "keep-alive": 0, "resumed": 1, "full": 2}


@dataclass(frozen=True)
class Question:
    workload: str
    concurrency: int  # closed loop: clients; open loop: the engine's connections
    keepalive: bool
    rate: float | None = None  # open loop: requests/s asked
    leg: str | None = None  # "up" / "down": the same level asked on the way up and down
    network: str = "loopback"  # where the measured visitors were (a network profile)
    background: str = "none"  # visitor classes loading the stack at the same time
    protocol: str = CLEAR  # asked: http/1.1 | https | h2
    handshake: str | None = None  # TLS: keep-alive | resumed | full (None: clear text)
    logged_in: float | None = None  # visits: the share of visitors who logged in (None: not visits)

    @property
    def tls(self) -> bool:
        return self.protocol != CLEAR

    def mode(self) -> str:
        """How the visitors connect: "keep-alive", "no keep-alive", "https keep-alive",
        "https full handshakes", "h2 resumed handshakes"."""
        kept = "keep-alive" if self.keepalive else "no keep-alive"
        if not self.tls:
            return kept
        if not self.handshake:  # a TLS cell always has one; say what is known if it did not
            return f"{self.protocol} {kept}"
        return f"{self.protocol} {self.handshake}" + (" handshakes" if self.handshake != "keep-alive" else "")

    def sort_key(self) -> tuple[Any, ...]:
        """Table order: by workload, closed loops before open ones, by level, the way up
        before the way down, keep-alive on before off; a level's networks and
        backgrounds in the order the plan is likely to list them (loopback, none first)."""
        return (self.workload, self.rate is not None, self.rate or 0, self.concurrency, LEGS.get(self.leg, 2),
                self.network != "loopback", self.network, self.background != "none", self.background,
                PROTOCOL_ORDER.get(self.protocol, 9), self.protocol, not self.keepalive,
                HANDSHAKE_ORDER.get(self.handshake, 9), self.logged_in or 0.0)

    def level(self) -> str:
        """"c=16", "500/s", "c=16 down", "c=16 lan", "c=16 veth +slow", "c=16 50% logged in"."""
        text = f"{self.rate:,g}/s" if self.rate is not None else f"c={self.concurrency}"
        return (text + (f" {self.leg}" if self.leg else "") + (f" {self.network}" if self.network != "loopback" else "")
                + (f" +{self.background}" if self.background != "none" else "")
                + (f" {self.logged_in * 100:g}% logged in" if self.logged_in is not None else ""))


def of(cell: StoredCell) -> Question:
    return Question(cell.workload, cell.concurrency, cell.keepalive, cell.rate, cell.leg, cell.network or "loopback",
                    cell.background or "none", cell.protocol or CLEAR, cell.handshake, cell.logged_in)


def spoken(cell: StoredCell) -> str | None:
    """The HTTP the visitors really spoke: "http/1.1", "h2", "mixed" (the engine's word);
    without it, the protocol the stack negotiated when verified, else HTTP/1.1 for a
    cell asked HTTP/1.1 (clear or over TLS); None: not known."""
    if cell.engine is not None and cell.engine.protocol:
        return cell.engine.protocol
    if cell.negotiated is not None and cell.negotiated.alpn:
        return cell.negotiated.alpn
    return CLEAR if cell.protocol != "h2" else None


def spoken_label(cell: StoredCell) -> str:
    """The protocol in a table: "http/1.1", "https", "h2" — or "h2 → http/1.1" when a
    stack asked for HTTP/2 answered in HTTP/1.1 (a result, not a failure)."""
    asked = cell.protocol or CLEAR
    said = spoken(cell)
    if asked == "h2" and said and said != "h2":
        return f"h2 → {said}"
    return asked


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
