"""Which cells a report shows when it shows one cell per stack (a latency spectrum,
memory per process, system calls, a timeline): per workload and keep-alive mode the
highest load level the plan asked, and of a stack's runs there the one with the median
throughput — a real run, not an average of runs (an average of spectra is no run's
spectrum)."""

from __future__ import annotations

from typing import Any, Iterable

from stackbench.analysis import figures, questions, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


def top_questions(cells: Iterable[StoredCell]) -> list[Question]:
    """Per (workload, keep-alive, protocol and handshake): the highest level asked — the
    most clients, or the highest rate — on the way up when a ramp walked it both ways."""
    best: dict[tuple[Any, ...], tuple[tuple[Any, ...], Question]] = {}
    for c in questions.levels(cells):
        q = questions.of(c)
        rank = (q.rate is not None, q.rate or q.concurrency, q.leg != "down")
        key = (q.workload, q.keepalive, q.protocol, q.handshake)
        if key not in best or rank > best[key][0]:
            best[key] = (rank, q)
    return sorted((q for _, q in best.values()), key=Question.sort_key)


def representative(cells: Iterable[StoredCell]) -> StoredCell | None:
    """Of one stack's runs of one question: the valid run with the median throughput
    (the lower middle of an even count); among all measured runs when none was valid;
    None when none was measured."""
    measured = [c for c in cells if c.engine is not None]
    valid = [c for c in measured if not verdicts.invalid_reasons(c)] or measured
    ranked = sorted(valid, key=lambda c: (figures.of(c).throughput or 0.0, c.seq))
    return ranked[(len(ranked) - 1) // 2] if ranked else None


def per_stack(cells: Iterable[StoredCell], q: Question) -> dict[str, StoredCell]:
    """{stack label: its representative run of `q`}, stacks in run order."""
    by: dict[str, list[StoredCell]] = {}
    for c in sorted(questions.levels(cells), key=lambda c: c.seq):
        if questions.of(c) == q:
            by.setdefault(c.stack_label, []).append(c)
    out = {}
    for label, cs in by.items():
        chosen = representative(cs)
        if chosen is not None:
            out[label] = chosen
    return out
