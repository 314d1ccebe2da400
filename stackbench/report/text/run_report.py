"""What `run`, `show` and `scenario run` print for a stored run, from its analysis
(analysis/run.py): the run's header, then the answer — a sentence per thing the run asked
and the workloads it names (report/words/answer.py, the HTML report's words too) — then
the verdicts it rests on — the verdicts against the
baseline, the capacities', what TLS costs, the way down against the way up, the visitors
alone against with others, one line on how to read them all (or, without verdicts, why
and what would give them) — then the tables they come from: every cell, or with
repetitions a summary per stack and question, with a short legend and the warnings, each
stack's time to steady (with the plan's `steady`), the clients, the curves of a walk, the
capacity searches, the cost per TLS connection, how often each cache answered and the
visitor classes. `explain`: every legend in full where it belongs (`--explain`); without
it, one line at the end says so."""

from __future__ import annotations

from typing import Mapping, TextIO

from stackbench.analysis.run import RunAnalysis
from stackbench.model.tuning import StoredTuning
from stackbench.report.text import visits as visits_text
from stackbench.report.text import (cache as cache_text, capacity as capacity_text, classes as classes_text,
                                    clients as clients_text,
                                    curves as curves_text, legend, protocols as protocols_text, table,
                                    verdicts as verdicts_text, warmup as warmup_text)
from stackbench.report.text.style import Style
from stackbench.report.words import answer as answer_words, tuning as tuning_words, warnings as warning_words

PROTOCOLS_TITLE = ("what TLS costs each stack, and what HTTP/2 changes: HTTPS against clear HTTP/1.1, HTTP/2 against "
                   "HTTPS where both were asked (else against clear HTTP/1.1), on the same stack, workload, level and "
                   "connections")
RAMPS_TITLE = "the way down against the way up (each stack against itself)"
BACKGROUNDS_TITLE = "the measured visitors alone against with other visitors beside them (each stack against itself)"


def render(a: RunAnalysis, out: TextIO, *, every_run: bool = False, wide: bool = False,
           explain: bool = False, tunings: Mapping[int, StoredTuning] | None = None) -> None:
    """`tunings`: the stored tunings by id (the run's tuned stacks name theirs)."""
    table.header(a.run, out, a.warnings.machine)
    the_answer(a, out)
    tuned(a, tunings or {}, out)
    answers(a, out, explain)
    tables(a, out, every_run=every_run, wide=wide, explain=explain)
    more = legend.pointer(a.run.id, a.repeated and not every_run, explain)
    if more:
        out.write("\n" + Style(out).dim(more) + "\n")


def the_answer(a: RunAnalysis, out: TextIO) -> None:
    """The answer first: each sentence wrapped, then the workloads it names, a line each,
    indented under it."""
    said = answer_words.sentences(a)
    if not said:
        return
    style = Style(out)
    out.write("\n" + style.bold("the answer") + "\n")
    for text in said:
        out.write(legend.wrap(text) + "\n")
    load = answer_words.load_line(a)
    for line in [f"{wid}: {what}" for wid, what in answer_words.workloads(a)] + ([load] if load else []):
        out.write(style.dim(legend.wrap("  " + line)) + "\n")


def tuned(a: RunAnalysis, tunings: Mapping[int, StoredTuning], out: TextIO) -> None:
    """Under the answer, each tuned stack tuned on a mix with slow requests: what one slow
    request costs the other visitors, measured by its tuning (report/words/tuning.py)."""
    lines = [line for label, i in a.run.checked.tunings.items() if i in tunings
             if (line := tuning_words.tuned_line(label, tunings[i])) is not None]
    for line in lines:
        out.write(legend.wrap(line) + "\n")


def answers(a: RunAnalysis, out: TextIO, explain: bool = False) -> None:
    """Every comparison the run answers, block by block, and how to read them."""
    blocks = [b for b in (a.verdicts, a.protocols, a.ramps, a.backgrounds) if b and b.for_metric("throughput")]
    said: set[str] = set()  # with `explain`, each note once over the blocks
    if a.verdicts and a.verdicts.verdicts:
        verdicts_text.render(a.verdicts, out, explain=explain, said=said)
    if a.capacity:
        capacity_text.render_verdicts(a.capacity.verdicts, out, explain)
    for vs, title in ((a.protocols, PROTOCOLS_TITLE), (a.ramps, RAMPS_TITLE), (a.backgrounds, BACKGROUNDS_TITLE)):
        if vs:
            verdicts_text.render(vs, out, title=title, explain=explain, said=said)
    if blocks and not explain:
        out.write(Style(out).dim(legend.VERDICTS) + "\n")
    if a.no_verdicts:
        _no_verdicts(a, out)


def _no_verdicts(a: RunAnalysis, out: TextIO) -> None:
    """Why there are no verdicts between stacks, and what would give them (the HTML
    report says the same: report/words/warnings.py)."""
    nv = a.no_verdicts
    assert nv is not None
    now = warning_words.show_now(nv, a.run.id)
    text = (f"no verdicts between stacks: {warning_words.no_verdicts_why(nv)} — add "
            + " and ".join(f"`{line.split('  #')[0].strip()}`" for line in warning_words.plan_lines(nv))
            + " to the plan" + (f", or `{now}` now" if now else ""))
    out.write("\n" + Style(out).warn(legend.wrap(text)) + "\n")


def tables(a: RunAnalysis, out: TextIO, *, every_run: bool = False, wide: bool = False,
           explain: bool = False) -> None:
    """What the answers come from: the cells or their summary, then each part's table."""
    run = a.run
    levels = a.level_cells
    if every_run or levels:
        out.write("\n")
    if every_run:
        table.render(run, a.cells, a.warnings_every, out, wide, explain)
    elif not a.repeated:
        if levels:
            table.render(run, levels, a.warnings, out, wide, explain)
        # capacity searches only: each probe's shortfall is in its search's table
    else:
        verdicts_text.render_summary(a.summaries, run.stop, out, wide, a.verdicts, explain)
        table.warnings(a.warnings_every, out)
    warmup_text.render(a.steady, out)
    if a.clients:
        clients_text.render(a.clients, out)
    if a.walked:
        curves_text.render(a.curves, out, explain)
    if a.capacity:
        capacity_text.render(a.capacity.results, a.capacity.slo, (), out, stacks=a.capacity.stacks, explain=explain)
    protocols_text.render(a.handshake_costs, out, explain)
    cache_text.render(a.cache, out, explain)
    visits_text.render(a.visits, out, explain)
    if a.backgrounds:
        classes_text.render(a.classes, out, explain)
