"""System calls of a stack's cgroup, counted in the kernel by perf tracepoints.

`perf stat -a -e raw_syscalls:sys_enter,syscalls:sys_enter_X,... -G CG,...` counts every
call the stack's processes make (strace slows servers 2–10×). It is not free either:
with these tracepoints on, every system call takes the kernel's slow path — nginx
serving 60k small files/s lost ~15 % (bench/monitor-overhead). So the runner never counts
during the measured window: it runs a short separate *profile pass* with perf on, after
the measured run (runner.py). perf runs in interval mode (-I) and the pass sums the
intervals that fall inside the engine's window; perf prints interval times relative to
its own start, and the wall-clock offset is fixed when its first line appears.

Closing the tracepoints takes ~2 s of kernel time (and blocks the next perf from
opening them), so `stop(wait=False)` leaves that to a background reaper.

Only the named calls are counted one by one (all ~360 tracepoints take 14 s to open);
`raw_syscalls:sys_enter` counts them all, so "other" = total − named.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from stackbench.upkeep import leftovers
from stackbench.upkeep.supervise import die_with_parent

# Chosen to explain web servers: network I/O, event loops, file lookups (the .htaccess
# storm is openat/newstat/getcwd/access), process and memory management.
NAMED = (
    "read", "write", "readv", "writev", "pread64", "sendfile64", "recvfrom", "sendto", "recvmsg", "sendmsg",
    "accept4", "accept", "connect", "socket", "shutdown", "close", "setsockopt", "getsockopt", "getsockname",
    "epoll_wait", "epoll_ctl", "poll", "select",
    "openat", "newstat", "newlstat", "newfstat", "newfstatat", "statx", "access", "getcwd", "readlink",
    "lseek", "fcntl", "ioctl", "getdents64",
    "mmap", "munmap", "brk", "futex", "times", "rt_sigprocmask", "kill", "wait4", "clone", "clone3",
    # PHP's per-request bookkeeping (seen with strace -c on mod_php and FPM): signal
    # handlers, the max_execution_time timer, chdir to the script's directory.
    "rt_sigaction", "setitimer", "chdir", "pselect6", "readlinkat", "getpid", "epoll_pwait",
)
TOTAL = "raw_syscalls:sys_enter"
INTERVAL_MS = 100
START_DEADLINE_S = 20.0


@dataclass
class Interval:
    end_rel_s: float  # perf's own clock: seconds since its counters started
    counts: dict[str, int] = field(default_factory=dict)


@dataclass
class WindowCounts:
    counts: dict[str, int]  # per call name, plus "total"
    seconds: float  # how much of the window the summed intervals cover


def unavailable_reason(cgroup_perf_name: str | None) -> str | None:
    if shutil.which("perf") is None:
        return "perf is not installed (apt-get install linux-perf)"
    if cgroup_perf_name is None:
        return "no cgroup v2 (unified) hierarchy for perf -G"
    if os.geteuid() != 0:
        return "counting a cgroup's system calls needs root"
    return None


class SyscallCounter:
    def __init__(self, cgroup_perf_name: str, names: tuple[str, ...] = NAMED, cpus: list[int] | None = None):
        self.cgroup = cgroup_perf_name
        self.names = names
        self.cpus = cpus
        self._dir = leftovers.make_dir("stackbench-perf-")
        self.out_path = self._dir / "perf.csv"
        self._proc: subprocess.Popen | None = None
        self._offset_us: int | None = None  # wall clock (µs) of perf's time 0
        self._intervals: list[Interval] = []
        self._read_pos = 0
        self._pending: dict[float, Interval] = {}

    def start(self) -> None:
        events = [TOTAL] + [f"syscalls:sys_enter_{n}" for n in self.names]
        argv = ["perf", "stat", "-a", "-x", ",", "-I", str(INTERVAL_MS), "-o", str(self.out_path),
                "-e", ",".join(events), "-G", ",".join([self.cgroup] * len(events))]

        def preexec() -> None:
            die_with_parent()  # perf -a counts until stopped: never past a killed lab
            if self.cpus:
                os.sched_setaffinity(0, self.cpus)

        self._proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                      stderr=subprocess.PIPE, preexec_fn=preexec)
        deadline = time.monotonic() + START_DEADLINE_S
        while not self._intervals:
            if self._proc.poll() is not None:
                err = self._proc.stderr.read().decode(errors="replace") if self._proc.stderr else ""
                raise RuntimeError(f"perf stat exited: {err.strip()[:500]}")
            if time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("perf stat printed nothing within its start deadline")
            self._poll()
            if self._intervals:
                first = self._intervals[0]
                self._offset_us = time.time_ns() // 1000 - int(first.end_rel_s * 1e6)
            time.sleep(0.005)

    def window(self, start_unix_us: int, end_unix_us: int) -> WindowCounts | None:
        """Counts of the intervals lying wholly inside [start, end] (waits briefly for
        perf to print the interval that closes the window)."""
        if self._offset_us is None:
            return None
        deadline = time.monotonic() + 3 * INTERVAL_MS / 1000 + 0.5
        while time.monotonic() < deadline:
            self._poll()
            if self._intervals and self._wall_end(self._intervals[-1]) >= end_unix_us:
                break
            time.sleep(0.02)
        counts: dict[str, int] = {}
        seconds = 0.0
        width_us = INTERVAL_MS * 1000
        for iv in self._intervals:
            end = self._wall_end(iv)
            if end - width_us >= start_unix_us and end <= end_unix_us:
                seconds += INTERVAL_MS / 1000
                for name, n in iv.counts.items():
                    counts[name] = counts.get(name, 0) + n
        return WindowCounts(counts, seconds) if seconds else None

    def stop(self, wait: bool = True) -> threading.Thread | None:
        """Stop perf. With wait=False, return the thread that reaps it (join it before
        the lab exits, so no perf outlives the run)."""
        if self._proc and self._proc.poll() is None:
            self._proc.send_signal(signal.SIGINT)
        if wait:
            self._reap()
            return None
        reaper = threading.Thread(target=self._reap, name="stackbench-perf-reaper", daemon=True)
        reaper.start()
        return reaper

    def _reap(self) -> None:
        if self._proc:
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        shutil.rmtree(self._dir, ignore_errors=True)

    def _wall_end(self, iv: Interval) -> int:
        assert self._offset_us is not None
        return self._offset_us + int(iv.end_rel_s * 1e6)

    def _poll(self) -> None:
        """Read the complete lines perf appended since the last poll."""
        try:
            with open(self.out_path, "rb") as f:
                f.seek(self._read_pos)
                data = f.read()
        except FileNotFoundError:
            return
        cut = data.rfind(b"\n") + 1
        self._read_pos += cut
        for raw in data[:cut].decode(errors="replace").splitlines():
            parsed = parse_line(raw)
            if parsed is None:
                continue
            t, name, value = parsed
            iv = self._pending.get(t)
            if iv is None:
                iv = self._pending[t] = Interval(t)
            iv.counts[name] = value
            if len(iv.counts) == len(self.names) + 1:  # every event of the interval is in
                self._intervals.append(self._pending.pop(t))


def parse_line(line: str) -> tuple[float, str, int] | None:
    """One CSV line of `perf stat -I -x,`: time,value,unit,event,cgroup,...
    '<not counted>' (no call in the interval) is 0; '<not supported>' is skipped."""
    if not line or line.startswith("#"):
        return None
    parts = line.strip().split(",")
    if len(parts) < 4:
        return None
    try:
        t = float(parts[0])
    except ValueError:
        return None
    raw, event = parts[1], parts[3]
    if raw == "<not supported>":
        return None
    value = 0 if raw == "<not counted>" else int(float(raw))
    name = "total" if event == TOTAL else event.removeprefix("syscalls:sys_enter_")
    return t, name, value
