"""A cgroup per stack instance, so every process a server forks is accounted without
scanning /proc, and "nothing left behind" is one empty cgroup.procs away.

Works with what the machine has: on this kind of machine memory, cpuacct and pids are
cgroup v1 controllers and the v2 (unified) tree has cpu.stat and is what `perf -G` uses;
on a pure v2 machine everything is in /sys/fs/cgroup. A process is placed by writing its
pid into each hierarchy's cgroup.procs *before it execs* (v1 does not move memory already
charged elsewhere: docs/servers.md, "cgroups: v1 memory"), i.e. from the child's
preexec hook.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
LAB = "stackbench"
V1_CONTROLLERS = ("memory", "cpuacct", "pids")


@dataclass
class Cgroup:
    name: str  # relative to the lab's directory, e.g. "run-123/stackbench-nginx-fpm-x1y2"
    dirs: dict[str, Path] = field(default_factory=dict)  # hierarchy -> directory ("memory", "unified", "v2")

    @classmethod
    def create(cls, name: str, parent: str | None = None) -> "Cgroup | None":
        """Make the cgroup in every usable hierarchy; None when cgroups cannot be used
        (not root, read-only /sys): the lab then falls back to process groups.
        Under `parent` (a run's cgroup) when given: perf counting the parent counts
        every stack of the run, so one perf process serves a whole plan."""
        cg = cls(f"{parent}/{name}" if parent else name)
        # No sweep here: what a killed lab left is swept by the lab that takes the run
        # lock (leftovers.py), which knows whose each cgroup is. Sweeping every empty
        # cgroup here removed another lab's freshly made, still empty one.
        try:
            if (ROOT / "cgroup.controllers").exists():  # pure v2
                cg._mkdir("v2", ROOT)
            else:
                for ctrl in V1_CONTROLLERS:
                    if (ROOT / ctrl / "cgroup.procs").exists():
                        cg._mkdir(ctrl, ROOT / ctrl)
                if (ROOT / "unified" / "cgroup.procs").exists():
                    cg._mkdir("unified", ROOT / "unified")
        except OSError:
            cg.remove()
            return None
        return cg if cg.dirs else None

    def _mkdir(self, key: str, base: Path) -> None:
        path = base / LAB / self.name
        path.mkdir(parents=True, exist_ok=True)
        self.dirs[key] = path

    def procs_files(self) -> list[Path]:
        return [d / "cgroup.procs" for d in self.dirs.values()]

    def join(self, pid: int | None = None) -> None:
        """Put a process (default: the caller) into every hierarchy of this cgroup."""
        data = str(pid or os.getpid())
        for f in self.procs_files():
            with open(f, "w") as fh:
                fh.write(data)

    def pids(self) -> list[int]:
        """Live members (zombies excluded: they are dead, only not reaped)."""
        d = next(iter(self.dirs.values()), None)
        if d is None:
            return []
        try:
            raw = (d / "cgroup.procs").read_text().split()
        except OSError:
            return []
        return [int(p) for p in raw if not _zombie(int(p))]

    def path(self, key: str) -> Path | None:
        return self.dirs.get(key)

    def perf_name(self) -> str | None:
        """The name `perf stat -G` takes (relative to the hierarchy perf uses)."""
        for key in ("unified", "v2"):
            if key in self.dirs:
                return f"{LAB}/{self.name}"
        return None

    def remove(self, timeout_s: float = 5.0) -> None:
        """rmdir every hierarchy's directory; an rmdir fails while a process is inside,
        so retry briefly while the last exits are reaped — every directory each round,
        so one slow hierarchy does not spend the others' wait."""
        deadline = time.monotonic() + timeout_s
        while self.dirs:
            for key, d in list(self.dirs.items()):
                try:
                    d.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    continue
                del self.dirs[key]
                # The lab's own directory too, once unused. A stack's cgroup never removes
                # its run's parent cgroup: the run's perf counter is attached to that one.
                if "/" not in self.name:
                    try:
                        d.parent.rmdir()
                    except OSError:
                        pass
            if not self.dirs or time.monotonic() > deadline:
                break
            time.sleep(0.02)


def subdirs(path: Path) -> list[Path]:
    """The cgroups right below a cgroup's directory (none when it is gone)."""
    try:
        return sorted(p for p in path.iterdir() if p.is_dir())
    except OSError:
        return []


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return True  # gone
    return stat[stat.rfind(b")") + 2:stat.rfind(b")") + 3] == b"Z"
