"""The terminal's legends. By default short: under a table one line (two at most) glossing
the columns and marks it shows, each once, and at the end of the output one pointer to
the rest. With `--explain` (`stackbench show RUN --explain`, `stackbench run … --explain`)
every note in full where it belongs — the same notes the HTML report prints beside its
tables."""

from __future__ import annotations

import textwrap
from typing import Iterable, Sequence, TextIO

from stackbench.report.text import grid
from stackbench.report.text.style import Style

WIDTH = 120  # the default table and its notes fit a 120-column terminal

# A column or mark of a table, in a few words (the full note says how it is made).
GLOSS = {
    "#": "# = a cell (`stackbench explain RUN:A RUN:B`)",
    "×": "× = invalid, never in a verdict",
    "errors": "errors = failed + non-2xx",
    "unserved": "unserved = connections never answered",
    # Of geometric means, as the verdict's test takes them: one slow run moves it where the
    # medians beside it stay (htaccess --quick: medians 12.7 % apart, "vs base" −18.6 %).
    "vs base": ("vs base = the throughput verdict, of geometric means (% significant, ≈ equivalent, n.s. not "
                "significant, ? too few runs)"),
    "≥": "≥ = a lower bound",
    "pg": "pg = page views/s",
    "limit": "limit = the side at ≥ 90 % busy",
    "outcome": "outcome: FAILS = failed the load (a result), invalid = left out of verdicts",
    "protocol": "h2 → http/1.1 = asked HTTP/2, answered in HTTP/1.1",
    "opcache": "opcache as PHP reported it",
    "db MiB": "db = the workload's database",
    "OOM kills": "OOM kills under the machine's memory limit",
    "not sent": "not sent = due requests the engine could not send",
    "levels": "load: c=N clients, N/s an open loop, up/down the ramp's way",
    # nginx's share is connections, not workers: slow-clients --quick read "busy 211" of
    # nginx + FPM's 16 workers with the short legend alone.
    "busy": "busy = workers busy at once, nginx's connections being written counted in (the servers' status pages)",
    "CPU µs/new conn": "CPU µs/new conn = the stack's CPU per request with a new connection, less kept alive",
    "capacity": "capacity = the rate a probe meets the target half the time (a logistic fit over every probe)",
    "met": "met = probes that met the target",
    "hit ratio": "hit ratio = answers marked HIT (X-Cache)",
    "cache's own count": "cache's own count = the hits it counted itself (varnishstat)",
    "visits/s": "visits/s = complete visits a second",
    "visit p50 s": "visit = its start to its last page's last byte, think times included",
}

# Under the answers: how every verdict above was made, in one line.
VERDICTS = ("verdicts: the run is the unit; each CI is drawn at the level of Holm's decision over its block's "
            "throughput comparisons")


# A figure and its unit stay on one line: "20 %" broken after "20" read as a bare number
# (keep-alive --quick: "lighttpd + FPM 20" / "% more"). Held by a no-break space while
# wrapping, which textwrap does not break at, and given back after.
_HELD = ((" %", "\u00a0%"), (" ms", "\u00a0ms"), (" MiB", "\u00a0MiB"), (" req/s", "\u00a0req/s"))


def wrap(text: str) -> str:
    """Prose wrapped to the table's 120 columns, continuation lines indented."""
    if not text:
        return text
    for plain, held in _HELD:
        text = text.replace(plain, held)
    wrapped = textwrap.fill(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)
    for plain, held in _HELD:
        wrapped = wrapped.replace(held, plain)
    return wrapped


def short(keys: Iterable[str], out: TextIO) -> None:
    """One dim line glossing `keys` (those GLOSS knows), each once, in the order given."""
    said = [GLOSS[k] for k in dict.fromkeys(keys) if k in GLOSS]
    if said:
        out.write(Style(out).dim(wrap("; ".join(said))) + "\n")


def full(notes: Iterable[str], out: TextIO) -> None:
    """Every note in full, each wrapped."""
    style = Style(out)
    for note in notes:
        out.write(style.dim(wrap(note)) + "\n")


def pointer(run_id: int, repeated: bool, explain: bool = False) -> str:
    """The one line that leads to the rest: every legend in full (unless shown), every
    repetition (when the table summarized them); "" when there is nothing more."""
    more = ([] if explain else [f"`stackbench show {run_id} --explain`: every legend in full"]) + (
        [f"`stackbench show {run_id} --all`: every repetition"] if repeated else [])
    return f"({'; '.join(more)})" if more else ""


def titled_table(title: str, head: Sequence[str], body: Sequence[Sequence[str]], text_columns: Sequence[str],
                 note: str, glossed: Sequence[str], out: TextIO, explain: bool = True) -> None:
    """A block under the main table: its title, its aligned rows, then `note` in full
    (`explain`) or a short legend of the `glossed` columns; nothing without rows."""
    if not body:
        return
    style = Style(out)
    out.write("\n" + style.bold(title) + "\n")
    first, *rest = grid.lines(head, body, text_columns)
    out.write(style.bold(first) + "\n")
    for line in rest:
        out.write(line + "\n")
    if explain:
        out.write(style.dim(wrap(note)) + "\n")
    else:
        short(glossed, out)
