#!/usr/bin/env python3
"""Where a WordPress home page's CPU goes: the lab's WordPress (its MariaDB started as a
run starts it), the page rendered by PHP's CLI with a stamp at each of WordPress's load
phases and every query timed (phases.php), ROUNDS times, pinned to the server's core.
Prints the median of each phase's wall and CPU time and the queries' count and time,
with opcache (its file cache, warmed by a first round) and without.

The CLI is not PHP-FPM: no shared opcache memory (the file cache stands in), no FastCGI.
Its total is set beside the lab's own CPU per page (`stackbench scenario run opcache
--quick`, the `CPU µs/req` column) in bench/RESULTS.md.

usage: bench/wordpress-cost/run.py [--rounds 15]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent))

from stackbench import workloads  # noqa: E402
from stackbench.stacks import registry  # noqa: E402
from stackbench.stacks.lifecycle import StackInstance  # noqa: E402
from stackbench.upkeep import pinning  # noqa: E402


def render(docroot: Path, env: dict, cpus: list[int], opcache: list[str]) -> dict:
    argv = ["taskset", "-c", ",".join(map(str, cpus)), "php8.2", *opcache, str(HERE / "phases.php"), str(docroot)]
    out = subprocess.run(argv, capture_output=True, text=True, env={**os.environ, **env}, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def phases(doc: dict) -> list[tuple[str, float, float]]:
    """(phase ending at this stamp, wall ms, CPU ms) between consecutive stamps."""
    s = doc["stamps"]
    return [(b[0], (b[1] - a[1]) / 1000, (b[2] - a[2]) / 1000) for a, b in zip(s, s[1:])]


def table(name: str, docs: list[dict]) -> None:
    rows: dict[str, list[tuple[float, float]]] = {}
    for d in docs:
        for phase, wall, cpu in phases(d):
            rows.setdefault(phase, []).append((wall, cpu))
    total_cpu = sum(statistics.median(c for _, c in v) for v in rows.values())
    print(f"\n{name}: medians of {len(docs)} renders ({docs[0]['bytes']:,} bytes)")
    print(f"  {'up to the end of':22s} {'wall ms':>8s} {'CPU ms':>8s} {'CPU share':>9s}")
    for phase, v in rows.items():
        cpu = statistics.median(c for _, c in v)
        print(f"  {phase:22s} {statistics.median(w for w, _ in v):8.1f} {cpu:8.1f} {cpu / total_cpu:9.0%}")
    wall = statistics.median(sum(w for _, w, _ in phases(d)) for d in docs)
    print(f"  {'whole page':22s} {wall:8.1f} {total_cpu:8.1f}")
    print(f"  queries: {statistics.median(d['queries'] for d in docs):.0f}, "
          f"{statistics.median(d['query_us'] for d in docs) / 1000:.1f} ms waiting for MariaDB (wall)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    pins = pinning.choose()
    wl = workloads.get("wordpress-home")
    with StackInstance(registry.get("nginx-fpm"), {}, cpus=pins.server_cpus, workloads=[wl]) as inst, \
            tempfile.TemporaryDirectory(prefix="wp-opcache-") as cache:
        inst.verify([wl.id])  # the site answers as a run finds it
        assert inst.ctx is not None and wl.docroot is not None
        env, docroot = dict(inst.ctx.php_env), wl.docroot()
        os.chmod(cache, 0o777)
        with_cache = ["-d", "opcache.enable_cli=1", "-d", f"opcache.file_cache={cache}",
                      "-d", "opcache.file_cache_only=1", "-d", "opcache.validate_timestamps=0"]
        without = ["-d", "opcache.enable_cli=0"]
        render(docroot, env, pins.server_cpus, with_cache)  # fills the file cache
        table("opcache (file cache)", [render(docroot, env, pins.server_cpus, with_cache) for _ in range(args.rounds)])
        table("no opcache", [render(docroot, env, pins.server_cpus, without) for _ in range(args.rounds)])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
