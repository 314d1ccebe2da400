"""One cell second by second: what the engine saw next to what the stack did, on the
same wall clock (the engine's started_unix_us and the samples' t_unix_us)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any
from stackbench.model.cell import StoredCell
from stackbench.model.cost import CgroupSample


@dataclass(frozen=True)
class Second:
    t_s: int
    requests: int
    errors: int
    p50_us: int | None
    p99_us: int | None
    procs: int | None
    threads: int | None
    memory_bytes: int | None  # anonymous + shared memory, highest sample in the second
    cpu_share: float | None  # the stack's CPU time over wall time: 1.0 = one core busy


def seconds(cell: StoredCell, samples: list[CgroupSample]) -> list[Second]:
    """`samples`: the stack's cgroup samples during the cell (Store.samples)."""
    if cell.engine is None:
        return []
    start = cell.engine.started_unix_us
    out = []
    for sec in cell.engine.timeline:
        lo, hi = start + sec.t_s * 1_000_000, start + (sec.t_s + 1) * 1_000_000
        inside = [s for s in samples if lo <= s.t_unix_us < hi]
        before = [s for s in samples if s.t_unix_us < lo]
        first = before[-1] if before else (inside[0] if inside else None)
        last = inside[-1] if inside else None
        cpu = None
        if first and last and last.cpu_usage_us is not None and first.cpu_usage_us is not None:
            span = last.t_unix_us - first.t_unix_us
            cpu = (last.cpu_usage_us - first.cpu_usage_us) / span if span else None
        out.append(Second(
            t_s=sec.t_s, requests=sec.requests, errors=sec.errors, p50_us=sec.p50_us, p99_us=sec.p99_us,
            procs=max((s.procs for s in inside if s.procs is not None), default=None),
            threads=max((s.threads for s in inside if s.threads is not None), default=None),
            memory_bytes=max((s.mem_rss_bytes + (s.mem_shmem_bytes or 0) for s in inside
                              if s.mem_rss_bytes is not None), default=None),
            cpu_share=cpu))
    return out


def walk_of(cells: list[StoredCell], cell: StoredCell) -> list[StoredCell]:
    """The cells of the walk (ramp, stages, capacity search) `cell` is a step of, in step
    order: same run, repetition, stack, workload and keep-alive mode on one running
    stack. A cell outside a walk is its own."""
    if cell.step is None:
        return [cell]
    return sorted((c for c in cells if c.step is not None and _walk_key(c) == _walk_key(cell)), key=lambda c: c.seq)


def _walk_key(c: StoredCell) -> tuple[Any, ...]:
    return (c.repetition, c.stack_label, c.workload, c.keepalive, c.load)


def walk_seconds(walk: list[StoredCell],
                 samples: dict[int, list[CgroupSample]]) -> list[tuple[StoredCell, Second]]:
    """Every step's seconds on one clock, from the first step's start: the stack's
    processes and memory over the whole walk (the gaps between steps, where the engine
    restarts, are not sampled). `samples`: each step's samples, by cell id."""
    starts = [c.engine.started_unix_us if c.engine is not None else None for c in walk]
    t0 = next((s for s in starts if s), None)
    out = []
    for c, start in zip(walk, starts):
        if t0 is None or start is None:
            continue
        offset = round((start - t0) / 1_000_000)
        for s in seconds(c, samples.get(c.id, [])):
            out.append((c, replace(s, t_s=s.t_s + offset)))
    return out
