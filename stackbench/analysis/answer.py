"""The answer a run gives, question by question, before its evidence: for each thing the
plan asked (a workload in a connection mode, over its levels; on an axis other than the
stack's, within one stack), which sides are ahead of the baseline, which behind, which
not settled — from the verdicts already decided (verdicts.py, capacity_results.py),
never a new test — with what each costs beside it (its memory and CPU verdicts).

Only the verdicts' own comparisons are used: each side against the baseline. Two sides
ahead of the baseline are both ahead; which of them is faster was not asked (the family
Holm adjusts is the baseline's comparisons), so the answer names both and ranks neither.
The words are report/words/answer.py's, for both reports."""

from __future__ import annotations

from dataclasses import dataclass, replace
from statistics import median
from typing import Iterable, Sequence

from stackbench.analysis import verdicts as verdicts_mod
from stackbench.analysis.questions import Question
from stackbench.analysis.verdicts import Verdict, Verdicts

AHEAD, BEHIND, OPEN = "ahead", "behind", "open"


@dataclass(frozen=True)
class Standing:
    """A side against the baseline at one level: its verdict on the headline metric
    (throughput, or a capacity), and its memory and CPU verdicts on the same runs (None:
    not compared, e.g. a capacity search)."""

    verdict: Verdict
    memory: Verdict | None = None
    cpu: Verdict | None = None

    @property
    def label(self) -> str:
        return self.verdict.candidate

    @property
    def question(self) -> Question:
        return self.verdict.question

    @property
    def place(self) -> str:
        """AHEAD of the baseline (significantly, by a lower bound, or the baseline failed
        the load), BEHIND it, or OPEN (no significant difference, equivalent, not
        settled, neither serves)."""
        better = self.verdict.better
        return OPEN if better is None else AHEAD if better else BEHIND


@dataclass(frozen=True)
class Answer:
    """One thing the plan asked, over its levels: each side's standing against the baseline."""

    topic: Question  # the first level's question: its workload, connection mode, loop, …
    within: str | None  # the stack the sides are conditions of (an axis other than the stack's)
    baseline: str
    metric: str  # "throughput" or "capacity"
    standings: tuple[Standing, ...]  # by level, then side, in the verdicts' order
    self_comparison: bool = False  # the sides are two conditions of one stack (ramps, backgrounds)

    @property
    def levels(self) -> list[Question]:
        return list(dict.fromkeys(s.question for s in self.standings))

    @property
    def sides(self) -> list[str]:
        return list(dict.fromkeys(s.label for s in self.standings))

    def at(self, level: Question) -> list[Standing]:
        return [s for s in self.standings if s.question == level]

    def of(self, label: str) -> list[Standing]:
        return [s for s in self.standings if s.label == label]


def _topic(q: Question) -> Question:
    """What stays the same across a question's levels: the level taken out."""
    return replace(q, concurrency=0, rate=None if q.rate is None else 0.0, leg=None)


def of_verdicts(vs: Verdicts | None) -> list[Answer]:
    """The answers of one block of verdicts (the stacks', the protocols', …), one per topic
    in the order the block asks them."""
    if vs is None:
        return []
    return _group(vs.for_metric(verdicts_mod.THROUGHPUT.key), vs.baseline, "throughput", vs, vs.self_comparison)


def of_capacity(decided: Sequence[Verdict]) -> list[Answer]:
    """The capacity verdicts' answers (no cost verdicts beside them)."""
    if not decided:
        return []
    return _group(decided, decided[0].baseline, "capacity", None, False)


def _group(headline: Iterable[Verdict], baseline: str, metric: str, vs: Verdicts | None,
           self_comparison: bool) -> list[Answer]:
    # Each verdict against its own baseline: a block's may differ from it (the protocols'
    # block is "HTTP", its HTTP/2 sides are against HTTPS where both were asked), and an
    # answer that named the block's said "than HTTP" of HTTP/2 against HTTPS.
    by: dict[tuple[Question, str | None, str], list[Standing]] = {}
    for v in headline:
        by.setdefault((_topic(v.question), v.within, v.baseline), []).append(
            Standing(v, _beside(vs, v, verdicts_mod.MEMORY.key), _beside(vs, v, verdicts_mod.CPU_PER_REQUEST.key)))
    out = []
    for (_, within, against), standings in by.items():
        ordered = sorted(standings, key=lambda s: s.question.sort_key())  # stable: sides keep their order
        out.append(Answer(ordered[0].question, within, against, metric, tuple(ordered), self_comparison))
    return out


def _beside(vs: Verdicts | None, v: Verdict, key: str) -> Verdict | None:
    """The same comparison on another metric (the same question, sides and stack)."""
    if vs is None:
        return None
    return next((x for x in vs.for_metric(key) if x.question == v.question and x.within == v.within
                 and x.candidate == v.candidate and x.baseline == v.baseline), None)


def medians(v: Verdict) -> tuple[float | None, float | None]:
    """(baseline, candidate): each side's median of the runs the verdict took."""
    return (median(v.baseline_values) if v.baseline_values else None,
            median(v.candidate_values) if v.candidate_values else None)
