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
- plain: the closed loop on the first page alone (the direct loop);
- locust-fast, locust-http: Locust, the peer that scripts such journeys, on the same core
  doing the same visits (locustfile.py beside this script: a new session a visit, each page
  then its assets over up to 6 connections, no think time) with FastHttpUser's client and
  HttpUser's, as many users as the engine's visitors, headless. Locust runs in a venv of its
  own beside this script (.locust-venv, made with locust==LOCUST_VERSION when missing),
  never in the product's dependencies.

The figure is the engine's `engine_cpu` (user + system over the measured phase) over the
requests it completed, nginx's count of requests beside it; for Locust, the process's user +
system CPU over the requests it completed in a window of --duration seconds that opens once
every user is spawned (its imports, ramp and stop outside it).

Usage: bench/visits-cost/run.py [--rounds 3] [--duration 4] [--connections 32] [--engine PATH] [--cache-assets]
                                [--locust fast,http]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, os.path.dirname(os.path.dirname(HERE)))
from nginxlab import Nginx, run_measured, stop_on_signals, wait_quiet  # noqa: E402

from stackbench.workloads.mixed_page import IMAGES, SCRIPTS, STYLESHEETS, mixed_page  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(HERE))
DEFAULT_ENGINE = os.path.join(ROOT, "loadgen", "target", "release", "stackbench-load")
ASSETS = [*STYLESHEETS, *SCRIPTS, *IMAGES]
PAGES = {"/visit/one.html": ASSETS, "/visit/two.html": ASSETS[:6], "/visit/three.html": ASSETS[:2] + ASSETS[-2:]}
REQUESTS_A_VISIT = len(PAGES) + sum(len(assets) for assets in PAGES.values())
LOCUST_VERSION = "2.47.0"
LOCUST_VENV = os.path.join(HERE, ".locust-venv")
LOCUSTFILE = os.path.join(HERE, "locustfile.py")
LOCUST_USERS = {"fast": "FastVisitor", "http": "HttpVisitor"}  # user classes of locustfile.py


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


def ensure_locust():
    """The locust executable of the venv beside this script, made (or mended) when it is
    missing or holds another version."""
    python = os.path.join(LOCUST_VENV, "bin", "python")
    if os.path.exists(python):
        found = subprocess.run([python, "-c", "import importlib.metadata as m; print(m.version('locust'))"],
                               capture_output=True, text=True).stdout.strip()
        if found == LOCUST_VERSION:
            return os.path.join(LOCUST_VENV, "bin", "locust")
    else:
        subprocess.run([sys.executable, "-m", "venv", LOCUST_VENV], check=True)
    print(f"installing locust=={LOCUST_VERSION} into {LOCUST_VENV}", flush=True)
    subprocess.run([python, "-m", "pip", "install", "-q", f"locust=={LOCUST_VERSION}"], check=True)
    return os.path.join(LOCUST_VENV, "bin", "locust")


def locust_command(locust, user_class, url, users, secs, out):
    """Locust headless on core 1; its users all spawned within the first second (-r = -u),
    then the window of `secs` seconds (locustfile.py), then 2 s to spare before it stops."""
    env = ["env", f"VISITS_JOURNEY={json.dumps(list(PAGES.items()))}", f"VISITS_WINDOW_S={secs}", f"VISITS_OUT={out}"]
    return ["taskset", "-c", "1", *env, locust, "-f", LOCUSTFILE, "--headless", "-u", str(users), "-r", str(users),
            "-t", f"{secs + 3}s", "--only-summary", "--exit-code-on-error", "0", "--loglevel", "WARNING",
            "--host", url.rstrip("/"), user_class]


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
    p.add_argument("--locust", default="fast,http",
                   help="Locust's clients to run, of fast (FastHttpUser), http (HttpUser); '' for none")
    p.add_argument("--json-out", help="write every run's figures to this file")
    a = p.parse_args()
    clients = [c for c in a.locust.split(",") if c]
    if unknown := [c for c in clients if c not in LOCUST_USERS]:
        sys.exit(f"visits-cost: unknown Locust client {unknown[0]!r} (fast, http)")
    if a.cache_assets and clients:
        sys.exit("visits-cost: --cache-assets has no Locust counterpart here: give --locust ''")
    locust = ensure_locust() if clients else None
    stop_on_signals()
    runs = {k: [] for k in ("visits", "page", "page-4", "plain", *(f"locust-{c}" for c in clients))}
    with Nginx(core=0, worker_connections=4096) as nginx, tempfile.TemporaryDirectory() as tmp:
        install(os.path.join(nginx.dir, "www"))
        print(f"nginx on {nginx.url} (core 0), the engine and Locust {LOCUST_VERSION} on core 1", flush=True)
        for r in range(a.rounds):
            for kind, cmd in commands(a.engine, nginx.url, a.connections, a.duration, a.cache_assets).items():
                wait_quiet()
                before = nginx.requests()
                out, wall, _ = run_measured(cmd)
                served = nginx.requests() - before
                doc = json.loads(out)
                cpu_us = doc["engine_cpu"]["user_us"] + doc["engine_cpu"]["system_us"]
                done = doc["requests"]["completed"]
                row = {"client_us_per_req": cpu_us / max(done, 1), "req_per_s": doc["requests_per_s"],
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
                print(f"  round {r + 1} {kind:<11} {row['req_per_s']:>8.0f} req/s  engine {row['client_us_per_req']:6.2f} "
                      f"us/req (busy {100 * (row['busy'] or 0):3.0f}%, {row['event_loop']})  "
                      f"{row['connections_per_req']:.3f} connections/req  "
                      f"{row['body_mb_per_s']:6.1f} MB/s  failed {row['failed']}{extra}", flush=True)
            for client in clients:
                kind = f"locust-{client}"
                out = os.path.join(tmp, f"{kind}-{r}.json")
                wait_quiet()
                before, accepted = nginx.requests(), nginx.accepted()
                _, wall, process_cpu = run_measured(
                    locust_command(locust, LOCUST_USERS[client], nginx.url, a.connections, a.duration, out))
                served, opened = nginx.requests() - before, nginx.accepted() - accepted
                if not os.path.exists(out):
                    sys.exit(f"visits-cost: {kind} stopped before its window closed (no {out})")
                with open(out) as f:
                    w = json.load(f)
                done = w["completed"]
                row = {"client_us_per_req": w["cpu_s"] * 1e6 / max(done, 1), "req_per_s": done / w["wall_s"],
                       "completed": done, "failed": w["failed"], "nginx_served": served,
                       "busy": w["cpu_s"] / w["wall_s"], "process_cpu_s": process_cpu, "process_wall_s": wall,
                       "connections_per_req": opened / max(served, 1),
                       "visits_per_s": done / w["wall_s"] / REQUESTS_A_VISIT}
                runs[kind].append(row)
                print(f"  round {r + 1} {kind:<11} {row['req_per_s']:>8.0f} req/s  locust {row['client_us_per_req']:6.2f} "
                      f"us/req (busy {100 * row['busy']:3.0f}%; the whole process {process_cpu:.1f} s CPU in {wall:.1f} s)  "
                      f"{row['connections_per_req']:.3f} connections/req (nginx's count, the whole run)  "
                      f"failed {row['failed']}  ~{row['visits_per_s']:.0f} visits/s", flush=True)
    print("\nmedians over rounds (range):")
    for kind, rows in runs.items():
        who = "locust" if kind.startswith("locust") else "engine"
        med = {k: (statistics.median(x[k] for x in rows), min(x[k] for x in rows), max(x[k] for x in rows))
               for k in ("client_us_per_req", "req_per_s")}
        print(f"  {kind:<11} {med['req_per_s'][0]:>8.0f} req/s ({med['req_per_s'][1]:.0f}-{med['req_per_s'][2]:.0f})  "
              f"{who} {med['client_us_per_req'][0]:6.2f} us/req "
              f"({med['client_us_per_req'][1]:.2f}-{med['client_us_per_req'][2]:.2f})")
    for kind, other in [("visits", "page"), ("visits", "page-4"), *((f"locust-{c}", "visits") for c in clients)]:
        ratio = sorted(v["client_us_per_req"] / p["client_us_per_req"] for v, p in zip(runs[kind], runs[other]))
        print(f"  {kind} / {other}, CPU a request, round by round: {statistics.median(ratio):.2f} "
              f"({ratio[0]:.2f}-{ratio[-1]:.2f})")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(runs, f, indent=2)


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("visits-cost: interrupted (nginx stopped)")
