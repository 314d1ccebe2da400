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
from stackbench.errors import UsageError
from stackbench.planning import loads
from stackbench.planning import tune as tune_plan
from stackbench.planning.tune import TuneQuestion
from stackbench.report.text import tuning as tuning_text
from stackbench.report.text.progress import TerminalProgress
from stackbench.runner import Options
from stackbench.runner import tune as tune_runner
from stackbench.store import Store


def cmd_tune(args: argparse.Namespace) -> int:
    q = question(args)
    tune_plan.candidates_plan(q, [1])  # every key checked before anything starts
    if args.dry_run:
        print(f"tune {q.stack_id} for {q.workload} at {q.concurrency} clients: a memory probe (1 run of "
              f"{min(tune_plan.PROBE_SIZE, q.concurrency)} workers), then pools of 1, 2, 4 … workers up to what fits "
              f"and {q.concurrency}, {q.repetitions} runs of {q.duration} each (+ {q.warmup} warm-up and a start "
              "per run); a pool whose workers hold connections is tried once more with one request a connection")
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
        print(f"{t.id:>3}  {t.created_at}  {t.stack_id} {t.workload} c={t.concurrency} {machine}  → {knobs}")
    return 0


def _show(store: Store, tuning_id: int) -> None:
    t = store.tuning(tuning_id)
    second = t.keepalive_run_id
    review = tuning.review(t, store.cells(t.run_id), store.cells(second) if second else None)
    tuning_text.render(review, sys.stdout)


def question(args: argparse.Namespace) -> TuneQuestion:
    slo = None
    if args.slo:
        slo = loads.parse_slo(pairs(args.slo, "--slo"), lambda m: UsageError(f"--slo: {m}")).as_dict()
    if args.concurrency < 1:
        raise UsageError(f"--concurrency must be a whole number >= 1, not {args.concurrency}")
    return TuneQuestion(args.stack, args.workload, args.concurrency,
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
