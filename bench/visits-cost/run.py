#!/usr/bin/env python3
"""The engine's own CPU a request in visits (`--journey`), against its page mode and its
plain closed loop on the same files.

nginx (bench/nginxlab.py: 1 worker pinned to core 0) serves the mixed-page workload's
assets (stackbench/workloads/mixed_page.py: 2 stylesheets, 3 scripts, 6 JPEGs) and three
static pages; the engine runs pinned to core 1, one kind at a time, interleaved round by
round so drift hits every kind alike:

- visits: a journey of three pages — the first with all 11 assets, the second with 6 of
  them and the third with 4 — no think time, each visitor new (its jar, its connections);
  `--cache-assets` keeps the browser's cache (later pages fetch none of the assets the
  first got), by default off here so every page fetches its assets;
- page: page mode on the first page and its 11 assets (visitors keep their connections);
- page-4: the same with `--keepalive-requests 4`: a connection opened every 4 requests,
  as a visit of 24 requests on its visitor's 6 new connections opens them — the part of
  a visit's cost that is its new connections;
- plain: the closed loop on the first page alone (the direct loop).

The figure is the engine's `engine_cpu` (user + system over the measured phase) over the
requests it completed, nginx's count of requests beside it.

Usage: bench/visits-cost/run.py [--rounds 3] [--duration 4] [--connections 32] [--engine PATH] [--cache-assets]
"""

import argparse
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from nginxlab import Nginx, run_measured, stop_on_signals, wait_quiet  # noqa: E402

from stackbench.workloads.mixed_page import IMAGES, SCRIPTS, STYLESHEETS, mixed_page  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ENGINE = os.path.join(ROOT, "loadgen", "target", "release", "stackbench-load")
ASSETS = [*STYLESHEETS, *SCRIPTS, *IMAGES]
PAGES = {"/visit/one.html": ASSETS, "/visit/two.html": ASSETS[:6], "/visit/three.html": ASSETS[:2] + ASSETS[-2:]}


def journey(cache_assets):
    steps = [{"page": page, "assets": assets} for page, assets in PAGES.items()]
    return json.dumps({"steps": steps, "cache_assets": cache_assets})


def commands(engine, url, conns, secs, cache_assets):
    base = ["taskset", "-c", "1", engine, "--json", "-t1", f"-c{conns}", f"-d{secs}s"]
    first = next(iter(PAGES))
    return {
        "visits": base + ["--journey", journey(cache_assets), url],
        "page": base + ["--page", first, "--assets", ",".join(PAGES[first]), url],
        "page-4": base + ["--keepalive-requests", "4", "--page", first, "--assets", ",".join(PAGES[first]), url],
        "plain": base + [url.rstrip("/") + first],
    }


def install(www):
    """The mixed page's assets and three ~20 KB pages into nginx's docroot."""
    for name, body in mixed_page().files.items():
        if name.endswith((".css", ".js", ".jpg")):
            path = os.path.join(www, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(body)
    for i, page in enumerate(PAGES):
        path = os.path.join(www, page.lstrip("/"))
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write((f"<p>page {i} " + "lorem ipsum dolor sit amet " * 740 + "</p>\n").encode())


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--duration", type=int, default=4, help="seconds per run")
    p.add_argument("--connections", type=int, default=32, help="visitors (visits, page mode) or connections (plain)")
    p.add_argument("--engine", default=DEFAULT_ENGINE)
    p.add_argument("--cache-assets", action="store_true", help="visitors keep the assets they got for the visit")
    p.add_argument("--json-out", help="write every run's figures to this file")
    a = p.parse_args()
    stop_on_signals()
    runs = {k: [] for k in ("visits", "page", "page-4", "plain")}
    with Nginx(core=0, worker_connections=4096) as nginx:
        install(os.path.join(nginx.dir, "www"))
        print(f"nginx on {nginx.url} (core 0), the engine on core 1", flush=True)
        for r in range(a.rounds):
            for kind, cmd in commands(a.engine, nginx.url, a.connections, a.duration, a.cache_assets).items():
                wait_quiet()
                before = nginx.requests()
                out, wall, _ = run_measured(cmd)
                served = nginx.requests() - before
                doc = json.loads(out)
                cpu_us = doc["engine_cpu"]["user_us"] + doc["engine_cpu"]["system_us"]
                done = doc["requests"]["completed"]
                row = {"engine_us_per_req": cpu_us / max(done, 1), "req_per_s": doc["requests_per_s"],
                       "completed": done, "failed": doc["requests"]["failed"], "nginx_served": served,
                       "busy": doc["engine_cpu"]["max_thread_busy"], "event_loop": doc["event_loop"],
                       "connections_per_req": doc["connections_opened"] / max(done, 1),
                       "body_mb_per_s": doc["bytes"]["body_received"] / 1e6 / (doc["duration_us"] / 1e6)}
                if doc.get("visits"):
                    v = doc["visits"]
                    row |= {"visits_per_s": v["per_s"], "requests_per_visit": v["requests_per_visit"],
                            "visit_p50_ms": doc["visit_duration_us"]["percentiles"]["50"] / 1e3}
                runs[kind].append(row)
                extra = (f"  {row['visits_per_s']:.0f} visits/s, {row['requests_per_visit']:.1f} requests a visit"
                         if "visits_per_s" in row else "")
                print(f"  round {r + 1} {kind:<7} {row['req_per_s']:>8.0f} req/s  engine {row['engine_us_per_req']:6.2f} "
                      f"us/req (busy {100 * (row['busy'] or 0):3.0f}%, {row['event_loop']})  "
                      f"{row['connections_per_req']:.3f} connections/req  "
                      f"{row['body_mb_per_s']:6.1f} MB/s  failed {row['failed']}{extra}", flush=True)
    print("\nmedians over rounds:")
    for kind, rows in runs.items():
        med = {k: statistics.median(x[k] for x in rows) for k in ("engine_us_per_req", "req_per_s")}
        print(f"  {kind:<7} {med['req_per_s']:>8.0f} req/s  engine {med['engine_us_per_req']:6.2f} us/req")
    for other in ("page", "page-4"):
        ratio = sorted(v["engine_us_per_req"] / p["engine_us_per_req"] for v, p in zip(runs["visits"], runs[other]))
        print(f"  visits / {other}, engine CPU a request, round by round: {statistics.median(ratio):.2f} "
              f"({ratio[0]:.2f}-{ratio[-1]:.2f})")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("visits-cost: interrupted (nginx stopped)")
