"""Each (question, stack) over its repetitions: how many runs, how many were valid, how
the valid ones ended (served, engine-bound, failed the load and how: outcomes.py), and
each metric's median with its CI and spread (stats.summarize) over the valid runs, as
verdicts take them — a failed run with what it delivered, an engine-bound one's
throughput as a lower bound."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable

from stackbench.analysis import bottleneck, outcomes, stats, verdicts
from stackbench.analysis.questions import Question
from stackbench.model.cell import StoredCell


@dataclass(frozen=True)
class HandshakeSummary:
    """The client's TLS handshake time per connection over a question's valid runs: each
    run's p50 and p99, summarized (medians with their CI)."""

    p50: stats.Summary
    p99: stats.Summary


@dataclass(frozen=True)
class CellSummary:
    question: Question
    stack_label: str
    runs: int
    valid: int
    metrics: dict[str, stats.Summary]  # by verdicts.METRICS key
    page_mode: bool = False  # throughput is page views/s, latencies page load times
    # Shown beside the stack's own cost, never in a verdict: the services' (a database's)
    # memory and CPU per request, and the share of valid runs with opcache in force.
    service_memory: stats.Summary | None = None
    service_cpu_per_request: stats.Summary | None = None
    opcache_runs: tuple[int, int] | None = None  # (runs with opcache on, runs read back)
    # A machine profile's memory limit: processes OOM-killed over *all* the runs (a run the
    # kills made invalid still killed them); None without a limit.
    oom_kills: int | None = None
    # How the valid runs ended: how many failed the load (and how), how many ran with the
    # generator at its limit; and the invalid runs' reasons, each once.
    failed: int = 0
    engine_bound: int = 0
    failures: tuple[outcomes.FailureSummary, ...] = ()
    invalid_reasons: tuple[str, ...] = ()
    # Metric keys whose median is a bound, not the value: throughput a lower bound
    # (engine-bound runs), latency a floor (unserved clients' wait of the whole window).
    bounds: frozenset[str] = frozenset()
    # The protocol as its runs spoke it: the asked one, or "h2 → http/1.1" when they
    # answered HTTP/2 in HTTP/1.1 (of every run: one that did is enough to say so);
    # over TLS the handshake time per connection (median p50 and p99 of the valid runs).
    protocol: str = "http/1.1"
    handshake: HandshakeSummary | None = None
    # What was negotiated (ALPN, TLS version, cipher, group) by most connections of the
    # first run that says; None in clear text.
    negotiated: tuple[str | None, str | None, str | None, str | None] | None = None
    # Which side limited the load, over every measured run (invalid ones too: an engine
    # at its limit is what makes a run invalid); None when no run was measured.
    bottleneck: bottleneck.BottleneckSummary | None = None

    @property
    def fails(self) -> bool:
        """Most of its valid runs failed the load (verdicts.Side.fails)."""
        return self.valid > 0 and 2 * self.failed > self.valid


def summarize(cells: Iterable[StoredCell]) -> list[CellSummary]:
    cells = list(cells)
    every = verdicts.samples(cells)  # each cell's figures and outcome, once
    counts = {key: len(fs) for key, fs in every.items()}
    good = {key: [f for f in fs if f.outcome is None or f.outcome.valid] for key, fs in every.items()}
    out = []
    # by question; within one, stacks in the order the plan ran them (sorted is stable)
    for (q, label), total in sorted(counts.items(), key=lambda kv: kv[0][0].sort_key()):
        fs = good.get((q, label), [])
        read = [f.php_opcache for f in fs if f.php_opcache is not None]
        done = [f.outcome for f in fs if f.outcome is not None]
        invalid = [f.outcome for f in every[(q, label)] if f.outcome is not None and not f.outcome.valid]
        bounds = {"throughput"} if any(o.engine_bound for o in done) else set()
        bounds |= {key for key, floor in (("latency_p50", "p50_floor"), ("latency_p99", "p99_floor"))
                   if any(getattr(o, floor) for o in done)}
        out.append(CellSummary(q, label, total, len(fs), {
            m.key: _summary(m.value(f) for f in fs) for m in verdicts.METRICS},
            page_mode=any(f.page_mode for f in fs),
            service_memory=_summary(f.service_memory_peak_bytes for f in fs),
            service_cpu_per_request=_summary(f.service_cpu_us_per_request for f in fs),
            opcache_runs=(sum(read), len(read)) if read else None,
            oom_kills=_total(f.oom_kills for f in every[(q, label)]),
            failed=sum(1 for o in done if o.failed), engine_bound=sum(1 for o in done if o.engine_bound),
            failures=outcomes.summarize_failures(done),
            invalid_reasons=tuple(dict.fromkeys(r for o in invalid for r in o.invalid_reasons)),
            bounds=frozenset(bounds),
            protocol=next((f.protocol for f in every[(q, label)] if "→" in f.protocol), q.protocol),
            handshake=HandshakeSummary(_summary(f.handshake_p50_us for f in fs),
                                       _summary(f.handshake_p99_us for f in fs)) if q.tls else None,
            negotiated=next((f.negotiated for f in every[(q, label)] if f.negotiated), None),
            bottleneck=bottleneck.summarize(f.bottleneck for f in every[(q, label)])))
    return out


def _summary(values: Iterable[float | None]) -> stats.Summary:
    return stats.summarize([float(v) for v in values if v is not None])


def _total(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None
