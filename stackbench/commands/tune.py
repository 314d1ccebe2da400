"""`stackbench tune STACK --workload W --concurrency N [--machine …] [--slo …]`: the stack's
best pool for that question, measured and stored; `stackbench tunings [ID]`: the stored ones.

Reads like its table of contents: the question checked → the memory probe → the
candidates → the choice → stored → shown (runner/tune.py, analysis/tuning.py)."""

from __future__ import annotations

import argparse
import re
import sys
from typing import Any

from stackbench.analysis import tuning
from stackbench.analysis.capacity import SLO, open_loop_connections
from stackbench.errors import UsageError
from stackbench.model.tuning import Candidate
from stackbench.planning import loads
from stackbench.planning import tune as tune_plan
from stackbench.planning.tune import TuneQuestion
from stackbench.report.text import tuning as tuning_text
from stackbench.report.text.progress import TerminalProgress
from stackbench.runner import Options, dry_check
from stackbench.runner import tune as tune_runner
from stackbench.store import Store


HOLDS = ("; its workers hold connections, so each pool closes each after one response, and its largest is tried "
         "kept alive too")


def cmd_tune(args: argparse.Namespace) -> int:
    q = question(args)
    pool = tune_plan.pool_of(q.stack_id)
    checked = tune_plan.candidates_plan(q, [Candidate(1)])  # every key checked before anything starts
    if args.dry_run:
        # What `run --dry-run` checks of a plan, checked of the tuning's: the machine profile
        # against this machine's cores and memory, the packages, every config.
        dry_check(checked, Options(workdir=args.workdir))
        runs = tune_plan.most_runs(q, pool.holds_connections)
        short, long = tune_plan.run_seconds(q), tune_plan.run_seconds(q, longest=True)
        print(f"tune {q.stack_id} for {q.workload} at {q.load()}: a probe (1 run of "
              f"{min(tune_plan.PROBE_SIZE, q.concurrency)} workers: what one holds, how busy they keep the CPU), "
              f"then pools of 1, 2, 4 … workers up to what fits, {q.concurrency}, and what the CPU can use, "
              f"{q.repetitions} runs each{HOLDS if pool.holds_connections and q.keepalive else ''} — at most {runs} runs of {short:.0f} s (a slow page's up to "
              f"{long:.0f} s): {runs * short / 60:.0f}–{runs * long / 60:.0f} min")
        return 0
    store = Store(args.db)
    store.ensure_writable()
    progress = TerminalProgress(mode="quiet" if args.quiet else "auto")
    tuned = tune_runner.tune(q, store, progress, Options(workdir=args.workdir))
    _show(store, tuned.tuning_id)
    return 0


def cmd_tunings(args: argparse.Namespace) -> int:
    store = Store(args.db, must_exist=True)
    if args.id is not None:
        _show(store, args.id)
        return 0
    found = store.tunings()
    if not found:
        print("no tunings stored (`stackbench tune STACK --workload W --concurrency N` makes one)")
    for t in found:
        knobs = ", ".join(f"{k}={v}" for k, v in t.knobs.items())
        machine = ",".join(f"{k}={v}" for k, v in t.machine.items())
        load = f"c={t.concurrency}" if t.rate is None else f"rate={t.rate:g}/s"
        print(f"{t.id:>3}  {t.created_at}  {t.stack_id} {t.workload} {load} {machine}  → {knobs}")
    return 0


def _show(store: Store, tuning_id: int) -> None:
    t = store.tuning(tuning_id)
    second = t.keepalive_run_id
    candidates = [c for run_id in t.candidate_run_ids for c in store.cells(run_id)]
    review = tuning.review(t, candidates, store.cells(second) if second else None)
    tuning_text.render(review, sys.stdout)


def question(args: argparse.Namespace) -> TuneQuestion:
    slo = None
    if args.slo:
        slo = loads.parse_slo(pairs(args.slo, "--slo"), lambda m: UsageError(f"--slo: {m}")).as_dict()
    if (args.concurrency is None) == (args.rate is None):
        raise UsageError("tune asks one question: --concurrency N (clients) or --rate R (requests a second)")
    concurrency, rate = args.concurrency, args.rate
    if concurrency is not None and concurrency < 1:
        raise UsageError(f"--concurrency must be a whole number >= 1, not {concurrency}")
    if rate is not None:
        if not rate > 0:
            raise UsageError(f"--rate must be above 0 requests a second, not {rate:g}")
        if slo is None:
            raise UsageError("--rate asks which pool serves the rate within an SLO: give one, e.g. --slo p99=1s")
        budget_s = SLO.from_dict(slo).latency_budget_us / 1e6 if slo else loads.OPEN_LOOP_LATENCY_S
        concurrency = open_loop_connections(rate, budget_s)
    return TuneQuestion(args.stack, args.workload, concurrency, rate=rate,
                        machine=pairs(args.machine, "--machine") if args.machine else None, slo=slo,
                        keepalive=not args.no_keepalive, duration=args.duration, warmup=args.warmup,
                        repetitions=args.repetitions, knobs=pairs(",".join(args.knob), "--knob") if args.knob else {})


_DECIMAL = re.compile(r"^\d*\.\d+$")  # 0.5 or .5: what a plan file holds as a float


def pairs(text: str, flag: str) -> dict[str, Any]:
    """"cpus=0.5,memory=512M" → {"cpus": 0.5, "memory": "512M"}: numbers and true/false
    typed as a plan file would have them."""
    out: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise UsageError(f"{flag} takes key=value pairs separated by commas, not {part!r}")
        v: Any = value.strip()
        if v.isdigit():
            v = int(v)
        elif _DECIMAL.match(v):
            v = float(v)
        elif v in ("true", "false"):
            v = v == "true"
        out[key.strip()] = v
    return out
