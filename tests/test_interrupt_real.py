"""Ctrl-C during a real run (integration): the CLI exits 130, the cells measured before
the interrupt are in the store, and no server process or cgroup is left behind."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import require_stack

pytestmark = pytest.mark.servers

PLAN = """
name = "interrupt"
duration = "1s"
warmup = "0s"
concurrency = [1, 4, 8, 16]
keepalive = [true]
workloads = ["static-12b"]
[[stacks]]
id = "nginx-fpm"
"""


def stored_cells(db: Path) -> int:
    try:
        with sqlite3.connect(db) as conn:
            return conn.execute("SELECT COUNT(*) FROM cells").fetchone()[0]
    except sqlite3.Error:
        return 0


def lab_processes(marker: str) -> list[str]:
    out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if marker in line and not line.startswith("Z")]


# A fractional CPU: a quota in the v1 cpu hierarchy, another mount than the others.
QUOTA = 'machine = { cpus = 0.5 }\n'


@pytest.mark.parametrize("machine", ["", QUOTA], ids=["no machine profile", "cpus = 0.5"])
def test_ctrl_c_keeps_results_and_leaves_nothing(workdir, machine):
    require_stack("nginx-fpm")
    if machine and os.geteuid() != 0:
        pytest.skip("a CPU quota needs root (cgroups)")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(machine + PLAN)
    proc = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db),
                             "--workdir", str(workdir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while stored_cells(db) < 2 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert b"interrupted" in err
    assert b"static-12b" in out  # the table of what was measured is still printed
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "interrupted"
        assert conn.execute("SELECT COUNT(*) FROM cells WHERE status = 'ok'").fetchone()[0] >= 2
    assert lab_processes(str(workdir)) == [], "a server of the interrupted run is still running"
    if os.geteuid() == 0:
        left = [p for c in ("memory", "unified", "cpuacct", "pids", "cpu", "cpuset")
                for p in Path(f"/sys/fs/cgroup/{c}/stackbench").glob("stackbench-*")]
        assert left == [], left
        lab_run = [p for p in Path("/sys/fs/cgroup").glob(f"*/stackbench/run-{proc.pid}")]
        assert lab_run == [], lab_run
