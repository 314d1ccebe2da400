#!/usr/bin/env python3
"""How far below each stack's CPU per request can *any* client go here? The static
scenario with the floor client beside the engine (issue 25's bar: engine ≤ 0.6× server).

Runs `scenario static` (or --quick) with the real lab in this process. After each
cell's warm-up, and before its measured window (which the lab's monitor keeps to the
engine's own load), the floor client (bench/floor-client/floor.c: one send, one recv and
a share of epoll_wait per request, nothing else) drives the same stack on the engine's
core for the cell's duration; its CPU (rusage) and the stack's over that window (the
stack's cgroup) are its row. Printed per front × workload, medians over repetitions,
each ratio taken within one repetition: the floor's µs/req against the server's under
it, and the engine's against the server's in the measured cell — so a cell where the
engine misses the bar can be read as the engine's cost or the kernel's.

Usage: bench/static-headroom/floor.py [--quick] [--bar 0.6] [--db PATH]
"""

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
import floorclient  # noqa: E402
from run import median, stackbench  # noqa: E402  (this folder's run.py: one reading of a store)
from stackbench import engine, runner, scenarios  # noqa: E402
from stackbench.runner import lab as lab_mod  # noqa: E402
from stackbench.store import Store  # noqa: E402


def cgroup_cpu_s(instance):
    return int((instance.cgroup.path("cpuacct") / "cpuacct.usage").read_text()) / 1e9


def children_cpu_s():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


class FloorLab:
    """The real lab, with the floor client's pass after each warm-up."""

    def __init__(self, duration_s):
        self.duration_s = duration_s
        self.instances = []
        self.rows = defaultdict(list)  # (front, workload) -> one row per repetition, in order

    def instance(self, *args, **kwargs):
        inst = lab_mod.make_instance(*args, **kwargs)
        self.instances.append(inst)
        return inst

    def load(self, spec, cpus=None):
        result = engine.run(spec, cpus)
        if spec.phase == "warmup" and spec.url.startswith("http://") and not (spec.mix or spec.page):
            self.floor_pass(spec, cpus)
        return result

    def floor_pass(self, spec, cpus):
        inst = self.instances[-1]
        workload = next(w.id for w in inst.workloads if spec.url == inst.url(w.path))
        cmd = ["taskset", "-c", ",".join(map(str, cpus))] + floorclient.command(
            spec.url, spec.connections, self.duration_s)
        client0, server0, t0 = children_cpu_s(), cgroup_cpu_s(inst), time.monotonic()
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        wall, server, client = time.monotonic() - t0, cgroup_cpu_s(inst) - server0, children_cpu_s() - client0
        _, failed, ok = floorclient.own_rate(out)
        self.rows[(inst.label, workload)].append({
            "rps": ok / wall, "failed": failed, "client_us": 1e6 * client / max(ok, 1),
            "server_us": 1e6 * server / max(ok, 1)})


def table(rows, cells, bar):
    print("| front | workload | floor req/s | floor µs/req | server µs/req (floor) | floor ratio "
          "| engine µs/req | server µs/req (engine) | engine ratio | engine/floor CPU |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    summary = []
    for key in sorted(rows, key=lambda k: (k[1], k[0])):
        floor = rows[key]
        measured = sorted((c for c in cells if (c["stack_label"], c["workload"]) == key and c["requests_per_s"]),
                          key=lambda c: c["repetition"])
        pairs = list(zip(floor, measured))
        f_ratio = median(f["client_us"] / f["server_us"] for f in floor if f["server_us"])
        e_ratio = median(c["engine_cpu_us_per_request"] / c["cpu_us_per_request"] for _, c in pairs
                         if c["engine_cpu_us_per_request"] and c["cpu_us_per_request"])
        e_over_f = median(c["engine_cpu_us_per_request"] / f["client_us"] for f, c in pairs
                          if c["engine_cpu_us_per_request"])
        summary.append((key, f_ratio, e_ratio))
        print(f"| {key[0]} | {key[1]} | {median(f['rps'] for f in floor):,.0f} "
              f"| {median(f['client_us'] for f in floor):.2f} | {median(f['server_us'] for f in floor):.2f} "
              f"| {f_ratio:.2f} | {median(c['engine_cpu_us_per_request'] for _, c in pairs):.2f} "
              f"| {median(c['cpu_us_per_request'] for _, c in pairs):.2f} | {e_ratio:.2f} | {e_over_f:.2f} |")
    floor_over = [k for k, f, _ in summary if f > bar]
    engine_over = [k for k, _, e in summary if e > bar]
    print(f"\nover the bar ({bar}×): the engine in {len(engine_over)} of {len(summary)} cells, "
          f"the floor client in {len(floor_over)}")
    for key, f, e in summary:
        if e > bar:
            print(f"  {key[0]} {key[1]}: engine {e:.2f}×, floor {f:.2f}×"
                  + (" (no client on this path gets under the bar)" if f > bar else ""))


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="the scenario's quick form")
    p.add_argument("--bar", type=float, default=0.6)
    p.add_argument("--db", help="the store to write (default: a temporary one)")
    a = p.parse_args()
    floorclient.binary()
    plan = scenarios.get("static").plan(quick=a.quick)
    workdir = Path(tempfile.mkdtemp(prefix="static-floor-"))
    workdir.chmod(0o755)  # the servers' workers (www-data) read the docroot below it
    db = Path(a.db) if a.db else workdir / "results.sqlite"
    lab = FloorLab(plan.duration_s)
    outcome = runner.run_plan(plan, Store(db), options=runner.Options(workdir=workdir),
                              lab=runner.Lab(load=lab.load, instance=lab.instance))
    print(f"store: {db}, run {outcome.run_id} ({outcome.status.value})")
    doc = json.loads(stackbench("export", str(outcome.run_id), "--format", "json", "--db", str(db)))
    table(lab.rows, doc["cells"], a.bar)


if __name__ == "__main__":
    main()
