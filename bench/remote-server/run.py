"""The stack on another host, measured: what connecting costs (the code shipped, the
agent started, its clock probed), and whether a stack measured through the agent gives
the figures the lab gives at home.

The server's host is an sshd in a network namespace (tests/sshd_host.py): the real SSH
path on this machine's kernel, so the same stack can be measured both ways on the same
cores, alternating, and any difference is the agent's path (and veth against loopback).

    python3 bench/remote-server/run.py              # prints the figures for bench/RESULTS.md
    python3 bench/remote-server/run.py --wordpress  # WordPress: its database beside the stack,
                                                    # on another host, both on other hosts
"""

import json
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT))
from sshd_host import sshd_in_namespace  # noqa: E402

from stackbench.planning import plan as plan_mod  # noqa: E402
from stackbench.upkeep import pinning
from stackbench.analysis import metrics  # noqa: E402
from stackbench.hosts.server import ServerSession  # noqa: E402

PLAN = """
name = "remote-server-{where}"
duration = "3s"
warmup = "1s"
concurrency = [16]
keepalive = [true]
workloads = ["php-hello"]
repetitions = 3
{hosts}
[[stacks]]
id = "nginx-fpm"
[[stacks]]
id = "apache-prefork-modphp"
"""
ROUNDS = 2
WORDPRESS = {  # where the stack and its database run: [hosts] lines
    "db beside the stack, here": "",
    "db on ssh:remote-db": 'db = "ssh:remote-db"',
    "stack on ssh:remote-test, db on ssh:remote-db": 'server = "ssh:remote-test"\ndb = "ssh:remote-db"',
}
WORDPRESS_PLAN = """
name = "wordpress-hosts"
duration = "5s"
warmup = "1s"
syscalls = false
concurrency = [4]
keepalive = [true]
workloads = ["wordpress-home"]
[hosts]
{hosts}
ssh_config = "{config}"
[[stacks]]
id = "nginx-fpm"
"""


def run(where: str, config: Path, work: Path) -> list[dict]:
    hosts = f'[hosts]\nserver = "ssh:remote-test"\nssh_config = "{config}"' if where == "remote" else ""
    plan, db = work / f"{where}.toml", work / "r.sqlite"
    plan.write_text(PLAN.format(where=where, hosts=hosts))
    subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                    "--allow-remote-target", "--workdir", str(work)], cwd=ROOT, check=True)
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        return [dict(r) for r in conn.execute("SELECT * FROM cells WHERE run_id = (SELECT max(id) FROM runs)")]


def connect_seconds(config: Path) -> list[float]:
    """Opening the server's session twice: the first ships the code (a fresh cache), the
    second finds it there."""
    subprocess.run(["rm", "-rf", str(Path.home() / ".cache/stackbench")], check=True)
    text = PLAN.format(where="x", hosts=f'[hosts]\nserver = "ssh:remote-test"\nssh_config = "{config}"')
    plan = plan_mod.parse(tomllib.loads(text), "plan.toml")
    out = []
    for _ in range(2):
        began = time.monotonic()
        session = ServerSession.open(plan.hosts, plan, pinning.choose())
        out.append(time.monotonic() - began)
        print(f"  clock: {session.offset.as_dict()}")
        session.close()
    return out


def figures(cells: list[dict]) -> dict:
    """Medians over the cells, each figure as `show` computes it (analysis/metrics.py)."""
    def median(f):
        values = [v for v in (f(c) for c in cells) if v is not None]
        return statistics.median(values) if values else float("nan")
    return {"rps": median(lambda c: json.loads(c["engine_json"])["requests_per_s"]),
            "cpu_us": median(metrics.cpu_us_per_request), "syscalls": median(metrics.syscalls_per_request),
            "mem_mib": median(lambda c: (metrics.memory_peak_bytes(c) or 0) / 2**20), "n": len(cells)}


def wordpress(config: Path, work: Path) -> None:
    """WordPress (nginx + FPM, c = 4) with its database in three places, alternating."""
    config.write_text(config.read_text() + config.read_text().replace("Host remote-test", "Host remote-db"))
    cells: dict[str, list[dict]] = {k: [] for k in WORDPRESS}
    db = work / "wp.sqlite"
    for _ in range(ROUNDS + 1):
        for where, hosts in WORDPRESS.items():
            plan = work / "wp.toml"
            plan.write_text(WORDPRESS_PLAN.format(hosts=hosts, config=config))
            subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--quiet",
                            "--allow-remote-target", "--workdir", str(work)], cwd=ROOT, check=True)
            with sqlite3.connect(db) as conn:
                conn.row_factory = sqlite3.Row
                cells[where] += [dict(r) for r in conn.execute(
                    "SELECT * FROM cells WHERE run_id = (SELECT max(id) FROM runs)")]
    for where, found in cells.items():
        f = figures(found)
        db_mib = statistics.median(c["service_mem_peak_bytes"] / 2**20 for c in found)
        db_us = statistics.median(metrics.service_cpu_us_per_request(c) for c in found)
        print(f"{where:46} n={f['n']}  pages/s {f['rps']:5.1f}  CPU µs/page {f['cpu_us']:8,.0f}  "
              f"db MiB {db_mib:5.1f}  db CPU µs/page {db_us:7,.0f}")


def main() -> None:
    work = Path(tempfile.mkdtemp(prefix="stackbench-bench-"))
    work.chmod(0o755)
    with sshd_in_namespace() as ssh:
        config = ssh / "ssh_config"
        if "--wordpress" in sys.argv:
            wordpress(config, work)
            return
        first, again = connect_seconds(config)
        print(f"connecting: {first:.2f} s with the code shipped, {again:.2f} s with it there")
        cells: dict[str, list[dict]] = {"local": [], "remote": []}
        for _ in range(ROUNDS):
            for where in ("local", "remote"):
                cells[where] += run(where, config, work)
        for stack in ("nginx-fpm", "apache-prefork-modphp"):
            for where in ("local", "remote"):
                f = figures([c for c in cells[where] if c["stack_label"] == stack])
                print(f"{stack:22} {where:6} n={f['n']}  req/s {f['rps']:8,.0f}  CPU µs/req {f['cpu_us']:6.1f}  "
                      f"mem MiB {f['mem_mib']:6.1f}  syscalls/req {f['syscalls']:5.1f}")


if __name__ == "__main__":
    main()
