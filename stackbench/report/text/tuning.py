"""A tuning on the terminal: the question, what the memory probe found, every candidate's
figure with its interval, the choice and why, and the line a plan takes."""

from __future__ import annotations

import json
from typing import Any, TextIO

from stackbench.analysis.tuning import SLO_ERRORS, SLO_LATENCY, TIE_BAND, Reason, Review, Trial
from stackbench.report.text import grid

MiB = 1 << 20

# How a failed repetition is named in the candidates' table (analysis/outcomes.py's codes).
FAILURE_WORDS = {
    "unserved": "clients unserved", "target_down": "refused connections", "no_requests": "nothing served",
    "requests_failed": "requests failed", "non_2xx": "error responses", "not_sent": "requests not sent",
    "server_died": "a server died", "oom_killed": "OOM kill", SLO_LATENCY: "latency over the SLO",
    SLO_ERRORS: "errors over the SLO",
}


def render(r: Review, out: TextIO) -> None:
    t = r.tuning
    out.write(f"{t.stack_id} tuned for {t.workload} at {t.concurrency} clients"
              f"{'' if t.keepalive else ' (no keep-alive)'}, {_machine(t.machine)}; "
              f"{_slo(r)}\n")
    m = t.memory
    if m:
        out.write(f"memory: a worker held {_mib(m.worker_bytes)} with {m.workers} of them running; the rest of "
                  f"the stack and its services {_mib(m.base_bytes)} → at most {m.bound} worker"
                  f"{'s' if m.bound != 1 else ''} fit in {m.headroom:.0%} of {_mib(m.limit_bytes)}\n")
    else:
        out.write("memory: the probe found no worker process; candidates go up to the clients\n")
    runs = len(r.trials[0].failures) if r.trials else 0
    out.write(f"\ncandidates, {runs} runs each (figure: responses a second, geometric mean [95 % interval]):\n")
    chosen = r.choice.chosen
    rows = [_row(tr, tr is chosen, tr is r.choice.best) for tr in r.trials]
    for line in grid.lines(("candidate", "figure", "interval", "served", "peak memory", ""), rows,
                           ("candidate", "interval", "served", "")):
        out.write("  " + line + "\n")
    out.write("\n" + _why(r) + "\n")
    out.write(f"  knobs = {{ {', '.join(f'{k} = {json.dumps(v)}' for k, v in t.knobs.items())} }}\n")
    runs_ids = [x for x in (t.probe_run_id, t.run_id, t.keepalive_run_id) if x]
    out.write(f"stored as tuning {t.id} (runs {', '.join(map(str, runs_ids))}); a plan's [[stacks]] entry for "
              f"{t.stack_id} takes it with knobs = \"tuned\" for the same question\n")


def _row(tr: Trial, chosen: bool, best: bool) -> tuple[str, ...]:
    label = _label(tr)
    center = tr.center
    interval = tr.interval()
    served = f"{len(tr.failures) - tr.failed}/{len(tr.failures)}"
    if tr.failed:
        codes = sorted({f for f in tr.failures if f is not None})
        served += " (" + ", ".join(FAILURE_WORDS.get(c, c) for c in codes) + ")"
    mark = "← chosen" if chosen else "← best" if best else ""
    if chosen and best:
        mark = "← chosen, the best"
    return (label, f"{center:.3g}" if center is not None else "—",
            f"[{interval[0]:.3g}, {interval[1]:.3g}]" if interval else "", served,
            _mib(tr.peak_mem_bytes) if tr.peak_mem_bytes else "", mark)


def _label(tr: Trial) -> str:
    base = f"{tr.size} worker{'s' if tr.size != 1 else ''}"
    return base + (", one request a connection" if tr.one_request else "")


def _why(r: Review) -> str:
    c, best = r.choice, r.choice.best
    name = _label(c.chosen)
    if c.reason is Reason.NONE_SERVED:
        return (f"chosen: {name} — no candidate served every run of this question; this one failed in the fewest "
                "(the stack does not serve this load on this machine at any pool size tried)")
    if c.reason is Reason.ONLY:
        return f"chosen: {name} — the only candidate the memory bound allowed"
    if c.reason is Reason.ONE_REQUEST:
        return (f"chosen: {name} — the pool's workers each hold a client's connection; closing it after every "
                "response served better than keeping it open")
    if c.reason is Reason.SMALLEST_TIED and best is not None and c.against_best:
        ratio, lo, hi = c.against_best
        return (f"chosen: {name} — the smallest pool as good as the best ({_label(best)}, {best.center:.3g}/s): "
                f"{ratio:.2f}× of it [{lo:.2f}, {hi:.2f}], within {TIE_BAND:.0%} and not significantly below; "
                "a smaller pool leaves memory to the page cache and the database")
    return f"chosen: {name} — the highest figure, and no smaller pool within {TIE_BAND:.0%} of it"


def _machine(m: dict[str, Any]) -> str:
    # the machine as the user asked it (cpus=1,memory=512M): its words are theirs
    parts = [f"{k} {v}" for k, v in m.items()]
    return "on a machine of " + ", ".join(parts) if parts else "on this machine's server cores"


def _slo(r: Review) -> str:
    if r.slo is None:
        return "a run serves the question when every client is served, without errors, no server dies"
    return f"SLO: {r.slo.describe()}; no server dies"


def _mib(n: int | None) -> str:
    return f"{n / MiB:.0f} MiB" if n else "—"
