"""The report as one HTML document: first each sizing the runs measured sizes of (its
answer and chart, sizing.py), then per run the answers, the charts (each with its numbers
as a table), then how to reproduce it. Inline CSS honours
`prefers-color-scheme` and prints cleanly; there is no script beyond one line that
unfolds the tables for printing, and nothing is fetched when the file is opened."""

from __future__ import annotations

from html import escape
from typing import Callable, Mapping, Sequence

from stackbench import __version__
from stackbench.analysis.run import RunAnalysis
from stackbench.analysis.sizing import SizingAnswer
from stackbench.analysis.tuning import Review
from stackbench.report.html import (answers, by_level, colors, costs, figure, latency, protocols, reproduce,
                                    sizing, timeline, tuning, visits)
from stackbench.report.html.figure import Context, Figure, Reader

# The charts, in the order a reader asks: how fast, how long one waits, what it costs,
# what happened over time, where the work goes; last, how a tuned stack's pool was sized.
SECTIONS: list[tuple[str, list[Callable[[Context], list[Figure]]]]] = [
    ("Throughput", [by_level.throughput]),
    ("Visits", [visits.visits]),
    ("Protocols", [protocols.throughput, protocols.cpu]),
    ("Latency", [latency.spectra, latency.against_throughput, latency.capacity, by_level.page_load]),
    ("Memory and CPU", [by_level.memory, by_level.cpu, costs.pss]),
    ("Second by second", [timeline.seconds]),
    ("System calls", [costs.syscalls]),
    ("Caches", [costs.cache]),
    ("Tuning", [tuning.curves]),
]


def render(runs: list[RunAnalysis], store: Reader, generated_at: str,
           tunings: Mapping[int, Mapping[str, Review]] | None = None,
           sizings: Sequence[tuple[SizingAnswer, str | None]] = ()) -> str:
    """`tunings`: by run id, the reviews of the stored tunings its stacks took, by the
    stack's label; `sizings`: the sizings whose sizes these runs measured, each answer with
    its SLO in words, drawn above the runs — the answer first (commands/report.py)."""
    palette = colors.Palette([*(label for r in runs for label in r.stack_labels),
                              *(s.stack for a, _ in sizings for s in a.stacks)])
    contexts = [Context(r, store, palette, (tunings or {}).get(r.run.id, {})) for r in runs]
    title = "stackbench report: " + ", ".join([*(f"sizing {a.sizing.id} ({a.sizing.name})" for a, _ in sizings),
                                               *(f"run {r.run.id} ({r.run.plan_name})" for r in runs)])
    nav = "".join([*(f'<li><a href="#{sizing.anchor(a)}">sizing {a.sizing.id}: the machine to buy</a></li>'
                     for a, _ in sizings),
                   *(f'<li><a href="#{c.anchor("run")}">run {c.run.id}: {escape(c.run.plan_name)}</a></li>'
                     for c in contexts)]) if len(contexts) + len(sizings) > 1 else ""
    body = "".join(sizing.section(a, slo, palette) for a, slo in sizings) + "".join(_run(c) for c in contexts)
    return (f'<!doctype html><html lang="en"><head><meta charset="utf-8">'
            f'<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}{colors.css()}</style></head><body><main>"
            f"<header><h1>{escape(title)}</h1><p class=\"meta\">Made by stackbench {escape(__version__)} on "
            f"{escape(generated_at)} from the results store. Hover over a point or bar for its figures; every "
            "chart's numbers are in the table folded under it.</p>"
            + (f"<nav><ul>{nav}</ul></nav>" if nav else "")
            + f"</header>{body}</main>"
            '<script>addEventListener("beforeprint",()=>document.querySelectorAll("details.numbers")'
            ".forEach(d=>d.open=true))</script></body></html>")


def _run(ctx: Context) -> str:
    a = ctx.analysis
    r = a.run
    reps = a.repetitions
    facts = (f"plan {r.plan_name} · {r.status} · started {r.started_at} · {len(a.cells)} cells"
             + (f" · {reps} repetitions" if reps > 1 else ""))
    stacks = "".join(f'<li><span class="chip {ctx.palette.cls(label)}"></span>{escape(label)}</li>'
                     for label in a.stack_labels)
    charts, toc, ids = [], [], set()
    for name, makers in SECTIONS:
        figs = [f for make in makers for f in make(ctx)]
        if not figs:
            continue  # no data for it in this run: no empty chart
        for f in figs:  # two labels may slug alike: ids stay unique
            while f.anchor in ids:
                f.anchor += "-x"
            ids.add(f.anchor)
        anchor = ctx.anchor("charts", name)
        shown, folded = [f for f in figs if not f.fold], [f for f in figs if f.fold]
        toc.append(f'<li><a href="#{anchor}">{escape(name)}</a> ({len(shown)}'
                   + (f" + {len(folded)} folded" if folded else "") + ")</li>")
        charts.append(f'<h3 id="{anchor}">{escape(name)}</h3>' + "".join(figure.render(f) for f in shown)
                      + (f'<details class="more"><summary>{escape(_folded(folded))}</summary>'
                         + "".join(figure.render(f) for f in folded) + "</details>" if folded else ""))
    contents = (f'<nav class="toc"><ul><li><a href="#{ctx.anchor("answers")}">The verdicts</a></li>{"".join(toc)}'
                f'<li><a href="#{ctx.anchor("reproduce")}">Reproduce it</a></li></ul></nav>')
    return (f'<section class="run" id="{ctx.anchor("run")}"><h2>Run {r.id}: {escape(r.plan_name)}</h2>'
            f"{answers.the_answer(ctx)}<p class=\"meta\">{escape(facts)}</p>"
            f'<ul class="stacks">{stacks}</ul>{contents}{answers.render(ctx)}'
            f'<section class="charts">{"".join(charts) or "<p>Nothing was measured: no charts.</p>"}</section>'
            f"{reproduce.render(ctx)}</section>")


def _folded(figs: list[Figure]) -> str:
    """A folded group's summary: how many charts, and why they are folded (the first's reason)."""
    n = len(figs)
    return f"{n} chart{'s' if n > 1 else ''} folded: {figs[0].fold}"


CSS = """
:root{--bg:#fff;--fg:#1b1b1b;--muted:#5f6368;--grid:#e3e3e3;--panel:#f6f7f8;--better:#0a7a3d;--worse:#b3261e;
--warn:#8a5a00;--border:#d0d4d8;color-scheme:light dark}
@media (prefers-color-scheme:dark){:root{--bg:#16181b;--fg:#e6e6e6;--muted:#a0a6ad;--grid:#30343a;--panel:#1f2226;
--better:#5fd38d;--worse:#ff8a80;--warn:#f0b429;--border:#3a3f45}}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--fg);font:16px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,
"Helvetica Neue",Arial,sans-serif}
main{max-width:68rem;margin:0 auto;padding:1.5rem 1.25rem 4rem}
h1{font-size:1.6rem;margin:.2rem 0}h2{font-size:1.4rem;margin:2.5rem 0 .2rem;border-bottom:2px solid var(--border)}
h3{font-size:1.2rem;margin:2rem 0 .6rem}h4{font-size:1.02rem;margin:1.2rem 0 .3rem}h5{margin:.8rem 0 .2rem}
a{color:inherit}.meta,.note,figcaption p,.marks{color:var(--muted);font-size:.9rem}
code,pre{font:13px/1.45 ui-monospace,"DejaVu Sans Mono",Menlo,Consolas,monospace}
pre{background:var(--panel);padding:.6rem .8rem;overflow-x:auto;border-radius:4px;white-space:pre}
nav ul,.stacks,.legend{list-style:none;padding:0;display:flex;flex-wrap:wrap;gap:.3rem 1.2rem;margin:.4rem 0}
.toc{font-size:.92rem}
.chip{display:inline-block;width:.9em;height:.9em;border-radius:2px;margin-right:.4em;vertical-align:-.1em;
background:currentColor}
.stacks li{font-weight:600}
.answer{font-size:1.08rem;margin:.6rem 0 .4rem}.answer p{margin:.3rem 0}
ul.workloads{list-style:none;padding:0;margin:.2rem 0 .8rem;color:var(--muted);font-size:.9rem}
ul.workloads li{margin:.1rem 0}ul.workloads code{color:var(--fg)}
h5.panel{margin:.6rem 0 0;font-size:.95rem}h5.panel .what{font-weight:400;color:var(--muted)}
figure>svg{max-width:52rem}details.more{margin:.6rem 0 1.6rem}details.more>summary{font-size:.95rem}
ul.verdicts{padding-left:1.2rem}ul.verdicts>li{margin:.35rem 0}
ul.verdicts>li.better::marker{color:var(--better)}ul.verdicts>li.worse::marker{color:var(--worse)}
li.better strong{color:var(--better)}li.worse strong{color:var(--worse)}
.also{color:var(--muted)}
.no-verdicts{border-left:4px solid var(--warn);background:var(--panel);padding:.4rem 1rem;margin:1rem 0}
ul.warnings{padding-left:1.2rem}ul.warnings li{margin:.4rem 0}ul.warnings li.gate::marker{content:"✕  ";
color:var(--worse)}
.where{display:block;color:var(--muted);font-size:.85rem}
figure{margin:1.4rem 0 2rem;padding:0}
figcaption h4{margin:0}figcaption p{margin:.15rem 0 .3rem}
svg{display:block;width:100%;height:auto;overflow:visible}
.legend{font-size:.9rem}.legend li{display:flex;align-items:center;gap:.35rem}
.swatch{width:24px;height:12px;display:inline-block}
svg text{fill:var(--fg);font:12px system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif;stroke:none}
svg .tick,svg .bar-value,svg .ref-label{fill:var(--muted);font-size:11px}
svg .axis-title{font-weight:600}
svg .grid{stroke:var(--grid);stroke-width:1}svg .axis{stroke:var(--muted);fill:none;stroke-width:1}
svg .line{fill:none;stroke-width:2.2}svg .line.dash{stroke-dasharray:7 4}
svg .dot{stroke-width:1.6}svg .dot.hollow{fill:var(--bg)}
svg .ring{fill:none;stroke:var(--fg);stroke-width:1.6}svg .note{font-size:11px;font-weight:600}
svg .wh{fill:none;stroke-width:1.6}svg .wh.ci{stroke:var(--fg)}
svg .bar{stroke:none;opacity:.85}svg .bar.faint{opacity:.3}svg .ref{stroke:var(--worse);stroke-dasharray:5 4;stroke-width:1.5}
svg circle:hover,svg rect:hover,svg path.dot:hover{opacity:1;stroke:var(--fg);stroke-width:2}
details{margin:.4rem 0}summary{cursor:pointer;color:var(--muted);font-size:.9rem}
table{border-collapse:collapse;font-size:.86rem;margin:.4rem 0;display:block;overflow-x:auto;max-width:100%}
th,td{padding:.2rem .6rem;border-bottom:1px solid var(--border);text-align:left;vertical-align:top}
th{font-weight:600}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
@media print{:root{--bg:#fff;--fg:#1b1b1b;--muted:#5f6368;--grid:#e3e3e3;--panel:#f6f7f8;--better:#0a7a3d;
--worse:#b3261e;--warn:#8a5a00;--border:#d0d4d8}body{font-size:11pt}main{max-width:none;padding:0}
nav,.toc{display:none}figure{break-inside:avoid}h2,h3{break-after:avoid}pre{white-space:pre-wrap}
details.numbers{display:block}}
"""
