"""The small machine of a machine profile (machine.py) as a cgroup: one per stack start,
holding the stack's cgroup and its services' cgroup, with the limits on it.

Why a parent and not a limit per cgroup: the VPS being emulated runs the web stack and
its database in one memory; a limit split between them would let one starve while the
other has room, which no real machine does. So the tree is

    stackbench/run-PID/NAME-machine/          memory limit, cpuset (the machine)
        NAME/                                 the stack's servers (measured as before)
        NAME-services/                        the workload's services (MariaDB)

and each start gets a fresh machine: no cell inherits the page cache or the OOM
counters of another.

What is set (measured on this machine's kernel, 6.18, memory on cgroup v1):
- v1: `memory.limit_in_bytes`. `memory.memsw.limit_in_bytes` (memory + swap) only when
  the machine has swap: without swap it limits nothing more, and with it set the
  kernel charges the memsw counter first, whose failures are not counted — the limit's
  hits in `memory.failcnt` stayed 0 through an OOM kill (tried: 889 hits without memsw,
  0 with). With swap it is set equal to the limit, so swap cannot hide a machine's
  shortage.
- v2: `memory.max`, and `memory.swap.max = 0` for the same reason.
- cores: servers are pinned to the profile's cores anyway (supervise.spawn); where the
  cpuset controller is mounted the machine's cgroup also gets `cpuset.cpus`, a fence no
  process can widen with sched_setaffinity.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stackbench.errors import StackbenchError
from stackbench.planning.machine import MachineProfile, swap_total_bytes
from stackbench.monitor import memory_events
from stackbench.monitor.cgroup import LAB, ROOT, Cgroup

CPUSET = ROOT / "cpuset"  # the v1 cpuset hierarchy, where mounted


class MachineUnavailable(StackbenchError):
    """The profile's limits cannot be set here (not root, no memory controller): the
    run would claim a small machine it never had, so it does not start."""

    exit_code = 2


def unavailable_reason(profile: MachineProfile | None) -> str | None:
    """Why the profile cannot be applied on this machine (None: it can). Checked before
    a run (limits.py), so a plan fails in a second rather than at its first stack."""
    if profile is None or profile.memory_bytes is None:
        return None
    if (ROOT / "cgroup.controllers").exists():
        if "memory" not in (ROOT / "cgroup.controllers").read_text().split():
            return "the cgroup v2 tree has no memory controller"
    elif not (ROOT / "memory" / "cgroup.procs").exists():
        return "no cgroup memory controller is mounted (/sys/fs/cgroup/memory)"
    try:
        probe = (ROOT / "cgroup.procs") if (ROOT / "cgroup.controllers").exists() else ROOT / "memory" / "cgroup.procs"
        with open(probe, "a"):
            pass
    except OSError as e:
        return f"cgroups are not writable here ({e.strerror}): machine profiles need root"
    return None


@dataclass
class MachineCgroup:
    profile: MachineProfile
    cgroup: Cgroup
    cpus: list[int] = field(default_factory=list)  # the fence, when a cpuset could be made
    cpuset_dir: Path | None = None
    applied: dict = field(default_factory=dict)  # what was written, for the environment and tests
    # The counters as they were when the stack was stopped: a stack whose start failed
    # is taken down (and its machine removed) before the runner stores the failure.
    final: memory_events.MemoryCounters | None = None

    @property
    def name(self) -> str:
        """Where the stack and its services make their cgroups."""
        return self.cgroup.name

    @property
    def memory_dir(self) -> Path | None:
        return self.cgroup.path("v2") or self.cgroup.path("memory")

    @classmethod
    def create(cls, name: str, parent: str | None, profile: MachineProfile,
               cpus: list[int]) -> "MachineCgroup | None":
        """The machine with its limits; None when cgroups cannot be made here and the
        profile needs none (cores only: the servers' pinning confines them)."""
        cg = Cgroup.create(name, parent=parent)
        if cg is None and profile.memory_bytes is None:
            return None
        if cg is None:
            raise MachineUnavailable(f"the machine profile ({profile.describe()}) needs cgroups, and none could be "
                                     "made here", hint="run as root on a machine with /sys/fs/cgroup writable")
        machine = cls(profile, cg)
        try:
            machine._limit_memory()
            if profile.cpus is not None:
                machine._fence(cpus)
        except BaseException:
            machine.remove()
            raise
        return machine

    def _limit_memory(self) -> None:
        limit = self.profile.memory_bytes
        if limit is None:
            return
        v2 = self.cgroup.path("v2")
        try:
            if v2 is not None:
                _enable_v2(v2, "memory")
                (v2 / "memory.max").write_text(str(limit))
                self.applied["memory"] = "memory.max"
                if (v2 / "memory.swap.max").exists():
                    (v2 / "memory.swap.max").write_text("0")
                    self.applied["swap"] = "memory.swap.max = 0"
            else:
                d = self.cgroup.path("memory")
                if d is None:
                    raise OSError("no memory cgroup")
                (d / "memory.limit_in_bytes").write_text(str(limit))
                self.applied["memory"] = "memory.limit_in_bytes"
                if (swap_total_bytes() or 0) > 0 and (d / "memory.memsw.limit_in_bytes").exists():
                    (d / "memory.memsw.limit_in_bytes").write_text(str(limit))
                    self.applied["swap"] = "memory.memsw.limit_in_bytes"
                else:
                    self.applied["swap"] = "none on this machine"
        except OSError as e:
            raise MachineUnavailable(f"the memory limit of the machine profile could not be set ({e})",
                                     hint="machine profiles need root and the cgroup memory controller") from None

    def _fence(self, cpus: list[int]) -> None:
        """cpuset.cpus on the machine, where a cpuset controller is there to take it;
        otherwise the servers' pinning alone holds them (noted in `applied`)."""
        self.cpus = list(cpus)
        v2 = self.cgroup.path("v2")
        try:
            if v2 is not None:
                _enable_v2(v2, "cpuset")
                (v2 / "cpuset.cpus").write_text(_cpulist(cpus))
                self.applied["cpuset"] = _cpulist(cpus)
            elif (CPUSET / "cgroup.procs").exists():
                self.cpuset_dir = _v1_cpuset_dir(CPUSET / LAB / self.cgroup.name, cpus)
                self.applied["cpuset"] = _cpulist(cpus)
        except OSError:
            pass
        self.applied.setdefault("cpuset", None)  # None: pinning (sched_setaffinity) alone

    def fence(self, child: Cgroup | None) -> None:
        """Put a child's processes inside the machine's cpuset too (v1: a cpuset of its
        own below the machine's, since the cpuset hierarchy is separate from memory's).
        On v2 the child is already below the machine in the one tree.

        And make sure the machine still has its limit: until its first child exists
        the machine's cgroup is empty, and a sweep of empty cgroups (another tool's, or
        `stackbench clean` misjudging a cgroup it cannot attribute) may remove it — the child's mkdir then makes it again,
        without a limit. Cheap to check, and silent loss of the limit is not."""
        if self.profile.memory_bytes is not None and not self._limit_in_force():
            self._limit_memory()
        if child is None or self.cpuset_dir is None:
            return
        leaf = child.name.rsplit("/", 1)[-1]
        try:
            child.dirs["cpuset"] = _v1_cpuset_dir(self.cpuset_dir / leaf, self.cpus)
        except OSError:
            pass  # pinning still holds the servers

    def _limit_in_force(self) -> bool:
        d = self.memory_dir
        f = d / ("memory.max" if self.cgroup.path("v2") else "memory.limit_in_bytes") if d else None
        try:
            # the kernel keeps the limit in whole pages
            return int(f.read_text()) // 4096 == self.profile.memory_bytes // 4096
        except (OSError, ValueError, AttributeError):
            return False

    def read(self) -> memory_events.MemoryCounters:
        """The memory limit's counters now (PSI from the v2 tree beside v1's memory), or
        at removal once removed."""
        if self.final is not None:
            return self.final
        return memory_events.read(self.memory_dir, self.cgroup.path("unified"))

    def since_start(self) -> memory_events.MemoryEvents | None:
        """The memory events since this machine started (its counters began at 0):
        what a stack start that failed before any cell was measured leaves to store.
        None without a memory limit."""
        if self.profile.memory_bytes is None:
            return None
        return memory_events.difference(memory_events.ZERO, self.read(), limit_bytes=self.profile.memory_bytes)

    def keep_counters(self) -> None:
        """Read the counters for good, before the children's cgroups go: on v1 an OOM
        kill is counted only in the cgroup of the process killed (memory_events.py)."""
        if self.final is None and self.cgroup.dirs:
            self.final = self.read()

    def remove(self) -> None:
        """After the stack's and services' cgroups are gone (they are its children)."""
        self.keep_counters()
        if self.cpuset_dir is not None:
            _rmdir_up(self.cpuset_dir, CPUSET)
            self.cpuset_dir = None
        self.cgroup.remove()


def _v1_cpuset_dir(path: Path, cpus: list[int]) -> Path:
    """A v1 cpuset and its missing parents: each needs cpus and mems before a process
    may join (a new v1 cpuset starts empty); the parents get their parent's, the leaf
    the machine's cores."""
    missing = [p for p in [path, *path.parents] if not p.exists() and CPUSET in p.parents]
    for d in reversed(missing):
        d.mkdir()
        mems = (d.parent / "cpuset.mems").read_text().strip()
        cores = _cpulist(cpus) if d == path else (d.parent / "cpuset.cpus").read_text().strip()
        (d / "cpuset.cpus").write_text(cores)
        (d / "cpuset.mems").write_text(mems)
    return path


def _rmdir_up(path: Path, stop: Path) -> None:
    """Remove a cpuset directory and its parents below `stop`, while they are empty
    (another run may still use a parent: then its rmdir fails and that is that)."""
    for d in [path, *path.parents]:
        if d == stop or stop not in d.parents:
            break
        try:
            d.rmdir()
        except OSError:
            break


def _enable_v2(path: Path, controller: str) -> None:
    """On cgroup v2 a controller's files exist in a cgroup only when every ancestor
    enables it for its children (cgroup.subtree_control)."""
    for ancestor in reversed([p for p in path.parents if p == ROOT or ROOT in p.parents]):
        control = ancestor / "cgroup.subtree_control"
        if controller not in control.read_text().split():
            control.write_text(f"+{controller}")


def _cpulist(cpus: list[int]) -> str:
    return ",".join(str(c) for c in sorted(cpus))
