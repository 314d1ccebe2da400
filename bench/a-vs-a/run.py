"""A-vs-A trials and a known handicap, on the real stacks (issue 23).

    .venv/bin/python bench/a-vs-a/run.py [--trials 20] [--db /tmp/a-vs-a.sqlite] [--lock FILE]

Runs trial.toml (nginx + FPM twice, under two labels) --trials times and handicap.toml
(FPM 16 children against 2, at 16 clients) once, each as a normal `stackbench run` into
one store, then prints each trial's throughput verdict, how many said faster / slower /
fails (the issue: at most 1 in 20), the handicap's verdict, and the run-to-run CV of
throughput of every stack × run (the noise power.py assumes: MACHINE_CV).
With --lock, each run holds that file (flock) while it measures, so other work on the
machine waits between runs, never during one."""

from __future__ import annotations

import argparse
import math
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(ROOT))

from stackbench.analysis import power  # noqa: E402
from stackbench.analysis.run import analyze  # noqa: E402
from stackbench.store import Store  # noqa: E402

FALSE = {"higher", "lower", "candidate_fails", "baseline_fails", "neither_serves", "at_least_higher", "at_least_lower"}


def run(plan: Path, db: Path, lock: str | None) -> int:
    cmd = [sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db)]
    if lock:
        cmd = ["flock", lock] + cmd
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
    return max(r["id"] for r in Store(db).runs())


def throughput_verdicts(store: Store, run_id: int) -> list:
    a = analyze(store.run(run_id), store.cells(run_id))
    return [v for v in a.verdicts.verdicts if v.metric.key == "throughput"]


def cvs(store: Store, run_id: int) -> list[float]:
    groups: dict[tuple, list[float]] = {}
    for c in store.cells(run_id):
        if c.engine is not None and c.engine.requests_per_s:
            groups.setdefault((c.stack_label, c.workload), []).append(c.engine.requests_per_s)
    return [cv for vs in groups.values() for cv in [power.spread_cv(vs)] if cv is not None]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=20)
    ap.add_argument("--db", type=Path, default=Path("/tmp/a-vs-a.sqlite"))
    ap.add_argument("--lock")
    args = ap.parse_args()
    store_cvs: list[float] = []
    hits = 0
    for i in range(args.trials):
        rid = run(HERE / "trial.toml", args.db, args.lock)
        store = Store(args.db)
        v = throughput_verdicts(store, rid)[0]
        c = v.comparison
        hits += v.kind in FALSE
        store_cvs += cvs(store, rid)
        print(f"trial {i + 1:2}: run {rid}: {v.kind:14} ratio {c.ratio:.3f} CI {c.ci_low:.3f}–{c.ci_high:.3f} "
              f"p {c.p_value:.3g}", flush=True)
    if args.trials:
        print(f"A vs A: {hits} of {args.trials} trials said faster / slower / fails")
    rid = run(HERE / "handicap.toml", args.db, args.lock)
    store = Store(args.db)
    for v in throughput_verdicts(store, rid):
        c = v.comparison
        print(f"handicap (FPM 2 vs FPM 16 children, 16 clients), {v.question.workload}: run {rid}: {v.kind}, "
              f"ratio {c.ratio:.3f} CI {c.ci_low:.3f}–{c.ci_high:.3f} ({c.confidence:.1%})")
    store_cvs += cvs(store, rid)
    q = statistics.quantiles(store_cvs, n=4)
    print(f"throughput CV between runs, {len(store_cvs)} stack × run groups of 5: median "
          f"{statistics.median(store_cvs):.1%}, quartiles {q[0]:.1%}–{q[2]:.1%}, largest {max(store_cvs):.1%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
