"""kill -9 of the lab in the middle of a real run, then `run --resume` (integration): no
cell missing, none duplicated, the run complete, nothing left behind."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from conftest import require_stack
from test_interrupt_real import lab_processes, stored_cells

pytestmark = pytest.mark.servers

PLAN = """
name = "resume"
duration = "0.5s"
warmup = "0s"
syscalls = false
concurrency = [1, 4]
keepalive = [true]
workloads = ["static-12b"]
repetitions = 3
baseline = "A"
[[stacks]]
id = "nginx-fpm"
label = "A"
[[stacks]]
id = "nginx-fpm"
label = "B"
knobs = { nginx_workers = 1 }
"""


def test_kill_9_then_resume_finishes_the_run_exactly_once(workdir):
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(PLAN)
    base = [sys.executable, "-m", "stackbench"]
    proc = subprocess.Popen(base + ["run", str(plan), "--db", str(db), "--workdir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while stored_cells(db) < 5 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before it could be killed"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    killed_at = stored_cells(db)
    assert 5 <= killed_at < 12
    # Servers die with the lab (PDEATHSIG); give the kernel a moment to deliver it.
    deadline = time.monotonic() + 5
    while lab_processes(str(workdir)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert lab_processes(str(workdir)) == []
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM runs").fetchone()[0] == "running"  # it never got to say

    res = subprocess.run(base + ["run", "--resume", "1", "--db", str(db), "--workdir", str(workdir)],
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    with sqlite3.connect(db) as conn:
        seqs = [r[0] for r in conn.execute("SELECT seq FROM cells WHERE run_id = 1 ORDER BY seq")]
        status, stop = conn.execute("SELECT status, stop_json FROM runs WHERE id = 1").fetchone()
        assert conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
    assert seqs == list(range(12)), "a cell is missing or was measured twice"
    assert status == "complete" and json.loads(stop)["repetitions"] == 3
    assert "verdicts (baseline: A)" in res.stdout
    again = subprocess.run(base + ["run", "--resume", "1", "--db", str(db)], capture_output=True, text=True)
    assert again.returncode == 2 and "nothing to resume" in again.stderr
    if os.geteuid() == 0:
        from pathlib import Path

        left = [p for c in ("memory", "unified", "cpuacct", "pids")
                for p in Path(f"/sys/fs/cgroup/{c}/stackbench").glob("*")]
        assert [p for p in left if p.is_dir()] == [], left
