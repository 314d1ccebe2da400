#!/usr/bin/env python3
"""Is the engine ever the bottleneck of the `static` scenario? (issue 25's bar)

Runs `stackbench scenario run static` (or its --quick form) into a store of its own,
then prints, per front × file × clients, the medians over the repetitions of the
server's CPU per request (the stack's cgroup), the engine's CPU per request (its own
rusage over the same window), their ratio, and each side's busy share of its core —
so the bar (engine ≤ 0.6× the server in every cell) and which side limited each cell
can be read off one table. `--db STORE --run N` reads a run already made instead.

Usage: bench/static-headroom/run.py [--quick] [--cpu-idle auto|as-is|poll|poll-engine] [--db STORE --run N] [--bar 0.6]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PY = os.path.join(ROOT, ".venv", "bin", "python")


def stackbench(*args):
    return subprocess.run([PY, "-m", "stackbench", *args], cwd=ROOT, check=True, capture_output=True, text=True).stdout


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec):
    return "-" if x is None else format(x, spec)


def table(doc, bar):
    groups = defaultdict(list)
    for c in doc["cells"]:
        if c["requests_per_s"]:
            groups[(c["stack_label"], c["workload"], c["concurrency"])].append(c)
    print("| front | workload | clients | req/s | server µs/req | engine µs/req | ratio | server busy | engine busy | limit |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    worst = []
    for (front, workload, clients), cells in sorted(groups.items(), key=lambda kv: (kv[0][1], kv[0][2], kv[0][0])):
        server = median(c["cpu_us_per_request"] for c in cells)
        engine = median(c["engine_cpu_us_per_request"] for c in cells)
        # Each repetition's own ratio (engine and server measured over one window),
        # then their median: not the ratio of medians taken apart (bench/engine-vs-wrk).
        ratio = median([c["engine_cpu_us_per_request"] / c["cpu_us_per_request"] for c in cells
                        if c["engine_cpu_us_per_request"] and c["cpu_us_per_request"]])
        limits = sorted({c.get("bottleneck") or "-" for c in cells})
        worst.append((ratio or 0, front, workload, clients))
        print(f"| {front} | {workload} | {clients} | {fmt(median(c['requests_per_s'] for c in cells), ',.0f')} "
              f"| {fmt(server, '.2f')} | {fmt(engine, '.2f')} | {fmt(ratio, '.2f')} "
              f"| {fmt(median(c['server_busy_share'] for c in cells), '.0%')} "
              f"| {fmt(median(c['engine_busy_share'] for c in cells), '.0%')} | {'/'.join(limits)} |")
    over = [w for w in worst if w[0] > bar]
    print(f"\n{len(worst) - len(over)} of {len(worst)} cells have the engine at ≤ {bar}× the server's CPU per request")
    for ratio, front, workload, clients in sorted(over, reverse=True):
        print(f"  over the bar: {front} {workload} c={clients}: {ratio:.2f}×")
    return not over


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the scenario's quick form")
    # No choices here: the lab's --cpu-idle checks its own (one list, upkeep/idle.py).
    p.add_argument("--cpu-idle", help="the lab's --cpu-idle: auto, as-is, poll or poll-engine (default: the plan's, auto)")
    p.add_argument("--db", help="read this store instead of running (with --run)")
    p.add_argument("--run", help="the run id in --db")
    p.add_argument("--bar", type=float, default=0.6)
    a = p.parse_args()
    if a.db:
        db, run = a.db, a.run or ""
    else:
        db = os.path.join(tempfile.mkdtemp(prefix="static-headroom-"), "results.sqlite")
        stackbench("scenario", "run", "static", *(["--quick"] if a.quick else []),
                   *(["--cpu-idle", a.cpu_idle] if a.cpu_idle else []), "--quiet", "--db", db)
        run = ""
        print(f"store: {db}")
    doc = json.loads(stackbench("export", *([run] if run else []), "--format", "json", "--db", db))
    sys.exit(0 if table(doc, a.bar) else 1)


if __name__ == "__main__":
    main()
