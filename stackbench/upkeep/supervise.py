"""Supervising server processes: start in their own process group, drain output, wait
until ready, stop with TERM then KILL, and prove nothing is left behind.

Modelled on Locust's TestProcess: every error message carries the tail of
the server's own output and error log, because "it exited" alone helps nobody.
"""

from __future__ import annotations

import collections
import ctypes
import os
import signal
import socket
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Callable

from stackbench.errors import ServerExited

if TYPE_CHECKING:
    from stackbench.monitor.cgroup import Cgroup

Probe = Callable[[], bool]


@dataclass
class ServerProcess:
    name: str
    argv: list[str]
    popen: subprocess.Popen
    log_paths: list[Path] = field(default_factory=list)
    stop_signal: int = signal.SIGTERM
    _output: collections.deque = field(default_factory=lambda: collections.deque(maxlen=200))
    _drainer: threading.Thread | None = None

    @property
    def pid(self) -> int:
        return self.popen.pid

    def alive(self) -> bool:
        return self.popen.poll() is None

    @property
    def exit_status(self) -> int | None:
        return self.popen.returncode

    def tail(self, lines: int = 15) -> str:
        """Last lines of the server's stdout/stderr and of its log files."""
        if self._drainer is not None and not self.alive():
            # Its last words may still be in the pipe: the drain ends at EOF.
            self._drainer.join(timeout=1)
        chunks = []
        out = list(self._output)[-lines:]
        if out:
            chunks.append(f"[{self.name} output]\n" + "\n".join(out))
        for path in self.log_paths:
            text = tail_file(path, lines)
            if text:
                chunks.append(f"[{path.name}]\n{text}")
        return "\n".join(chunks) or f"[{self.name}] printed nothing"

    def group_pids(self) -> list[int]:
        """Live (non-zombie) members of the server's process group."""
        return live_pids_in_group(self.popen.pid)

    def stop(self, grace_s: float = 3.0) -> None:
        """Polite signal to the leader, SIGKILL to the whole group after `grace_s`, then
        wait until the group is empty (workers reparented to init must be gone too)."""
        pgid = self.popen.pid
        if self.alive():
            try:
                os.kill(self.popen.pid, self.stop_signal)
            except ProcessLookupError:
                pass
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and (self.alive() or live_pids_in_group(pgid)):
            time.sleep(0.01)
        if self.alive() or live_pids_in_group(pgid):
            _killpg(pgid, signal.SIGKILL)
        try:
            self.popen.wait(timeout=5)
        except subprocess.TimeoutExpired:  # pragma: no cover - SIGKILL cannot be ignored
            pass
        deadline = time.monotonic() + 5
        while live_pids_in_group(pgid) and time.monotonic() < deadline:
            _killpg(pgid, signal.SIGKILL)
            time.sleep(0.02)


def spawn(
    name: str,
    argv: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    cpus: list[int] | None = None,
    log_paths: list[Path] | None = None,
    stop_signal: int = signal.SIGTERM,
    cgroup: "Cgroup | None" = None,
) -> ServerProcess:
    """Start `argv` as the leader of a new session (so the terminal's Ctrl-C reaches the
    lab, not the servers, and the lab stops them in order), pinned to `cpus`, inside
    `cgroup` from its first instruction (so all its memory is charged there)."""

    def preexec() -> None:
        # If the lab itself is killed (SIGKILL, OOM), its servers must not outlive it:
        # the kernel sends them SIGTERM when the lab's thread that started them exits.
        die_with_parent(signal.SIGTERM)
        if cpus:
            os.sched_setaffinity(0, cpus)
        if cgroup is not None:
            cgroup.join(os.getpid())

    popen = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        preexec_fn=preexec,
    )
    proc = ServerProcess(name, argv, popen, list(log_paths or []), stop_signal)
    proc._drainer = threading.Thread(target=_drain, args=(popen, proc._output), daemon=True)
    proc._drainer.start()
    return proc


def wait_ready(proc: ServerProcess, probe: Probe, deadline_s: float = 10.0) -> float:
    """Poll `probe` until it succeeds, the process dies, or the deadline passes.
    Returns the seconds it took. Never a fixed sleep."""
    start = time.monotonic()
    while True:
        if not proc.alive():
            raise ServerExited(
                f"{proc.name} exited with status {proc.popen.returncode} while starting",
                detail=proc.tail(),
            )
        if probe():
            return time.monotonic() - start
        if time.monotonic() - start > deadline_s:
            raise ServerExited(f"{proc.name} was not ready after {deadline_s:.0f} s", detail=proc.tail())
        time.sleep(0.01)


def tcp_probe(host: str, port: int) -> Probe:
    def probe() -> bool:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            return False

    return probe


def unix_probe(path: Path) -> Probe:
    def probe() -> bool:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(0.2)
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False
        finally:
            s.close()

    return probe


def live_pids_in_group(pgid: int) -> list[int]:
    """Scan /proc for members of a process group, skipping zombies (a zombie answers
    kill -0 but is already dead; docs/servers.md, "Ready and stopped")."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue
        # comm may contain spaces and parentheses: split after the last ')'.
        rest = stat[stat.rfind(b")") + 2 :].split()
        state, pgrp = rest[0], int(rest[2])
        if pgrp == pgid and state != b"Z":
            pids.append(int(entry))
    return pids


def run_checked(argv: list[str], *, cwd: Path | None = None, env: dict[str, str] | None = None,
                timeout: float = 30) -> tuple[int, str]:
    """Run a short command (a config checker, `-v`), return (status, combined output)."""
    res = subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout)
    return res.returncode, res.stdout.decode(errors="replace")


_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def die_with_parent(sig: int = signal.SIGKILL) -> None:
    """In a child before exec: the kernel sends `sig` when the thread that forked it
    exits — a lab killed with -9 takes its engine, perf and servers with it."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
    except OSError:
        pass


def _killpg(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _drain(popen: subprocess.Popen, sink: collections.deque) -> None:
    # Drained continuously so a chatty server never blocks on a full pipe.
    assert popen.stdout is not None
    for raw in popen.stdout:
        sink.append(raw.decode(errors="replace").rstrip("\n"))


def tail_file(path: Path, lines: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            f.seek(max(0, f.tell() - 8192))
            data = f.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])
