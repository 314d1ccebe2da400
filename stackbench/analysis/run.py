"""One stored run's analysis, worked out once per command: everything the terminal
report, the HTML report, `export` and `show` say about a run — each cell's figures and
validity, the verdicts against the baseline, the summaries over repetitions, the curves
of a walk, the capacity searches and their verdicts, the way down against the way up,
the visitor classes, the figures per load level, the runs shown one per stack, and the
warnings. The renderers (report/) only format it: none computes a statistic, and however
many of them show the verdicts, they were computed once.

The verdicts are computed when the analysis is made (a baseline the run does not have is
the user's error, said before anything is printed); every other part the first time a
renderer asks for it, then kept — `export --verdicts` asks for nothing else."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Sequence

from stackbench.analysis import (answer, backgrounds, cache, capacity_results, cells as cells_mod, classes, clients,
                                 curves, levels, picks, protocols, ramps, run_warnings, stats, summary,
                                 verdicts, visits, warmup)
from stackbench.analysis.capacity import SLO
from stackbench.analysis.cells import CellAnalysis
from stackbench.analysis.protocols import HandshakeCost
from stackbench.analysis.questions import Question
from stackbench.analysis.verdicts import Verdict, Verdicts
from stackbench.model.cell import StoredCell
from stackbench.model.run import StoredRun, StoredSearch


@dataclass(frozen=True)
class Pick:
    """A question shown one run per stack (a latency spectrum, memory per process, system
    calls, a timeline): of each stack's runs, the one with the median throughput."""

    question: Question
    cells: dict[str, CellAnalysis]  # stack label: its representative run, stacks in run order


@dataclass(frozen=True)
class Capacity:
    slo: SLO
    results: tuple[capacity_results.CapacityResult, ...]  # one per search
    verdicts: tuple[Verdict, ...]  # the capacities against the baseline's; () without one
    stacks: tuple[capacity_results.StackCapacity, ...] = ()  # per stack: the edge of all its searches' probes


@dataclass(frozen=True)
class RunAnalysis:
    run: StoredRun
    cells: tuple[CellAnalysis, ...]  # every cell, in run order (a capacity search's probes too)
    searches: tuple[StoredSearch, ...]  # how each capacity search ended (Store.search_rows)
    baseline: str | None  # the stack the others are compared with: the one asked for, else the plan's
    verdicts: Verdicts | None  # None: no baseline

    @property
    def stored_cells(self) -> list[StoredCell]:
        """The cells as stored, in run order: what the analysis modules take."""
        return [c.cell for c in self.cells]

    @property
    def level_cells(self) -> tuple[CellAnalysis, ...]:
        """The cells that answer a level the plan named (all but capacity probes)."""
        return tuple(c for c in self.cells if c.at_level)

    @property
    def stack_labels(self) -> list[str]:
        """In the order the run measured them."""
        return list(dict.fromkeys(c.figures.stack_label for c in self.cells))

    @property
    def repetitions(self) -> int:
        """The highest repetition stored, counted from 1 (0: no cell)."""
        return max((c.figures.repetition for c in self.cells), default=-1) + 1

    @property
    def repeated(self) -> bool:
        """Cells of more than one repetition are stored (the terminal then summarizes)."""
        return len({c.figures.repetition for c in self.cells}) > 1

    @property
    def walked(self) -> bool:
        """The plan walked or swept the load (ramps, stages, rate sweeps): curves say the most."""
        return self.run.checked.load.walked

    @cached_property
    def summaries(self) -> list[summary.CellSummary]:
        """Each (question, stack) over its repetitions, valid runs only."""
        return summary.summarize(self.stored_cells)

    @cached_property
    def by_level(self) -> dict[str, list[levels.LevelPoint]]:
        """Per verdicts.METRICS key, each (question, stack) as a point against the load level."""
        return {m.key: levels.of(self.stored_cells, m.key, self.summaries) for m in verdicts.METRICS}

    @cached_property
    def visits(self) -> list[visits.VisitFigures]:
        """Each question of visits and stack: visits a second, a visit's duration, pages a
        visit (none without visits)."""
        return visits.by_question(self.stored_cells)

    @cached_property
    def curves(self) -> list[curves.Curve]:
        return curves.of(self.stored_cells)

    @cached_property
    def clients(self) -> clients.Clients | None:
        """What each of several load clients did; None when one machine sent the load."""
        return clients.of(self.stored_cells)

    @cached_property
    def capacity(self) -> Capacity | None:
        """None when the run stored no capacity search."""
        found = capacity_results.results(self.run, self.stored_cells, list(self.searches))
        parts = capacity_results.plan_parts(self.run)
        if not found or parts is None:  # results come only from a capacity run's plan parts
            return None
        slo, _ = parts
        pooled = capacity_results.stacks(found)
        decided = capacity_results.decide(found, self.baseline, pooled) if self.baseline else []
        return Capacity(slo, tuple(found), tuple(decided), tuple(pooled))

    @cached_property
    def ramps(self) -> Verdicts | None:
        """Each stack's way down against its way up; None when no level was walked both ways."""
        return ramps.decide(self.stored_cells)

    @cached_property
    def backgrounds(self) -> Verdicts | None:
        """The measured visitors alone against with other classes beside them; None without
        other classes."""
        return backgrounds.decide(self.stored_cells)

    @cached_property
    def protocols(self) -> Verdicts | None:
        """HTTPS and HTTP/2 against clear HTTP/1.1 on each stack (same workload, level and
        connection policy); None when no stack was asked both."""
        return protocols.decide(self.stored_cells, stats.band_of(self.run.checked.equivalence))

    @cached_property
    def answers(self) -> list[answer.Answer]:
        """What the run answers, question by question, before its evidence: the stacks'
        verdicts, the capacities', then what TLS and HTTP/2 change, the way down against
        the way up, the visitors beside (analysis/answer.py)."""
        return (answer.of_verdicts(self.verdicts) + answer.of_capacity(self.capacity.verdicts if self.capacity else ())
                + answer.of_verdicts(self.protocols) + answer.of_verdicts(self.ramps)
                + answer.of_verdicts(self.backgrounds))

    @cached_property
    def handshake_costs(self) -> list[HandshakeCost]:
        """The server's CPU per new TLS connection, per stack and handshake mode; [] when
        no stack was measured both kept alive and with a new connection per request."""
        return protocols.handshake_costs(self.stored_cells)

    @cached_property
    def classes(self) -> list[classes.ClassesRow]:
        """The visitor classes' table (medians over repetitions); [] without other classes."""
        return classes.of(self.cells) if self.backgrounds is not None else []

    @cached_property
    def picks(self) -> list[Pick]:
        """Per workload and keep-alive mode, the highest level asked, one run per stack."""
        stored = self.stored_cells
        analyzed = {id(c.cell): c for c in self.cells}
        return [Pick(q, {label: analyzed[id(c)] for label, c in picks.per_stack(stored, q).items()})
                for q in picks.top_questions(stored)]

    @cached_property
    def steady(self) -> list[warmup.StackSteady]:
        """Each stack's time to steady from its fresh starts; [] when the run warmed its
        stacks for a fixed time."""
        return warmup.of(self.stored_cells)

    @cached_property
    def cache(self) -> list[cache.HitRatio]:
        """How often a stack's cache answered, per question, over the valid runs."""
        return cache.by_question(self.stored_cells)

    @cached_property
    def warnings(self) -> run_warnings.Warnings:
        """Errors and caveats of the cells at a named level (what a table of them is read
        with), and a machine too noisy for tight verdicts."""
        return run_warnings.of(self.level_cells, self.run)

    @cached_property
    def warnings_every(self) -> run_warnings.Warnings:
        """Errors and caveats of every cell, capacity probes too."""
        return run_warnings.of(self.cells, self.run)

    @cached_property
    def no_verdicts(self) -> run_warnings.NoVerdicts | None:
        """Why the run has no verdicts between stacks, and what would give them; None
        when it has them (or sentences saying how many runs each one lacks)."""
        return run_warnings.no_verdicts(self.stack_labels, self.repetitions, self.verdicts is not None,
                                        bool(self.capacity))


def analyze(run: StoredRun, cells: Sequence[StoredCell], searches: Sequence[StoredSearch] = (),
            baseline: str | None = None) -> RunAnalysis:
    """`baseline`: a stack of the run to compare the others with instead of the plan's
    (UsageError when the run has no such stack); `searches`: Store.search_rows."""
    cells = list(cells)
    found = verdicts.for_run(run, cells, baseline)
    return RunAnalysis(run, cells_mod.of(cells), tuple(searches), baseline or run.checked.baseline, found)
