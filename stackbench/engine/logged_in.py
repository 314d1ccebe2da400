"""Visits of which a share log in: two visitor classes, each one engine — the anonymous
visitors' journey and the logged-in visitors' (the same pages after a login) — started at
the same instant and merged exactly (engine/merge.py: counts add, histograms add bucket by
bucket), so the cell's figures are all its visitors', and each class's stays in the merged
document's `clients` ("anonymous", "logged in").

The share is exact, not drawn: a closed loop gives round(share × visitors) visitor slots to
the logged-in class (at least one to each class when the share is strictly between 0 and
1), an open loop share × the rate of visits (connections shared the same way). A visitor
who logs in stays logged in for the whole visit, as a reader of the site does; a slot's
next visit is a new visitor of the same class. Drawing the share per visit instead would
make the figures' split vary from run to run by chance and leave no class's own figures.
"""

from __future__ import annotations

import subprocess
import time
from dataclasses import replace
from functools import partial
from typing import Callable

from stackbench.engine.merge import merge
from stackbench.engine.process import LoadSpec, run_threads
from stackbench.engine.result import EngineResult
from stackbench.errors import StackbenchError

# A load with `started`: told each engine process, which Ctrl-C on the lab does not reach
# from a thread (engine/process.py `run`), so that this module can stop it.
Load = Callable[..., EngineResult]
ANONYMOUS, LOGGED_IN = "anonymous", "logged in"
LEAD_S = 0.25  # both engines spawned before their common start (hosts/clients.py's lead)


def split(spec: LoadSpec) -> list[tuple[str, LoadSpec]]:
    """The classes of a load of visits, each with its own spec: one class when the share
    is 0 or 1 (or the load is not of visits that log in)."""
    share = spec.login_share
    if spec.login_journey is None or share <= 0:
        return [(ANONYMOUS, replace(spec, login_journey=None, login_share=0.0))]
    logged = replace(spec, journey=spec.login_journey, login_journey=None, login_share=0.0)
    if share >= 1:
        return [(LOGGED_IN, logged)]
    n = spec.connections
    if n < 2:
        raise ValueError("a logged-in share between 0 and 1 needs at least 2 visitors")
    k = min(n - 1, max(1, round(share * n)))
    anonymous = replace(spec, login_journey=None, login_share=0.0, connections=n - k)
    logged = replace(logged, connections=k)
    if spec.rate is not None:
        anonymous = replace(anonymous, rate=spec.rate * (1 - share))
        logged = replace(logged, rate=spec.rate * share)
    return [(ANONYMOUS, anonymous), (LOGGED_IN, logged)]


def run(load: Load, spec: LoadSpec, cpus: list[int]) -> EngineResult:
    """`spec`'s visits, its classes' engines run together and merged; a load that is not
    split goes to `load` as it is."""
    parts = split(spec)
    if len(parts) == 1:
        return load(parts[0][1], cpus)
    at = int((time.time() + LEAD_S) * 1e6)
    results: list[EngineResult | None] = [None] * len(parts)
    failures: list[BaseException | None] = [None] * len(parts)
    shown = spec.on_progress
    procs: list[subprocess.Popen] = []

    def one(k: int, part: LoadSpec) -> None:
        try:
            # One class's progress shown (the anonymous one's): the terminal's line is a
            # sign of life, the cell's figures come from the merged result.
            results[k] = load(replace(part, start_at_us=at, histogram=True,
                                      on_progress=shown if k == 0 else None), cpus, started=procs.append)
        except BaseException as e:  # noqa: BLE001 - handed to the caller's thread below
            failures[k] = e

    # Ctrl-C stops both classes' engines (engine/process.py run_threads).
    run_threads([partial(one, k, part) for k, (_, part) in enumerate(parts)], procs)
    failed = next((f for f in failures if f is not None), None)
    if failed is not None:
        if isinstance(failed, StackbenchError):
            failed.message = f"the {parts[failures.index(failed)][0]} visitors: {failed.message}"
        raise failed
    done = [r for r in results if r is not None]
    return EngineResult.from_doc(merge([r.raw for r in done], [{"host": name} for name, _ in parts]))
