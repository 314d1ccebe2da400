"""Caveats in words: the one place each {code, params} becomes a sentence with advice.

Codes come from the load engine (loadgen/README.md, "warning_codes") and from the lab
(stackbench/caveats.py). A code this version does not know is shown with its params
rather than dropped.
"""

from __future__ import annotations

from typing import Any, Callable

from stackbench.engine.result import Caveat


def _ms(us: Any) -> str:
    return f"{(us or 0) / 1000:.0f} ms"


def _mib(n: Any) -> str:
    return f"{(n or 0) / 2**20:g} MiB"


def _oom_when(p: dict[str, Any]) -> str:
    """ "3 processes of the stack during the measured window (and 1 before it …)"."""
    count, before, after = p.get("count") or 0, p.get("before") or 0, p.get("after") or 0
    window = "it" if count else "the measured window"
    parts = [f"{n} process{'es' if n != 1 else ''} {when}" for n, when in
             ((count, "during the measured window"), (before, f"before {window} (stack start, warm-up)"),
              (after, f"after {window} (the system-call pass)")) if n]
    return " and ".join(parts) or "processes of the stack"


def _pct(share: Any) -> str:
    return f"{100 * (share or 0):.1f}%"


# A caveat is a code and its params (engine/result.py's Caveat): the params differ by
# code, so each sentence reads its own code's by key — the one place they are read.
SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    # -- from the load engine
    "no_response_all": lambda p: f"none of the {p.get('connections')} connections got a response during the "
                                 "measured phase",
    "clients_unserved": lambda p: f"{p.get('without_response')} of {p.get('connections')} connections got no "
                                  "response during the measured phase: the server served only some clients (e.g. "
                                  "prefork children held by keep-alive); the latencies describe the served ones",
    "in_flight_old": lambda p: f"{p.get('count')} request(s) still unanswered at the end had waited longer than "
                               f"{_ms(p.get('threshold_us'))} (oldest {_ms(p.get('oldest_us'))}; slowest completed "
                               f"response {_ms(p.get('slowest_us'))}): the latency figures leave them out",
    "target_down": lambda p: f"no connection to the target succeeded ({p.get('connect_errors')} connect errors): "
                             "is a server listening there?",
    "engine_saturated": lambda p: f"the load engine's thread {p.get('thread')} was busy {_pct(p.get('busy'))} of "
                                  "the time: the result may measure the load generator, not the server — add "
                                  "threads or cores",
    "no_requests": lambda p: "no request completed or failed in the measured phase",
    "requests_failed": lambda p: f"{_pct(p.get('share'))} of requests failed"
                                 + (f" ({', '.join(f'{k} {v}' for k, v in (p.get('errors') or {}).items() if v)})"
                                    if p.get("errors") else "")
                                 + ": the figures describe a stack that was overloaded or broken, not its speed",
    "server_closed_keepalive": lambda p: f"keep-alive was asked for, but {p.get('connections_opened')} connections "
                                         f"were opened for {p.get('responses')} responses: the server closed the "
                                         "connection after most responses, so this measures a new connection per "
                                         "request",
    "non_2xx": lambda p: f"{p.get('count')} responses ({_pct(p.get('share'))}) were not 2xx: check the target "
                         "serves what you meant to measure",
    "latency_over_range": lambda p: f"{p.get('count')} latencies were above the histogram's {p.get('range_s')} s "
                                    "range and were clamped to it",
    "rate_timer_resolution": lambda p: f"{p.get('connections')} connections for {p.get('rate')} requests/s: with "
                                       "the engine's 1 ms timer resolution, latency may include up to ~1 ms of "
                                       f"generator delay — use at least {p.get('min_connections')} connections",
    "rate_not_reached": lambda p: f"only {p.get('sent_per_s', 0):.0f} of the {p.get('rate') or 0:,g} requests/s asked for "
                                 f"were sent: all {p.get('connections')} connections were busy"
                                 + (f" and {p['not_sent']:,} due requests were never sent" if p.get("not_sent") else "")
                                 + " — the stack answered more slowly than the connections allow (their latency "
                                 "counts from when they were due); `connections` gives the engine more",
    "short_run": lambda p: "the measured phase lasted less than 1 s: results are noisy",
    "io_fallback": lambda p: f"--io uring was asked for, but {p.get('reason')}",
    # -- from the lab
    "cache_hits": lambda p: f"{p.get('header')}: {100 * (p.get('share') or 0):.0f}% of responses were cache hits — "
                            "this measures the cache, not PHP (varnish_mode = \"pass-php\" or cache_ttl = 0 "
                            "measure PHP behind the cache)",
    "cores_shared": lambda p: "server and load engine share CPU cores: the engine's work is taken from the "
                              "server's budget",
    "cpu_steal": lambda p: f"the hypervisor took {_pct(p.get('share'))} of the server's CPU time (steal): the run "
                           "measures the host's other guests as much as the stack, and is left out of verdicts",
    "server_limit": lambda p: f"{p.get('server')} reached its {p.get('setting')} ({p.get('value')}) under "
                              f"{p.get('connections')} connections: beyond it clients wait in a queue — at this load "
                              f"the server is refusing work, not slow (the knob {p.get('knob')} raises it)",
    "oom_killed": lambda p: f"the OOM killer took {_oom_when(p)} under the {_mib(p.get('limit_bytes'))} "
                            "machine limit: on that machine this stack does not fit at this load (the requests "
                            "the kills broke are its failed ones)",
    "memory_limit": lambda p: f"the stack reached the {_mib(p.get('limit_bytes'))} machine limit {p.get('hits') or 0:,} "
                              "times: the kernel reclaimed memory (page cache) to stay under it"
                              + (f", and its processes waited {_ms(p['stall_us'])} for memory" if p.get("stall_us")
                                 else ""),
    # -- sentences stored before caveats had codes (store v3), and an older engine's
    "text": lambda p: str(p.get("text")),
    "engine_text": lambda p: str(p.get("text")),
}


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
    words = SENTENCES.get(caveat.code)
    if words is None:
        params = ", ".join(f"{k}={v}" for k, v in caveat.params.items())
        return f"{caveat.code}" + (f" ({params})" if params else "")
    return words(caveat.params)
