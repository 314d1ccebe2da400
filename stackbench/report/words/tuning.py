"""A tuning in words, for the terminal (text/tuning.py) and the HTML report
(html/tuning.py): a candidate's name, how its runs failed, what the memory probe found,
and the one sentence on why the chosen pool was chosen (analysis/tuning.py's rules)."""

from __future__ import annotations

from typing import Any

from stackbench.analysis.capacity import SLO
from stackbench.analysis.tuning import NO_SLOW, SLO_ERRORS, SLO_LATENCY, TIE_BAND, Reason, Review, Trial
from stackbench.model.tuning import SlowCost, SlowPool, StoredTuning, TuningMemory
from stackbench.units import MiB, format_rate

# How a failed repetition is named (analysis/outcomes.py's codes, and the SLO's misses).
FAILURE_WORDS = {
    "unserved": "clients unserved", "target_down": "refused connections", "no_requests": "nothing served",
    "requests_failed": "requests failed", "non_2xx": "error responses", "not_sent": "requests not sent",
    "server_died": "a server died", "oom_killed": "OOM kill", SLO_LATENCY: "latency over the SLO",
    SLO_ERRORS: "errors over the SLO", NO_SLOW: "no slow request in the window (untested)",
}


def candidate(tr: Trial) -> str:
    """"4 workers", "1 worker, one request a connection"."""
    base = f"{tr.size} worker{'s' if tr.size != 1 else ''}"
    return base + (", one request a connection" if tr.one_request else "")


def failures(tr: Trial) -> str:
    """How its runs failed the question, each way once: "OOM kill, clients unserved"; ""
    when none did."""
    codes = sorted({f for f in tr.failures if f is not None})
    return ", ".join(FAILURE_WORDS.get(c, c) for c in codes)


def served(tr: Trial) -> str:
    """"2/3 (OOM kill)": the runs that served the question, of those measured."""
    out = f"{len(tr.failures) - tr.failed}/{len(tr.failures)}"
    return out + (f" ({failures(tr)})" if tr.failed else "")


def question(r: Review) -> str:
    """"nginx-fpm tuned for wordpress-home at 64 clients, on a machine of cpus 1, memory
    512M; a run serves the question when …"."""
    t = r.tuning
    load = (f"{t.concurrency} clients" if t.rate is None
            else f"{format_rate(t.rate)} requests/s ({t.concurrency} connections)")
    return (f"{t.stack_id} tuned for {t.workload} at {load}{'' if t.keepalive else ' (no keep-alive)'}"
            f", {_machine(t.machine)}; {_slo(r)}")


def _machine(m: dict[str, Any]) -> str:
    # the machine as the user asked it (cpus=1,memory=512M): its words are theirs
    parts = [f"{k} {v}" for k, v in m.items()]
    return "on a machine of " + ", ".join(parts) if parts else "on this machine's server cores"


def _slo(r: Review) -> str:
    if r.slo is None:
        return "a run serves the question when every client is served, without errors, no server dies"
    return f"SLO: {r.slo.describe()}; no server dies"


def mib(n: int | None) -> str:
    return f"{n / MiB:.0f} MiB" if n else "—"


def memory(m: TuningMemory | None) -> str:
    """What the probe found, and the bounds it gave."""
    if m is None:
        return "the probe found no worker process; candidates go up to the clients"
    out = (f"a worker held {mib(m.worker_bytes)} with {m.workers} of them running; the rest of the stack and its "
           f"services {mib(m.base_bytes)} → at most {m.bound} worker{'s' if m.bound != 1 else ''} fit in "
           f"{m.headroom:.0%} of {mib(m.limit_bytes)}")
    if m.cpu_top is not None and m.cpu_busy is not None:
        out += (f"; those {m.workers} kept the CPU {m.cpu_busy:.0%} busy, so a larger pool could only queue for it: "
                f"candidates stop at {m.cpu_top}")
    elif m.cpu_busy is not None:
        out += f"; those {m.workers} kept the CPU {m.cpu_busy:.0%} busy"
    return out


def why(r: Review) -> str:
    """"chosen: 4 workers — the smallest pool as good as the best (…)"."""
    c, best = r.choice, r.choice.best
    name = candidate(c.chosen)
    if c.reason is Reason.NONE_SERVED:
        return (f"chosen: {name} — no candidate served every run of this question; this one failed in the fewest "
                "(the stack does not serve this load on this machine at any pool size tried)")
    if c.reason is Reason.SMALLEST_SERVES:
        return (f"chosen: {name} — the smallest pool served the rate within the SLO in every run; at a rate every "
                "pool that serves it serves it alike, so no larger one was measured")
    if c.reason is Reason.SMALLEST_MEETS:
        missed = [t for t in r.trials if not t.serves and t.size < c.chosen.size]
        why_not = "; ".join([f"{candidate(t)}: {failures(t)}" for t in missed]
                            + (["1 worker: cannot meet the SLO by construction, not measured"]
                               if _ruled_out(r) else []))
        return (f"chosen: {name} — the smallest pool that served the rate within the SLO in every run"
                + (f" ({why_not})" if why_not else "")
                + "; every pool that serves a rate serves it alike, so a larger one's higher figure is noise")
    if c.reason is Reason.CPU_SATURATED:
        return (f"chosen: {name} — it did not serve the rate, and kept the CPU busy doing so: a larger pool could "
                "only queue for the same CPU, so none was measured (the stack does not carry this rate on this "
                "machine)" + (f"; {_one_failed(r)}" if c.chosen.size > 1 else ""))
    if c.reason is Reason.ONLY:
        return f"chosen: {name} — the only candidate the memory bound allowed"
    if c.reason is Reason.ONE_REQUEST:
        return (f"chosen: {name} — the pool's workers each hold a client's connection; closing it after every "
                "response served better than keeping it open")
    return _why_served(r, name) + (_kept_alive(r) if c.chosen.one_request else "")


def _ruled_out(r: Review) -> bool:
    return r.tuning.slow_cost is not None and r.tuning.slow_cost.one_ruled_out is not None


def _one_failed(r: Review) -> str:
    return ("1 worker cannot meet the SLO by construction (not measured)" if _ruled_out(r)
            else "with 1 worker it failed too")


def _kept_alive(r: Review) -> str:
    """Why a pool that holds connections closes them: how its largest pool kept alive did."""
    kept = [t for t in r.trials if not t.one_request]
    if not kept:
        return ""
    k = max(kept, key=lambda t: t.size)
    how = (f"failed {k.failed} of {len(k.failures)} runs: {failures(k)}" if k.failed
           else f"served every run at {format_rate(k.center)}/s")
    return (f"; each connection closed after one response, as every worker holds a client's connection while it "
            f"is kept alive (the largest pool kept alive, {candidate(k)}: {how})")


def _why_served(r: Review, name: str) -> str:
    c, best = r.choice, r.choice.best
    if c.reason is Reason.SMALLEST_TIED and best is not None and c.against_best:
        ratio, lo, hi = c.against_best
        return (f"chosen: {name} — the smallest pool as good as the best ({candidate(best)}, "
                f"{format_rate(best.center)}/s): {ratio:.2f}× of it [{lo:.2f}, {hi:.2f}], within {TIE_BAND:.0%} and "
                "not significantly below; a smaller pool leaves memory to the page cache and the database")
    return f"chosen: {name} — the highest figure, and no smaller pool within {TIE_BAND:.0%} of it"


def _s(us: int | None) -> str:
    """A visitor's wait in seconds: "0.45 s", "2.0 s", "12 s"."""
    if us is None:
        return "-"
    v = us / 1e6
    return f"{v:.2f} s" if v < 1 else f"{v:.1f} s" if v < 10 else f"{v:.0f} s"


def _workers(n: int) -> str:
    return f"{n} worker{'s' if n != 1 else ''}"


def _pool(p: SlowPool, unit: str) -> str:
    """"the other pages' p99 4.2 s and 16.1 responses/s"."""
    return f"the other pages' p99 {_s(p.others_p99_us)} and {format_rate(p.responses_per_s)} {unit}"


def slow_cost(t: StoredTuning) -> str | None:
    """What one slow request cost the other visitors, from the tuning's runs on its mix with
    slow requests (analysis/slow_requests.py); None for an ordinary workload."""
    c = t.slow_cost
    if c is None:
        return None
    one, chosen, unit = c.one, c.chosen, "responses/s"
    hold = f"{c.hold_ms / 1000:g} s"
    often = f", 1 request in {round(1 / c.share)}" if c.share > 0 else ""
    behind = (f"the other {c.behind:.0f} clients" if t.rate is None
              else f"the ~{c.behind:.0f} visitors who arrive meanwhile")
    if one is None and chosen is not None and (ruled := one_worker(t)) is not None:
        return f"{ruled}; {with_chosen(t)}"
    if one is None:
        assert chosen is not None
        return (f"slow requests ({hold}{often}) on {t.workload}, with {_workers(chosen.size)} (chosen): "
                f"{_pool(chosen, unit)}")
    held = (f"; slow requests held it {one.held_share:.0%} of the time, when nobody else was served"
            if one.held_share is not None else "")
    own = f" (a slow request itself {_s(one.slow_p50_us)})" if one.slow_p50_us is not None else ""
    if chosen is None:
        return (f"what a slow request costs with this one worker: each ({hold}{often}) holds it, and {behind} wait "
                f"behind it — measured on {t.workload}: {_pool(one, unit)}{own}{held}")
    return (f"what a slow request would cost with 1 worker: each ({hold}{often}) holds it, and {behind} wait behind "
            f"it — measured on {t.workload}: {_pool(one, unit)}{own}{held}; with {_workers(chosen.size)} (chosen) "
            f"{_pool(chosen, unit)}")


def one_worker(t: StoredTuning) -> str | None:
    """What a slow request would cost with 1 worker when the bound ruled it out unmeasured
    (`ruled_out`), its hold and the visitors behind it said; None when it was measured."""
    c = t.slow_cost
    if c is None or c.one_ruled_out is None:
        return None
    often = f", 1 request in {round(1 / c.share)}" if c.share > 0 else ""
    behind = (f"the other {c.behind:.0f} clients" if t.rate is None
              else f"the ~{c.behind:.0f} visitors who arrive meanwhile")
    return (f"what a slow request would cost with 1 worker: each ({c.hold_ms / 1000:g} s{often}) holds it, and "
            f"{behind} wait behind it — {ruled_out(c)}")


def with_chosen(t: StoredTuning) -> str | None:
    """"with 2 workers (chosen) the other pages' p99 0.11 s and 6.2 responses/s"; None when
    the chosen pool is the one-process one (its figures are the cost itself)."""
    chosen = t.slow_cost.chosen if t.slow_cost is not None else None
    return f"with {_workers(chosen.size)} (chosen) {_pool(chosen, 'responses/s')}" if chosen else None


def ruled_out(c: SlowCost) -> str | None:
    """Why one worker was not measured (analysis/slow_requests.py rule 3): "at 6.25
    requests/s those arriving in its first 0.5 s wait past p99 ≤ 500 ms: 6.2% of the other
    pages, where p99 allows 1% — 1 worker cannot meet the SLO (by construction, not
    measured)"."""
    b = c.one_ruled_out
    if b is None:
        return None
    late_for = c.hold_ms / 1000 - b.limit_us / 1e6
    limit = SLO({b.percentile: b.limit_us}, None, None).describe()
    return (f"at {b.rate:.3g} requests/s those arriving in its first {late_for:.2g} s wait past {limit}: "
            f"{b.late_share * 100:.2g}% of the other pages, where {limit.split(' ')[0]} allows "
            f"{b.allowed_share * 100:.2g}% — 1 worker cannot meet the SLO (by construction, not measured)")


def tuned_line(label: str, t: StoredTuning, one_said: bool = False) -> str | None:
    """A run's tuned stack tuned on a mix with slow requests: its tuning, and what one slow
    request costs (`slow_cost`); None when it was tuned on an ordinary workload. `one_said`:
    the one-worker bound was said once above (`one_worker`), the chosen pool's figures
    only here."""
    cost = with_chosen(t) if one_said else slow_cost(t)
    if cost is None:
        return None
    load = f"{t.concurrency} clients" if t.rate is None else f"{t.rate:.3g} requests/s"  # as the target says it
    return f"{label}: tuning {t.id}, on {t.workload} at {load}; {cost}"
