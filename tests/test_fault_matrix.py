"""The fault matrix: every way a real `stackbench run` can end — normally, Ctrl-C,
SIGTERM, SIGHUP (its terminal closed), kill -9 followed by the next run or by
`stackbench clean`, a server killed mid-run — against what must hold afterwards:
0 leftovers (processes of the lab's binaries, the lab's cgroups, its run and scratch
directories, sockets, network namespaces and veths) and 0 lost cells (every cell the lab
reported finished is in the store, which passes PRAGMA integrity_check).

The system is snapshot before and after; a leftover is anything in the second snapshot
that was not in the first. Tiny plans (1 s cells, no system-call pass): a few seconds a
fault.
"""

from __future__ import annotations

import json
import os
import pty
import select
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from conftest import require_stack

pytestmark = pytest.mark.servers

ROOT = Path(__file__).resolve().parent.parent
# The programs a lab runs: its servers (as their processes name themselves), the load
# engine, the system-call counters.
LAB_BINARIES = {"nginx", "php-fpm8.2", "apache2", "varnishd", "cache-main", "mariadbd", "lighttpd", "h2o",
                "caddy", "php-cgi8.2", "stackbench-load", "perf", "strace"}
# Names the lab gives its network namespaces and veth devices.
NET_PREFIXES = ("stackbench", "sb-")

PLAN = """
name = "fault"
duration = "1s"
warmup = "0s"
syscalls = false
concurrency = [1, 2, 4, 8]
keepalive = [true]
workloads = ["php-hello"]
[[stacks]]
id = "nginx-fpm"
"""
CELLS = 4
NEXT_PLAN = PLAN.replace("[1, 2, 4, 8]", "[1]").replace('"fault"', '"next"')


# -- what the machine holds ----------------------------------------------------------
def snapshot(workdir: Path) -> dict[str, set]:
    return {"processes": _lab_processes(), "cgroups": _cgroups(), "directories": _directories(workdir),
            "sockets": _sockets(workdir), "namespaces": _namespaces(), "links": _links()}


def _lab_processes() -> set[str]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        comm, state = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2]
        if comm in LAB_BINARIES and state != "Z":  # a zombie is dead, only not reaped by init
            found.add(f"{entry.name} {comm}")
    return found


def _cgroups() -> set[str]:
    return {str(p) for base in [Path("/sys/fs/cgroup"), *Path("/sys/fs/cgroup").iterdir()]
            for p in (base / "stackbench").rglob("*") if p.is_dir()} | \
        {str(p) for p in Path("/sys/fs/cgroup").glob("*/stackbench")}


def _directories(workdir: Path) -> set[str]:
    return {str(p) for base in (Path(tempfile.gettempdir()), workdir) for p in base.glob("stackbench-*")
            if p.is_dir() and p != workdir}


def _sockets(workdir: Path) -> set[str]:
    lines = Path("/proc/net/unix").read_text().splitlines()[1:]
    return {line.split()[-1] for line in lines if len(line.split()) > 7 and
            (str(workdir) in line.split()[-1] or "/stackbench-" in line.split()[-1])}


def _namespaces() -> set[str]:
    out = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    return {line.split()[0] for line in out.splitlines() if line.startswith(NET_PREFIXES)}


def _links() -> set[str]:
    out = subprocess.run(["ip", "-br", "link"], capture_output=True, text=True).stdout
    return {line.split()[0].split("@")[0] for line in out.splitlines() if line.startswith(NET_PREFIXES)}


def leftovers(before: dict[str, set], after: dict[str, set]) -> dict[str, set]:
    return {kind: after[kind] - before[kind] for kind in after if after[kind] - before[kind]}


# -- a lab -----------------------------------------------------------------------------
@dataclass
class Lab:
    """`stackbench run --json` as a child; the cells it reports (after storing them)."""

    proc: subprocess.Popen
    reported: list[dict] = field(default_factory=list)
    master: int | None = None  # the pty's master side, when it runs on a terminal
    closing: threading.Event = field(default_factory=threading.Event)
    reader: threading.Thread | None = None

    @classmethod
    def start(cls, plan: Path, db: Path, workdir: Path, on_terminal: bool = False) -> "Lab":
        argv = [sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir", str(workdir),
                "--json"]
        if not on_terminal:
            lab = cls(subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
            threading.Thread(target=lab._read, args=(lab.proc.stdout,), daemon=True).start()
            return lab
        master, slave = pty.openpty()
        # Its own session with the pty as controlling terminal: closing the master is the
        # terminal going away, and the kernel sends the session SIGHUP.
        proc = subprocess.Popen(argv, cwd=ROOT, stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                                preexec_fn=lambda: __import__("fcntl").ioctl(0, __import__("termios").TIOCSCTTY, 0))
        os.close(slave)
        lab = cls(proc, master=master)
        lab.reader = threading.Thread(target=lab._read_terminal, daemon=True)
        lab.reader.start()
        return lab

    def _read(self, stream) -> None:
        for line in stream:
            self._line(line)

    def _line(self, line: str) -> None:
        if line.lstrip().startswith("{"):
            self.reported.append(json.loads(line))

    def _read_terminal(self) -> None:
        """Until the terminal is closed (the master must then have no reader left: a
        blocked read would keep it open)."""
        pending = b""
        while not self.closing.is_set():
            if select.select([self.master], [], [], 0.05)[0]:
                try:
                    pending += os.read(self.master, 65536)
                except OSError:
                    return
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    self._line(line.decode(errors="replace"))

    def close_terminal(self) -> None:
        self.closing.set()
        self.reader.join()
        os.close(self.master)

    def wait_cells(self, n: int, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while len(self.reported) < n and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.02)
        assert len(self.reported) >= n, f"the lab reported {len(self.reported)} cells, exit {self.proc.poll()}"

    def end(self, timeout: float = 60) -> int:
        status = self.proc.wait(timeout=timeout)
        time.sleep(0.2)  # the reader thread's last lines
        return status


def stackbench(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stackbench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def servers_gone(workdir: Path, timeout: float = 5) -> None:
    """After kill -9 the kernel delivers PDEATHSIG; give it a moment."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if not any(str(workdir) in _cmdline(p) for p in Path("/proc").iterdir() if p.name.isdigit()):
            return
        time.sleep(0.05)


def _cmdline(proc: Path) -> str:
    try:
        return (proc / "cmdline").read_bytes().decode(errors="replace")
    except OSError:
        return ""


# -- the faults ------------------------------------------------------------------------
def normal_end(lab: Lab, ctx: dict) -> None:
    assert lab.end() == 0


def signal_after_a_cell(sig: int):
    def fault(lab: Lab, ctx: dict) -> None:
        lab.wait_cells(1)
        lab.proc.send_signal(sig)
        assert lab.end() == 130
    return fault


def terminal_closed(lab: Lab, ctx: dict) -> None:
    lab.wait_cells(1)
    lab.close_terminal()
    assert lab.end() == 130


def kill_9(then: str):
    def fault(lab: Lab, ctx: dict) -> None:
        lab.wait_cells(1)
        lab.proc.send_signal(signal.SIGKILL)
        lab.end()
        servers_gone(ctx["workdir"])
        if then == "next run":
            ctx["plan"].with_name("next.toml").write_text(NEXT_PLAN)
            res = stackbench("run", str(ctx["plan"].with_name("next.toml")), "--db", str(ctx["db"]),
                             "--workdir", str(ctx["workdir"]))
            assert res.returncode == 0, res.stderr
            assert "run 1 was still marked running, but its lab is gone: marked crashed" in res.stderr
            assert "a lab that died had left this: removed run directory" in res.stderr
        else:
            res = stackbench("clean", "--db", str(ctx["db"]))
            assert res.returncode == 0, res.stderr
            assert "removed run directory" in res.stdout and "marked run 1" in res.stdout
    return fault


def server_killed(lab: Lab, ctx: dict) -> None:
    """PHP-FPM's whole process group killed in the middle of a cell after the first (each
    cell starts the stack afresh): that cell fails, the plan goes on. A master counts
    once it has lived 0.3 s — a config check's `php-fpm -t` names itself a master too, for
    a moment — and the cell it serves is the one after those the lab has reported."""
    lab.wait_cells(1)
    seen = _fpm_masters(ctx["workdir"])  # the first cell's, stopping now
    ctx["killed_cell"] = None
    deadline = time.monotonic() + 30
    while ctx["killed_cell"] is None and time.monotonic() < deadline and lab.proc.poll() is None:
        for pid in sorted(_fpm_masters(ctx["workdir"]) - seen):
            seen.add(pid)
            time.sleep(0.3)
            if pid in _fpm_masters(ctx["workdir"]):
                cell = len(lab.reported)
                try:
                    os.killpg(pid, signal.SIGKILL)
                    ctx["killed_cell"] = cell
                except ProcessLookupError:  # ended after all: the next cell's, then
                    pass
                break
        time.sleep(0.01)
    assert lab.end() == 5, f"a server failed; the other cells were measured (killed in cell {ctx['killed_cell']})"


def _fpm_masters(workdir: Path) -> set[int]:
    return {int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()
            and "php-fpm: master process" in _cmdline(p) and str(workdir) in _cmdline(p)}


FAULTS = {
    "normal end": (normal_end, "complete"),
    "Ctrl-C": (signal_after_a_cell(signal.SIGINT), "interrupted"),
    "SIGTERM": (signal_after_a_cell(signal.SIGTERM), "interrupted"),
    "SIGHUP (terminal closed)": (terminal_closed, "interrupted"),
    "kill -9, then the next run": (kill_9("next run"), "crashed"),
    "kill -9, then stackbench clean": (kill_9("clean"), "crashed"),
    "a server killed mid-run": (server_killed, "failed"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_no_leftovers_and_no_lost_cells(fault, workdir):
    require_stack("nginx-fpm")
    act, final_status = FAULTS[fault]
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(PLAN)
    before = snapshot(workdir)
    lab = Lab.start(plan, db, workdir, on_terminal=fault.startswith("SIGHUP"))
    ctx = {"workdir": workdir, "plan": plan, "db": db}
    act(lab, ctx)

    assert leftovers(before, snapshot(workdir)) == {}
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        stored = {(r, s): st for r, s, st in conn.execute("SELECT run_id, seq, status FROM cells")}
        status = conn.execute("SELECT status FROM runs WHERE id = 1").fetchone()[0]
    reported = {(c["run_id"], c["seq"]) for c in lab.reported}
    assert reported and reported <= set(stored), f"lost: {reported - set(stored)}"
    assert status == final_status
    if final_status in ("complete", "failed"):
        assert sorted(s for r, s in stored if r == 1) == list(range(CELLS))
    if fault == "a server killed mid-run":
        failed = [s for (r, s), st in stored.items() if st == "failed"]
        assert ctx["killed_cell"] is not None, "no cell's server lived long enough to be killed"
        assert failed == [ctx["killed_cell"]], "the killed cell failed, and only it: the plan went on"
