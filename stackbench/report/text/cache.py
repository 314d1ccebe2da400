"""How often each stack's cache answered, for a terminal: report/words/cache.py's rows —
the answers the engine saw marked HIT, and the cache's own count beside them."""

from __future__ import annotations

from typing import Sequence, TextIO

from stackbench.analysis.cache import HitRatio
from stackbench.report.text import legend
from stackbench.report.words.cache import HEAD, NOTE, rows


def render(ratios: Sequence[HitRatio], out: TextIO, explain: bool = True) -> None:
    """`explain`: where each figure comes from in full, else a short legend."""
    legend.titled_table("how often each cache answered (medians of valid runs)", HEAD, rows(ratios),
                        ("stack", "workload", "load"), NOTE, ["hit ratio", "cache's own count"], out, explain)
