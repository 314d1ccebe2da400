"""Caveats in words: the one place each {code, params} becomes a sentence with advice.

Codes come from the load engine (loadgen/README.md, "warning_codes") and from the lab
(stackbench/caveats.py). A code this version does not know is shown with its params
rather than dropped.
"""

from __future__ import annotations

from typing import assert_never

from stackbench.engine.result import (CacheHits, Caveat, CaveatFacts, ClientsUnserved, CoresShared, CpuSteal,
                                      EngineSaturated, InFlightOld, IoFallback, LatencyOverRange, MemoryLimit,
                                      NoRequests, NoResponseAll, Non2xx, NotSteady, OomKilled, RateNotReached,
                                      RateTimerResolution, RequestsFailed, ServerClosedKeepalive, ServerLimit,
                                      ShortRun, TargetDown, Text)


def _ms(us: float | None) -> str:
    return f"{(us or 0) / 1000:.0f} ms"


def _mib(n: int | None) -> str:
    return f"{(n or 0) / 2**20:g} MiB"


def _oom_when(f: OomKilled) -> str:
    """ "3 processes of the stack during the measured window (and 1 before it …)"."""
    count, before, after = f.count or 0, f.before or 0, f.after or 0
    window = "it" if count else "the measured window"
    parts = [f"{n} process{'es' if n != 1 else ''} {when}" for n, when in
             ((count, "during the measured window"), (before, f"before {window} (stack start, warm-up)"),
              (after, f"after {window} (the system-call pass)")) if n]
    return " and ".join(parts) or "processes of the stack"


def _pct(share: float | None) -> str:
    return f"{100 * (share or 0):.1f}%"


def said(f: CaveatFacts) -> str:
    """A caveat's sentence from its typed figures (engine/result.py's facts: one class a
    code, its fields the code's params; a param the caveat lacks is None)."""
    match f:
        # -- from the load engine
        case NoResponseAll():
            return f"none of the {f.connections} connections got a response during the measured phase"
        case ClientsUnserved():
            return (f"{f.without_response} of {f.connections} connections got no response during the measured "
                    "phase: the server served only some clients (e.g. prefork children held by keep-alive); the "
                    "latencies describe the served ones")
        case InFlightOld():
            # The engine's slowest is 0 when nothing completed: "slowest completed response
            # 0 ms" (slow-clients --quick, prefork held) read as an instant answer.
            slowest = (f"slowest completed response {_ms(f.slowest_us)}" if f.slowest_us
                       else "no response completed")
            return (f"{f.count} request(s) still unanswered at the end had waited longer than "
                    f"{_ms(f.threshold_us)} (oldest {_ms(f.oldest_us)}; {slowest}): the latency figures leave them out")
        case TargetDown():
            return (f"no connection to the target succeeded ({f.connect_errors} connect errors): is a server "
                    "listening there?")
        case EngineSaturated():
            return (f"the load engine's thread {f.thread} was busy {_pct(f.busy)} of the time: the result may measure "
                    "the load generator, not the server — add threads or cores")
        case NoRequests():
            return "no request completed or failed in the measured phase"
        case RequestsFailed():
            return (f"{_pct(f.share)} of requests failed"
                    + (f" ({', '.join(f'{k} {v}' for k, v in f.errors.items() if v)})" if f.errors else "")
                    + ": the figures describe a stack that was overloaded or broken, not its speed")
        case ServerClosedKeepalive():
            return (f"keep-alive was asked for, but {f.connections_opened} connections were opened for {f.responses} "
                    "responses: the server closed the connection after most responses, so this measures a new "
                    "connection per request")
        case Non2xx():
            return (f"{f.count} responses ({_pct(f.share)}) were not 2xx: check the target serves what you meant to "
                    "measure")
        case LatencyOverRange():
            return f"{f.count} latencies were above the histogram's {f.range_s} s range and were clamped to it"
        case RateTimerResolution():
            return (f"{f.connections} connections for {f.rate} requests/s: with the engine's 1 ms timer resolution, "
                    "latency may include up to ~1 ms of generator delay — use at least "
                    f"{f.min_connections} connections")
        case RateNotReached(of="visits"):
            return (f"only {f.sent_per_s or 0:.1f} of the {f.rate or 0:,g} visits/s asked for began: all "
                    f"{f.connections} visitors were busy"
                    + (f" and {f.not_sent:,} due visits never began" if f.not_sent else "")
                    + " — the stack answered more slowly than the visitors allow (a visit's duration counts from "
                    "when it was due); `connections` gives the engine more visitors")
        case RateNotReached():
            return (f"only {f.sent_per_s or 0:.0f} of the {f.rate or 0:,g} requests/s asked for were sent: all "
                    f"{f.connections} connections were busy"
                    + (f" and {f.not_sent:,} due requests were never sent" if f.not_sent else "")
                    + " — the stack answered more slowly than the connections allow (their latency counts from "
                    "when they were due); `connections` gives the engine more")
        case ShortRun():
            return "the measured phase lasted less than 1 s: results are noisy"
        case IoFallback():
            return f"--io uring was asked for, but {f.reason}"
        # -- from the lab
        case CacheHits():
            return cache_hits(f.header, f.share or 0, f.share or 0)
        case CoresShared():
            return ("server and load engine share CPU cores: the engine's work is taken from the server's "
                    "budget")
        case CpuSteal():
            return (f"the hypervisor took {_pct(f.share)} of the server's CPU time (steal): the run measures the "
                    "host's other guests as much as the stack, and is left out of verdicts")
        case ServerLimit():
            return (f"{f.server} reached its {f.setting} ({f.value}) under {f.connections} connections: beyond it "
                    "clients wait in a queue — at this load the server is refusing work, not slow (the knob "
                    f"{f.knob} raises it)")
        case OomKilled():
            return (f"the OOM killer took {_oom_when(f)} under the {_mib(f.limit_bytes)} machine limit: on that "
                    "machine this stack does not fit at this load (the requests the kills broke are its failed "
                    "ones)")
        case MemoryLimit():
            return (f"the stack reached the {_mib(f.limit_bytes)} machine limit {f.hits or 0:,} times: the kernel "
                    "reclaimed memory (page cache) to stay under it"
                    + (f", and its processes waited {_ms(f.stall_us)} for memory" if f.stall_us else ""))
        case NotSteady():
            moved = (f" (its last windows {abs(f.change):.0%} {'above' if f.change > 0 else 'below'} the ones before)"
                     if f.change is not None else "")
            return (f"not steady after the {f.cap_s or f.seconds or 0:g} s warm-up cap{moved}: measured anyway, so the "
                    "figures are of a stack still warming up (a JIT compiling, a pool growing) — a longer "
                    "steady.cap measures it warmed")
        # -- sentences stored before caveats had codes (store v3), and an older engine's
        case Text():  # EngineText too
            return str(f.text)
    assert_never(f)


def engine_bound_note(busy: list[float], runs: int) -> str:
    """After engine_saturated's sentence, when some of those runs had the server at its
    limit too (analysis/outcomes.py: SERVER_BUSY): those stay valid, as lower bounds."""
    if not busy:
        return ""
    lo, hi = min(busy), max(busy)
    share = f"{lo:.0%}" if round(lo, 2) == round(hi, 2) else f"{lo:.0%}–{hi:.0%}"
    which = "that run" if runs == 1 else "all of them" if len(busy) == runs else f"{len(busy)} of the {runs} runs"
    they = "it stays valid and its throughput is" if len(busy) == 1 else "they stay valid and their throughput is"
    return (f"; in {which} the server's cores were busy too ({share}): both at their limit, {they} a lower bound "
            "of the stack's (engine-bound) — more cores or a client host would separate them")


def sentence(caveat: Caveat) -> str:
    if caveat.facts is None:
        params = ", ".join(f"{k}={v}" for k, v in caveat.params.items())
        return f"{caveat.code}" + (f" ({params})" if params else "")
    return said(caveat.facts)


def cache_hits(header: str | None, low: float, high: float) -> str:
    """A cache's hits, of one run or the range of several: "X-Cache: 78–100% of responses
    were cache hits — …"."""
    share = f"{100 * low:.0f}%" if f"{100 * low:.0f}" == f"{100 * high:.0f}" else f"{100 * low:.0f}–{100 * high:.0f}%"
    return (f"{header}: {share} of responses were cache hits — this measures the cache, not PHP "
            "(varnish_mode = \"pass-php\" or cache_ttl = 0 measure PHP behind the cache)")
