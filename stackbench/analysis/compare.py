"""`stackbench compare A B`: two stored runs, or two sets of cells, in the verdict form of
a run. A is the baseline. Cells are matched by stack label and question; each matched
stack's question is shown as "LABEL · workload c=… …" and A and B take the place of two
stacks, so every comparison is one verdict and Holm adjusts them together."""

from __future__ import annotations

from dataclasses import dataclass, replace

from stackbench.analysis import questions, stats, verdicts
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class CompareResult:
    verdicts: verdicts.Verdicts
    notes: tuple[str, ...]


def compare(a: list[StoredCell], b: list[StoredCell], name_a: str, name_b: str, *, band: float = stats.DEFAULT_EQUIVALENCE,
            idle: tuple[str, str] = ("as-is", "as-is")) -> CompareResult:
    """`idle`: what each side's run did with its idle cores, in cpu_idle's words."""
    notes: list[str] = []
    if idle[0] != idle[1]:
        notes.append(f"note: the runs' idle cores differ (cpu_idle {idle[0]} in {name_a}, {idle[1]} in {name_b}): "
                     "on a virtual machine the stacks' throughput and CPU per request move with it, each its own "
                     "way (waking a halted core costs both the waker and the woken task several µs; polling spares "
                     "that and spins the idle cores); compare runs made the same way")
    labels_a = {c.stack_label for c in a}
    labels_b = {c.stack_label for c in b}
    shared = labels_a & labels_b
    if not shared and len(labels_a) == len(labels_b) == 1:
        # Two chosen sets of one stack each: compare them as they are.
        (la,), (lb,) = labels_a, labels_b
        notes.append(f"A = {la}, B = {lb}")
        qa, qb = {questions.of(c) for c in a}, {questions.of(c) for c in b}
        if len(qa) == len(qb) == 1 and qa != qb:
            notes.append(f"note: A and B answer different questions ({_q(*qa)} vs {_q(*qb)}); compared anyway")
            (q,) = qa
            b = [replace(c, workload=q.workload, concurrency=q.concurrency, keepalive=q.keepalive, rate=q.rate,
                         leg=q.leg, protocol=q.protocol, handshake=q.handshake) for c in b]
        cells = [_as(c, "", name_a) for c in a] + [_as(c, "", name_b) for c in b]
    else:
        cells = [_as(c, c.stack_label, name_a) for c in a if c.stack_label in shared]
        cells += [_as(c, c.stack_label, name_b) for c in b if c.stack_label in shared]
        for only, side in ((labels_a - shared, name_a), (labels_b - shared, name_b)):
            if only:
                notes.append(f"only in {side}, not compared: {', '.join(sorted(only))}")
    return CompareResult(verdicts.decide(cells, name_a, band=band), tuple(notes))


def _as(cell: StoredCell, label: str, side: str) -> StoredCell:
    """The cell as one of two 'stacks' named after its side; its stack joins the question."""
    workload = f"{label} · {cell.workload}" if label else cell.workload
    # run_id stays: cells of two runs may share a seq
    return replace(cell, stack_label=side, workload=workload)


def _q(q: questions.Question) -> str:
    return f"{q.workload} {q.level()} {q.mode()}"
