"""What a run's report warns of, decided once (pure) for the terminal and the HTML report
alike: a machine too noisy for tight verdicts, the servers' errors and the caveats of its
cells — each kind once with the cells it concerns, so a caveat met in 16 cells is one
warning, not 16 — and, for a run without verdicts, why and what would give them. The
thresholds live here; the sentences are the reports' (report/words/warnings.py, which
both renderers use)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Sequence

from stackbench.analysis import stats
from stackbench.analysis.cells import CellAnalysis
from stackbench.engine.result import CacheHits, Caveat, Text
from stackbench.model.run import StoredRun

# Above this coefficient of variation of the CPU-steadiness probe (a fixed loop timed on
# the server's core in 0.2 s slices before the run: monitor/cpu_noise.py) the machine's
# own speed moves more than the differences a plan usually asks about (docs/methods.md).
NOISY_CV = 0.05


@dataclass(frozen=True)
class NoisyMachine:
    """This machine's CPU speed varied before the run by `cv`: no run is steadier."""

    cv: float

    @property
    def blurred(self) -> float:
        """Differences smaller than about this share are likely to come out as "no
        significant difference": two of the machine's own CVs."""
        return 2 * self.cv


def noisy_machine(run: StoredRun) -> NoisyMachine | None:
    """None when the probe did not run or the machine was steady enough."""
    cv = run.environment.cpu_noise_cv
    return NoisyMachine(cv) if cv is not None and cv > NOISY_CV else None


@dataclass(frozen=True)
class ErrorGroup:
    """A server's error message, once per stack, with the cells that ended with it."""

    stack_label: str
    error: str
    cells: tuple[CellAnalysis, ...]

    @property
    def gate(self) -> bool:
        """It kept some of its runs out of verdicts: those that never came up (one that
        died under the load failed it — a result, in the verdicts)."""
        return any(not c.valid for c in self.cells)


@dataclass(frozen=True)
class EngineBound:
    """Of the runs whose load engine was at its limit, those where the server's cores
    were busy too (outcomes.py: both at their limit): they stay valid, their throughput
    a lower bound of the stack's."""

    busy: tuple[float, ...]  # the server's busy share in each of them
    runs: int  # the caveat's runs in all


@dataclass(frozen=True)
class CaveatGroup:
    """One kind of caveat — its code, and for the engine's free text ("text") the text —
    with each cell it concerns and the caveat as that cell had it (figures differ)."""

    cells: tuple[tuple[CellAnalysis, Caveat], ...]  # in the order the cells were given
    gate: bool  # it kept the first of those cells out of verdicts

    @property
    def first(self) -> Caveat:
        return self.cells[0][1]

    @property
    def varies(self) -> bool:
        """Its figures differ between cells (3 of 16 unserved here, 8 of 16 there): a
        warning then gives the first cell's, and says so."""
        return any(caveat.params != self.first.params for _, caveat in self.cells)

    @property
    def engine_bound(self) -> EngineBound | None:
        """For the engine's saturation: the runs in which the server was at its limit
        too; None for other caveats, or when none was."""
        if self.first.code != "engine_saturated":
            return None
        busy = tuple(c.outcome.server_busy for c, _ in self.cells if c.outcome.engine_bound and c.outcome.server_busy)
        return EngineBound(busy, len(self.cells)) if busy else None


@dataclass(frozen=True)
class Warnings:
    errors: tuple[ErrorGroup, ...]  # errors first: a failed cell explains the caveats after it
    caveats: tuple[CaveatGroup, ...]
    machine: NoisyMachine | None = None  # the run's machine, when too noisy for tight verdicts


def of(cells: Iterable[CellAnalysis], run: StoredRun | None = None) -> Warnings:
    errors: dict[tuple[str, str], list[CellAnalysis]] = {}
    seen: dict[tuple[str, str | None], list[tuple[CellAnalysis, Caveat]]] = {}
    for c in cells:
        f = c.figures
        if f.error:
            errors.setdefault((f.stack_label, f.error), []).append(c)
        for caveat in f.caveats:
            # A free-text caveat (the engine's own words) is grouped by its text, a cache's
            # hits by the header that counted them (Varnish's and nginx's are two caches).
            text = (caveat.facts.text if isinstance(caveat.facts, Text)
                    else caveat.facts.header if isinstance(caveat.facts, CacheHits) else None)
            seen.setdefault((caveat.code, text), []).append((c, caveat))
    return Warnings(
        tuple(ErrorGroup(label, error, tuple(cs)) for (label, error), cs in errors.items()),
        tuple(CaveatGroup(tuple(items), items[0][1].code in items[0][0].invalid_reasons) for items in seen.values()),
        noisy_machine(run) if run is not None else None)


@dataclass(frozen=True)
class NoVerdicts:
    """A run with no verdicts between stacks, why, and what would give them."""

    baseline_named: bool  # the plan names a baseline: the repetitions are too few
    repetitions: int  # each cell's, counted from 1
    suggested: str  # a stack of the run to name as the baseline

    @property
    def enough(self) -> bool:
        """Enough repetitions for a verdict already: a baseline given now gives them."""
        return self.repetitions >= stats.MIN_RUNS


def no_verdicts(labels: Sequence[str], repetitions: int, baseline_named: bool,
                capacity_verdicts: bool) -> NoVerdicts | None:
    """None when the run has verdicts — or sentences saying how many runs each one
    lacks (a baseline, and enough repetitions or a capacity search) — or no stack."""
    reps = max(repetitions, 1)
    if not labels or (baseline_named and (reps >= stats.MIN_RUNS or capacity_verdicts)):
        return None
    return NoVerdicts(baseline_named, reps, labels[0])
