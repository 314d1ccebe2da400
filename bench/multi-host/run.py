"""Clients on two hosts, measured: how closely their engines start together, how well
the lab knows the remote clock, and what one merged load looks like beside its parts.

The remote host is an sshd in a network namespace (tests/sshd_host.py): a real SSH
path (handshake, ControlMaster channels, the engine shipped and run over it), on this
machine's clock, so the true offset is 0 and the measured one shows the probe's error.

    python3 bench/multi-host/run.py            # prints the figures for bench/RESULTS.md
"""

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
from sshd_host import sshd_in_namespace  # noqa: E402

PLAN = """
name = "multi-host"
duration = "3s"
warmup = "1s"
syscalls = false
concurrency = [4, 16, 64]
keepalive = [true]
workloads = ["php-hello"]
repetitions = 3
[hosts]
client = {clients}
ssh_config = "{config}"
[[stacks]]
id = "nginx-fpm"
"""


def run(clients: list[str], config: Path, work: Path) -> list[dict]:
    plan, db = work / f"{len(clients)}-{clients[-1][:3]}.toml", work / "r.sqlite"
    plan.write_text(PLAN.format(clients=json.dumps(clients), config=config))
    subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                    "--allow-remote-target", "--workdir", str(work)], cwd=ROOT, check=True)
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT concurrency, engine_json FROM cells WHERE run_id = (SELECT max(id) FROM runs)")
        return [{"c": c, **json.loads(doc)} for c, doc in rows]


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="stackbench-bench-"))
    work.chmod(0o755)
    with sshd_in_namespace() as ssh:
        for clients in (["local", "local"], ["local", "ssh:remote-test"]):
            cells = run(clients, ssh / "ssh_config", work)
            spreads = sorted(c["start_sync"]["spread_us"] for c in cells)
            late = sorted(cl["late_us"] for c in cells for cl in c["clients"])
            remote = [cl for cl in cells[0]["clients"] if cl.get("offset_us") is not None]
            print(f"\nclients {clients}: {len(cells)} cells")
            print(f"  start spread µs: median {statistics.median(spreads):,.0f}, max {spreads[-1]:,}, all {spreads}")
            print(f"  each engine's lateness after the instant µs: median {statistics.median(late):,.0f}, max {late[-1]:,}")
            for r in remote:
                print(f"  {r['host']}: clock offset {r['offset_us']:+,} µs ± {r['offset_uncertainty_us']} "
                      f"(best probe RTT {r['clock_rtt_us']} µs of {r['clock_probes']})")
            for c in cells:
                parts = "  ".join(f"{cl['host']}: {cl['requests_per_s']:,.0f}/s p99 {cl['latency_p99_us']:,} µs"
                                  for cl in c["clients"])
                print(f"  c={c['c']:>3}: merged {c['requests_per_s']:,.0f}/s p50 {c['latency_us']['percentiles']['50']:,} "
                      f"p99 {c['latency_us']['percentiles']['99']:,} µs | {parts}")


if __name__ == "__main__":
    main()
