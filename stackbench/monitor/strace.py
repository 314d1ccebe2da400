"""Counting system calls with `strace -c -f` where perf cannot (no perf, no cgroup v2).

strace stops the traced process at every system call, so servers run 2–10× slower
(docs/servers.md, "System calls"): it is used only in the profile pass (never in the
measured window), and the cell gets a note saying so. Per-request counts stay exact: the
pass's calls divided by the requests completed while strace was attached. strace must be
given every pid (`-p` on a master misses workers that already exist), plus -f for new
children.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import threading
import time
from pathlib import Path

from stackbench.upkeep import leftovers
from stackbench.upkeep.supervise import die_with_parent
from stackbench.monitor.syscalls import WindowCounts

ROW = re.compile(r"^\s*[\d.]+\s+[\d.]+\s+\d+\s+(\d+)\s+(?:\d+\s+)?(\w+)\s*$")
NOTE = "system calls counted with strace -c (perf unavailable): the profile pass ran slower, counts per request are exact"


def available() -> bool:
    return shutil.which("strace") is not None


def parse_summary(text: str) -> dict[str, int]:
    """The table `strace -c` prints: % time, seconds, usecs/call, calls, [errors], syscall."""
    counts: dict[str, int] = {}
    for line in text.splitlines():
        m = ROW.match(line)
        if m and m.group(2) != "total":
            counts[m.group(2)] = counts.get(m.group(2), 0) + int(m.group(1))
    counts["total"] = sum(counts.values())
    return counts


class StraceCounter:
    def __init__(self, pids: list[int], cpus: list[int] | None = None):
        self.pids = pids
        self.cpus = cpus
        self._dir = leftovers.make_dir("stackbench-strace-")
        self.out_path = self._dir / "strace.txt"
        self._proc: subprocess.Popen | None = None
        self._t0 = 0.0
        self.seconds = 0.0

    def start(self) -> None:
        argv = ["strace", "-c", "-f", "-q", "-o", str(self.out_path)]
        for pid in self.pids:
            argv += ["-p", str(pid)]

        def preexec() -> None:
            die_with_parent()  # detaches from the servers when a killed lab takes it along
            if self.cpus:
                os.sched_setaffinity(0, self.cpus)

        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, preexec_fn=preexec)
        time.sleep(0.3)  # attaching to every thread takes a moment; calls before are not counted
        if self._proc.poll() is not None:
            stderr = self._proc.stderr.read() if self._proc.stderr else b""  # asked for as a pipe
            raise RuntimeError(f"strace exited: {stderr.decode(errors='replace')[:300]}")
        self._t0 = time.monotonic()

    def stop(self, wait: bool = True) -> threading.Thread | None:
        if self._proc and self._proc.poll() is None:
            self.seconds = time.monotonic() - self._t0
            self._proc.send_signal(signal.SIGINT)
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        return None

    def window(self, window_start_us: int, window_end_us: int) -> WindowCounts | None:
        """Everything strace saw (it detaches only at stop); call after stop()."""
        try:
            counts = parse_summary(self.out_path.read_text())
        except OSError:
            return None
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
        return WindowCounts(counts, self.seconds) if counts.get("total") else None
