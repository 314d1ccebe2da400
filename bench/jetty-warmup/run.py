#!/usr/bin/env python3
"""How long Jetty's JVM takes to warm up: one jetty-fpm start (its server on core 0), then
back-to-back windows of the lab's engine (on core 1) against it, each window's requests a
second and connections that got no response printed — the figures behind docs/servers.md,
"Jetty" (a JIT to warm) and bench/RESULTS.md, "Jetty + PHP-FPM (session 20)".

Usage: bench/jetty-warmup/run.py [--path /hello.html] [-c 100] [--window 1] [--windows 24] [--knob NAME=N ...]
(as root, under `flock /tmp/sb-work.lock` on a shared machine; STACKBENCH_LOAD names the engine)
"""

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent.parent))

from stackbench import engine, workloads  # noqa: E402
from stackbench.stacks.lifecycle import StackInstance  # noqa: E402
from stackbench.stacks.registry import STACKS  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--path", default="/hello.html")
    ap.add_argument("-c", "--connections", type=int, default=100)
    ap.add_argument("--window", type=float, default=1.0, help="seconds a window")
    ap.add_argument("--windows", type=int, default=24)
    ap.add_argument("--knob", action="append", default=[], help="a whole-number knob of jetty-fpm, NAME=N")
    args = ap.parse_args()
    knobs = {"pm": "static", "pm_max_children": 16, **{k: int(v) for k, v in (kv.split("=", 1) for kv in args.knob)}}
    docs = [workloads.get("static-12b"), workloads.get("php-hello")]
    with StackInstance(STACKS["jetty-fpm"], knobs, cpus=[0],
                       workloads=docs) as inst:
        inst.verify([w.id for w in docs])
        print(f"jetty-fpm {knobs}, {args.path}, {args.connections} clients, {args.window:g} s windows from its start")
        for i in range(args.windows):
            result = engine.run(engine.LoadSpec(url=inst.url(args.path), connections=args.connections,
                                                duration_s=args.window), cpus=[1]).raw
            silent = next((w for w in result.get("warnings", []) if "got no response" in w), "")
            print(f"{(i + 1) * args.window:5.1f} s  {result['requests']['completed'] / args.window:9,.0f} req/s"
                  f"  {silent.split(':')[0]}", flush=True)


if __name__ == "__main__":
    main()
