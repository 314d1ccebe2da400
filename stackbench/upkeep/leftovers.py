"""What the lab leaves on the machine when it dies without cleaning up (kill -9, an OOM
kill, a power cut), and how the next lab — or `stackbench clean` — finds and removes it.

A lab stops its servers and removes what it made on every ending it sees (a normal end,
Ctrl-C, SIGTERM, SIGHUP, a server that dies). Only an ending it cannot see leaves
things behind; its servers die with it (PDEATHSIG), the rest stays: its cgroups, its run
directories (configs, logs, sockets, MariaDB datadirs), its perf/strace scratch
directories. The next lab that takes the run lock sweeps them (runner.py), and so does
`stackbench clean` (`--dry-run` lists them).

Recognisably the lab's own, and nothing else:
- every directory the lab makes (`make_dir`) holds an owner mark, `.stackbench-owner`:
  the maker's pid and its start time in /proc, so a pid reused by another process is
  not mistaken for the maker. A directory is stale only when it has a mark, its name
  starts with `stackbench-`, and the marked process is gone. No mark: left alone.
- a cgroup under the lab's own `stackbench` directory is stale when its maker is gone:
  `run-PID` names it (and a process that started after the cgroup was made is another
  process with a reused pid), a stack's cgroup is named after its run directory, whose
  mark says. The only processes the lab ever signals while sweeping are the members of
  such stale cgroups: processes its servers forked, which no one else started.

Adding a kind of leftover (the lab's network namespaces and veths, say): write a function
that returns a `Leftover` for each stale thing, each with a `remove` that deletes it,
and `register` it. Finders run in the order of FINDERS, so processes (in cgroups) are
gone before their directories are removed; a finder registered later runs later.
"""

from __future__ import annotations

import errno
import fcntl
import os
import re
import shutil
import signal
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Iterable

from stackbench.monitor.cgroup import LAB, ROOT, V1_CONTROLLERS

OWNER_FILE = ".stackbench-owner"
PREFIX = "stackbench-"
# Parents other than the temp dir that the lab made directories in (--workdir, the
# WordPress cache): one path a line, so a sweep knows where else to look. Beside the run
# lock (stackbench.lock), and like it a file the lab keeps.
LEDGER = "stackbench.workdirs"
KILL_WAIT_S = 5.0


# -- who made it --------------------------------------------------------------------
@dataclass(frozen=True)
class Owner:
    pid: int
    start: int  # /proc/PID/stat field 22: clock ticks after boot

    def alive(self) -> bool:
        return process_start(self.pid) == self.start


def process_start(pid: int) -> int | None:
    """A process's start time (clock ticks after boot), or None when it is gone or a
    zombie (dead, only not reaped)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rfind(b")") + 2:].split()  # comm may hold spaces and parentheses
    return None if fields[0] == b"Z" else int(fields[19])


def me() -> Owner:
    pid = os.getpid()
    start = process_start(pid)
    assert start is not None
    return Owner(pid, start)


def owner_of(path: Path) -> Owner | None:
    try:
        pid, start = (path / OWNER_FILE).read_text().split()[:2]
        return Owner(int(pid), int(start))
    except (OSError, ValueError):
        return None


def make_dir(prefix: str, base: Path | None = None) -> Path:
    """A new directory (mode 0700) under `base` (default: the temp dir), marked as this
    process's, so that it is swept if this process dies without removing it."""
    assert prefix.startswith(PREFIX), prefix
    tmp = Path(tempfile.gettempdir())
    base = base or tmp
    base.mkdir(parents=True, exist_ok=True)
    if base.resolve() != tmp.resolve():
        _note_base(tmp / LEDGER, base.resolve())
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=base))
    owner = me()
    (path / OWNER_FILE).write_text(f"{owner.pid} {owner.start}\n")
    return path


def disown(path: Path) -> None:
    """The directory is the user's now (--keep-rundir): never swept."""
    (path / OWNER_FILE).unlink(missing_ok=True)


# -- what is left -------------------------------------------------------------------
@dataclass(frozen=True)
class Leftover:
    kind: str  # "cgroup", "run directory", …: what `stackbench clean` calls it
    what: str  # a path or a name
    why: str  # how it is known to be stale, e.g. "left by pid 123, gone"
    remove: Callable[[], None] | None  # None: reported, not removed (not provably the lab's)

    def line(self, dry_run: bool = False) -> str:
        if self.remove is None:
            return f"left alone: {self.kind} {self.what} ({self.why})"
        return f"{'would remove' if dry_run else 'removed'} {self.kind} {self.what} ({self.why})"


Finder = Callable[[], Iterable[Leftover]]


def register(finder: Finder) -> Finder:
    """Add a finder (usable as a decorator). It runs after those already there."""
    if finder not in FINDERS:
        FINDERS.append(finder)
    return finder


def find() -> list[Leftover]:
    return [left for finder in FINDERS for left in finder()]


@dataclass
class Swept:
    removed: list[Leftover]
    kept: list[Leftover]
    failed: list[tuple[Leftover, str]]


def sweep(dry_run: bool = False) -> Swept:
    """Remove every stale thing the finders report (each finder sees what the ones
    before it removed). A removal that fails is reported, and the sweep goes on."""
    out = Swept([], [], [])
    for finder in FINDERS:
        for left in finder():
            if left.remove is None:
                out.kept.append(left)
                continue
            if not dry_run:
                try:
                    left.remove()
                except OSError as e:
                    out.failed.append((left, e.strerror or str(e)))
                    continue
            out.removed.append(left)
    if not dry_run:
        _prune_ledger()
    return out


# -- cgroups ------------------------------------------------------------------------
RUN_CGROUP = re.compile(r"run-(\d+)$")
# A stack's services and its machine profile's cgroups are named after its run directory
# too (stacks/lifecycle.py).
_RUN_DIR_SUFFIX = re.compile(r"-(services|machine)$")


def _lab_dirs() -> list[Path]:
    """The lab's directory in every hierarchy it may use (pure v2, or v1 + unified, the
    v1 cpuset a machine profile fences its cores with and the v1 cpu hierarchy its
    fractional CPUs' quota is in)."""
    return [ROOT / LAB, *[ROOT / c / LAB for c in (*V1_CONTROLLERS, "unified", "cpuset", "cpu")]]


def stale_cgroups() -> Iterable[Leftover]:
    by_name: dict[str, list[Path]] = {}
    for base in _lab_dirs():
        try:
            for child in base.iterdir():
                if child.is_dir():
                    by_name.setdefault(child.name, []).append(child)
        except OSError:
            continue
    for name, dirs in sorted(by_name.items()):
        why = _cgroup_stale(name, dirs)
        if why is None:
            continue
        members = _members(dirs)
        if why == "owner unknown":
            if members:
                yield Leftover("cgroup", f"{LAB}/{name}", f"{len(members)} processes, maker unknown", None)
                continue
            why = "empty"
        elif members:
            why += f"; {len(members)} of its processes killed"
        yield Leftover("cgroup", f"{LAB}/{name}", why, lambda dirs=dirs: _remove_cgroup(dirs))


def _cgroup_stale(name: str, dirs: list[Path]) -> str | None:
    """Why the cgroup `name` is stale, "owner unknown", or None when its maker lives."""
    m = RUN_CGROUP.match(name)
    if m:
        pid = int(m.group(1))
        started = _started_at(pid)
        made = min(d.stat().st_ctime for d in dirs)
        # A process that started after the cgroup was made did not make it: reused pid.
        if started is not None and started <= made + 1:
            return None
        return f"made by pid {pid}, gone"
    for base in bases():
        owner = owner_of(base / _RUN_DIR_SUFFIX.sub("", name))
        if owner is not None:
            return None if owner.alive() else f"made by pid {owner.pid}, gone"
    return "owner unknown"


def _started_at(pid: int) -> float | None:
    """A process's start as a Unix time, or None when it is gone."""
    ticks = process_start(pid)
    if ticks is None:
        return None
    with open("/proc/stat") as f:
        btime = next(int(line.split()[1]) for line in f if line.startswith("btime "))
    return btime + ticks / os.sysconf("SC_CLK_TCK")


def _members(dirs: list[Path]) -> set[int]:
    """Every live process in these cgroups and the cgroups below them."""
    pids: set[int] = set()
    for d in dirs:
        for procs in d.rglob("cgroup.procs"):
            try:
                pids.update(int(p) for p in procs.read_text().split())
            except (OSError, ValueError):
                continue
    return {p for p in pids if process_start(p) is not None}


def remove_cgroup_named(name: str) -> None:
    """Remove the cgroup `name` (right below the lab's directory) in every hierarchy,
    with all that is below it: what a run's own stops left there (a v1 cpu or cpuset
    directory of a machine profile an interrupt caught half made) goes with the run."""
    dirs = [base / name for base in _lab_dirs() if (base / name).is_dir()]
    if dirs:
        _remove_cgroup(dirs)


def _remove_cgroup(dirs: list[Path]) -> None:
    """SIGKILL what is inside (the lab's servers' processes, nothing else is in there),
    wait until it is empty, then remove it deepest first, and the lab's own directory
    when nothing else uses it."""
    deadline = time.monotonic() + KILL_WAIT_S
    while (members := _members(dirs)) and time.monotonic() < deadline:
        for pid in members:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.05)
    for d in dirs:
        for sub in sorted((p for p in d.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            _rmdir(sub)
        _rmdir(d)
        try:
            d.parent.rmdir()  # the lab's directory: fails, harmlessly, while another lab uses it
        except OSError:
            pass


def _rmdir(path: Path) -> None:
    try:
        path.rmdir()
    except FileNotFoundError:
        pass


# -- directories --------------------------------------------------------------------
def bases() -> list[Path]:
    """Where the lab makes directories: the temp dir and the parents in the ledger."""
    tmp = Path(tempfile.gettempdir())
    found = [tmp]
    try:
        lines = (tmp / LEDGER).read_text().splitlines()
    except OSError:
        lines = []
    for line in lines:
        path = Path(line)
        if line and path.is_dir() and path not in found:
            found.append(path)
    return found


def stale_directories() -> Iterable[Leftover]:
    for base in bases():
        try:
            children = sorted(base.iterdir())
        except OSError:
            continue
        for child in children:
            if not child.name.startswith(PREFIX) or child.is_symlink() or not child.is_dir():
                continue
            owner = owner_of(child)
            if owner is None or owner.alive():
                continue
            kind = {"perf": "perf scratch directory", "strace": "strace scratch directory",
                    "ssh": "SSH control directory (other hosts)",
                    "wordpress": "WordPress provisioning directory (a MariaDB datadir)"}.get(
                child.name[len(PREFIX):].split("-")[0], "run directory")
            yield Leftover(kind, str(child), f"made by pid {owner.pid}, gone",
                           lambda child=child: _remove_tree(child))


def _remove_tree(path: Path) -> None:
    def fail(func, p, exc_info):
        if not isinstance(exc_info[1], FileNotFoundError):
            raise exc_info[1]

    shutil.rmtree(path, onerror=fail)


def _note_base(ledger: Path, base: Path) -> None:
    """Add `base` to the ledger once (labs and tests may write it at the same time)."""
    try:
        fd = os.open(ledger, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        if e.errno in (errno.EACCES, errno.EROFS):
            return  # a sweep then only looks in the temp dir
        raise
    with os.fdopen(fd, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = f.read().splitlines()
        if str(base) not in lines:
            f.write(f"{base}\n")


def _prune_ledger() -> None:
    """Forget parents that are gone (a test's workdir)."""
    ledger = Path(tempfile.gettempdir()) / LEDGER
    try:
        with open(ledger, "r+") as f:
            fcntl.flock(f, fcntl.LOCK_EX)
            lines = [line for line in f.read().splitlines() if line and Path(line).is_dir()]
            f.seek(0)
            f.truncate()
            f.write("".join(f"{line}\n" for line in lines))
    except OSError:
        pass


def stale_namespaces() -> Iterable[Leftover]:
    """The network namespaces of a lab that is gone (`stackbench-<pid>-…`, network/netns.py);
    their links have both ends inside them and go with them."""
    from stackbench.network import netns  # iproute2 is asked only when sweeping
    for name, pid in netns.stale():
        yield Leftover("network namespace", name, f"left by pid {pid}, gone",
                       lambda name=name: netns.Namespace(name).delete())


def stale_idle_cores() -> Iterable[Leftover]:
    """Cores a lab that is gone held polling (cpu_idle "auto" or "poll-engine", core_qos.py): their
    requests put back from its ledger. A ledger that is not the lab's is reported, never
    acted on: it names what root writes."""
    from stackbench.upkeep import core_qos  # sysfs is read only when sweeping
    try:
        found = core_qos.read_ledger()
    except OSError as e:  # kept: its values may be all there is
        yield Leftover("idle-core ledger", str(core_qos.LEDGER), f"unreadable ({e.strerror})", None)
        return
    except ValueError as e:
        yield Leftover("idle-core ledger", str(core_qos.LEDGER), f"not the lab's ({e}): left alone", None)
        return
    if found is None or Owner(found[0], found[1]).alive():
        return
    pid, _, before = found

    def remove() -> None:
        failed = core_qos.put_back_held(before)
        if failed:
            raise OSError(errno.EIO, f"cores {failed} could not be put back")

    yield Leftover("idle-core request", f"cores {', '.join(str(c) for c in before)} held polling",
                   f"left by pid {pid}, gone; put back to {sorted(set(before.values()))}", remove)


FINDERS: list[Finder] = [stale_cgroups, stale_directories, stale_namespaces, stale_idle_cores]
