"""How often each stack's cache answered, in words — the rows of the terminal's and the
HTML report's tables: the share of answers the engine saw marked HIT, and beside it the
cache's own count over the same windows (Varnish's varnishstat): its hits and the share
it passed to the back end — a logged-in visitor's request, which must reach PHP
(analysis/cache.py computes; this only formats)."""

from __future__ import annotations

from typing import Sequence

from stackbench.analysis import stats
from stackbench.analysis.cache import HitRatio

HEAD = ("stack", "workload", "load", "valid runs", "hit ratio", "95 % CI", "cache's own count", "passed to PHP")

NOTE = ("hit ratio = answers whose cache header (X-Cache) said HIT over all answers carrying it, median of valid "
        "runs; cache's own count = the hits the cache counted itself over every request it handled, in the same "
        "windows (Varnish: varnishstat's MAIN.cache_hit, cache_miss, s_pass; nginx counts nothing of its own: its "
        "X-Cache header is its count); passed to PHP = the share the cache passed to the back end unstored (a "
        "request with a cookie: a logged-in visitor)")


def share(s: stats.Summary | None) -> str:
    return "-" if s is None or s.median is None else f"{s.median:.0%}"


def interval(s: stats.Summary | None) -> str:
    return "-" if s is None or s.ci_low is None or s.ci_high is None else f"{s.ci_low:.0%}–{s.ci_high:.0%}"


def header_of(r: HitRatio) -> str:
    """What the row's hit ratio was read from: the header, or the cache's own count."""
    return r.header or f"{r.server}'s own count"


def rows(ratios: Sequence[HitRatio], workload: bool = True) -> list[tuple[str, ...]]:
    """A row per stack, question and header; `workload`: with the workload's column (the
    HTML report draws a figure per workload and leaves it out)."""
    out: list[tuple[str, ...]] = []
    # Questions that differ only in their connection mode ("https keep-alive", "https full
    # handshakes": tls-offload) read as two identical rows without it.
    modes = len({r.question.mode() for r in ratios}) > 1
    for r in ratios:
        if r.ratio.median is None:  # no valid run counted its answers
            continue
        own = f"{share(r.server_ratio)} ({r.server})" if r.server_ratio is not None else "-"
        load = f"{r.question.level()} {r.question.mode()}" if modes else r.question.level()
        row = (r.stack_label, r.question.workload, load, str(r.ratio.n),
               share(r.ratio) if r.header else "-", interval(r.ratio) if r.header else "-", own,
               share(r.server_passes))
        out.append(row if workload else row[:1] + row[2:])
    return out
