"""The axes a comparison runs along. A comparison holds everything equal but one thing
and asks what that one thing changes: which stack serves (the plan's baseline against
the others), which protocol the visitors speak, which way a ramp walks, which visitors
are beside the measured ones, a knob's setting, the machine's size. An `Axis` says how a
cell reads on it — its side ("nginx + FPM", "HTTPS", "way down") — and what the cells
compared with each other share: the question with the axis's own dimension taken out,
and, where the sides are conditions of one stack, that stack (`within`).

verdicts.decide compares along any axis with the same statistics (the run is the unit,
Holm over the family): a new axis is one `Axis` here, not another copy of the
comparison. The sides stay what they are: a cell's stack label is never renamed after
its side, and its stack never folded into its workload.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Callable, Hashable, Iterable

from stackbench.analysis import questions
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell
from stackbench.model.environment import MachineShape
from stackbench.model.run import StoredRun
from stackbench.units import format_cpus


def _stack(cell: StoredCell) -> str:
    return cell.stack_label


def _no_stack(cell: StoredCell) -> None:
    return None


def _nothing(cell: StoredCell) -> None:
    return None


@dataclass(frozen=True)
class Group:
    """What the cells compared with each other share: the question (the axis's own
    dimension taken out), the stack when the sides are conditions of one, and what else
    the axis holds equal (`same`: a knob axis's other knobs)."""

    question: Question
    within: str | None = None
    same: Hashable = None

    def sort_key(self) -> tuple[str, tuple[Any, ...], str]:
        return (self.within or "", self.question.sort_key(), repr(self.same))


@dataclass(frozen=True)
class Axis:
    name: str  # "stack", "protocol", "ramp", "visitors", "knob", "machine" (the export's `axis`)
    side: Callable[[StoredCell], str]  # a cell's side in words: a verdict's baseline and candidate
    question: Callable[[StoredCell], Question] = questions.of  # with the axis's own dimension taken out
    # The stack the sides are conditions of ("nginx + FPM"); None on the stack axis,
    # where the sides are the stacks.
    within: Callable[[StoredCell], str | None] = _no_stack
    same: Callable[[StoredCell], Hashable] = _nothing  # anything else the compared cells must share

    def group(self, cell: StoredCell) -> Group:
        return Group(self.question(cell), self.within(cell), self.same(cell))

    @property
    def per_stack(self) -> bool:
        """The sides are two conditions of one stack, each stack against itself (a
        verdict then says "neither serves", not "neither stack serves")."""
        return self.within is not _no_stack


# -- the stack: every stack against the plan's baseline, question by question ------------
STACK = Axis("stack", _stack)

# -- the protocol: HTTPS against clear HTTP/1.1, HTTP/2 against HTTPS (protocols.py) -----
HTTP = "HTTP"  # the clear side: HTTP/1.1 without TLS
HTTPS, HTTP2 = "HTTPS", "HTTP/2"  # the TLS sides (a handshake mode after them: "HTTPS full handshakes")
PROTOCOL_NAMES = {"https": HTTPS, "h2": HTTP2}  # a plan's protocol → its side
NEW_CONNECTION = ("resumed", "full")  # handshake modes that open a connection per request


def protocol_side(cell: StoredCell) -> str:
    """A cell's protocol in words: "HTTP", "HTTPS", "HTTPS full handshakes", "HTTP/2",
    "HTTP/2 → http/1.1" (asked HTTP/2, spoke HTTP/1.1: a result, shown as such)."""
    if not questions.of(cell).tls:
        return HTTP
    label = questions.spoken_label(cell)
    name = PROTOCOL_NAMES.get(cell.protocol, cell.protocol) + (label[label.index(" →"):] if "→" in label else "")
    if cell.handshake in NEW_CONNECTION:
        name += f" {cell.handshake} handshakes"
    return name


# The keep-alive flag stays in the question: a TLS cell with a new connection per request
# (resumed, full) is asked without keep-alive, so it meets clear text without keep-alive.
PROTOCOL = Axis("protocol", protocol_side,
                lambda c: replace(questions.of(c), protocol=questions.CLEAR, handshake=None), _stack)

# -- the ramp: the way down against the way up on one running stack (ramps.py) -----------
UP, DOWN = "way up", "way down"
RAMP = Axis("ramp", lambda c: UP if c.leg == "up" else DOWN, lambda c: replace(questions.of(c), leg=None), _stack)

# -- the visitors: alone against with other visitor classes beside them (backgrounds.py) -
ALONE = "alone"


def visitors_side(background: str) -> str:
    return ALONE if background == "none" else f"with {background}"


VISITORS = Axis("visitors", lambda c: visitors_side(c.background or "none"),
                lambda c: replace(questions.of(c), background="none"), _stack)


# -- a knob's settings against each other, on one stack with its other knobs equal -------
def knob(name: str) -> Axis:
    """Settings of the knob `name` against each other ("pm.max_children = 8" against
    "pm.max_children = 32"): within each stack (its id: variants of one stack differ in
    their labels), the other knobs held equal."""
    return Axis("knob", lambda c: f"{name} = {_value(c.knobs.get(name))}", questions.of, lambda c: c.stack_id,
                lambda c: tuple(sorted((k, _value(v)) for k, v in c.knobs.items() if k != name)))


def _value(v: Any) -> str:
    return str(v).lower() if isinstance(v, bool) else str(v)


# -- machine sizes against each other: each stack on several machine profiles -----------
UNCONFINED = "no machine profile"


def machine(runs: Iterable[StoredRun]) -> Axis:
    """Machine profiles against each other ("1 CPU, 512 MiB" against "2 CPUs, 1 GiB"),
    each stack against itself: a cell's side is its run's profile (the plan's `machine`,
    as the run recorded it: docs/guide/machine-profiles.md), so the runs compared are
    one per size."""
    sizes = {r.id: size_words(r.environment.machine_profile) for r in runs}
    return Axis("machine", lambda c: sizes.get(c.run_id, UNCONFINED), questions.of, _stack)


def size_words(profile: MachineShape | None) -> str:
    """A recorded machine profile, shortly: "1 CPU, 512 MiB"; UNCONFINED without one."""
    if not profile:
        return UNCONFINED
    parts = []
    cpus, memory = profile.cpus, profile.memory_bytes
    if cpus is not None:
        parts.append(format_cpus(cpus))
    if memory is not None:
        parts.append(f"{memory / 2**30:g} GiB" if memory % 2**30 == 0 else f"{memory / 2**20:g} MiB")
    return ", ".join(parts) or UNCONFINED
