"""The small machine of a machine profile (machine.py) as a cgroup: one per stack start,
holding the stack's cgroup and its services' cgroup, with the limits on it.

Why a parent and not a limit per cgroup: the VPS being emulated runs the web stack and
its database in one memory; a limit split between them would let one starve while the
other has room, which no real machine does. So the tree is

    stackbench/run-PID/NAME-machine/          memory limit, cpuset, CPU quota (the machine)
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
- a fractional `cpus`: a CFS quota on those cores (cpu_quota.py: v2 `cpu.max`, v1
  `cpu.cfs_period_us` and `cpu.cfs_quota_us` in the cpu hierarchy, separate from
  memory's like the cpuset's).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from stackbench.errors import StackbenchError
from stackbench.planning.machine import MachineProfile, swap_total_bytes
from stackbench.monitor import cpu_quota, memory_events
from stackbench.monitor.cgroup import LAB, ROOT, Cgroup

CPUSET = ROOT / "cpuset"  # the v1 cpuset hierarchy, where mounted


class MachineUnavailable(StackbenchError):
    """The profile's limits cannot be set here (not root, no memory or cpu controller):
    the run would claim a small machine it never had, so it does not start."""

    exit_code = 2


def unavailable_reason(profile: MachineProfile | None) -> str | None:
    """Why the profile cannot be applied on this machine (None: it can). Checked before
    a run (limits.py), so a plan fails in a second rather than at its first stack."""
    if profile is None or not needs_cgroups(profile):
        return None
    v2 = (ROOT / "cgroup.controllers").exists()
    probes = []
    if profile.memory_bytes is not None:
        if v2:
            if "memory" not in (ROOT / "cgroup.controllers").read_text().split():
                return "the cgroup v2 tree has no memory controller"
        elif not (ROOT / "memory" / "cgroup.procs").exists():
            return "no cgroup memory controller is mounted (/sys/fs/cgroup/memory)"
        probes.append(ROOT / "cgroup.procs" if v2 else ROOT / "memory" / "cgroup.procs")
    if profile.cpu_quota is not None:
        reason = cpu_quota.unavailable_reason()
        if reason is not None:
            return reason
        probes.append(cpu_quota.probe_file())
    try:
        for probe in probes:
            with open(probe, "a"):
                pass
    except OSError as e:
        return f"cgroups are not writable here ({e.strerror}): machine profiles need root"
    return None


def needs_cgroups(profile: MachineProfile) -> bool:
    """A memory limit or a CPU quota: the kernel's to enforce. Whole cores alone are the
    servers' pinning, which needs no cgroup."""
    return profile.memory_bytes is not None or profile.cpu_quota is not None


@dataclass
class MachineCgroup:
    profile: MachineProfile
    cgroup: Cgroup
    cpus: list[int] = field(default_factory=list)  # the fence, when a cpuset could be made
    cpuset_dir: Path | None = None
    # The machine's own directory in the v1 cpu hierarchy, holding the quota (None: v2,
    # cpu mounted with a controller the cgroup is in already, or no quota)
    cpu_dir: Path | None = None
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

    @property
    def quota_dir(self) -> Path | None:
        """Where the CPU quota is written: the one tree (v2), the v1 cpu directory of
        the machine, or a directory of its cgroup that has the cpu files already."""
        return self.cgroup.path("v2") or self.cpu_dir or next(
            (d for d in self.cgroup.dirs.values() if (d / cpu_quota.V1_FILES[1]).exists()), None)

    @classmethod
    def create(cls, name: str, parent: str | None, profile: MachineProfile,
               cpus: list[int]) -> "MachineCgroup | None":
        """The machine with its limits; None when cgroups cannot be made here and the
        profile needs none (whole cores only: the servers' pinning confines them)."""
        cg = Cgroup.create(name, parent=parent)
        if cg is None and not needs_cgroups(profile):
            return None
        if cg is None:
            raise MachineUnavailable(f"the machine profile ({profile.describe()}) needs cgroups, and none could be "
                                     "made here", hint="run as root on a machine with /sys/fs/cgroup writable")
        machine = cls(profile, cg)
        try:
            machine._limit_memory()
            machine._limit_cpu()
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

    def _limit_cpu(self) -> None:
        """The quota of a fractional `cpus` (cpu_quota.py), on the cores `_fence` sets."""
        quota = self.profile.cpu_quota
        if quota is None:
            return
        v2 = self.cgroup.path("v2")
        try:
            if v2 is not None:
                _enable_v2(v2, "cpu")
                self.applied["cpu"] = cpu_quota.write_v2(v2, quota)
            else:
                target = self.quota_dir
                if target is None or target == self.cpu_dir:
                    self.cpu_dir = cpu_quota.V1 / LAB / self.cgroup.name
                    self.cpu_dir.mkdir(parents=True, exist_ok=True)
                    target = self.cpu_dir
                self.applied["cpu"] = cpu_quota.write_v1(target, quota)
        except OSError as e:
            raise MachineUnavailable(f"the CPU quota of the machine profile could not be set ({e})",
                                     hint="machine profiles need root and the cgroup cpu controller") from None
        self.applied["cpu_quota"] = quota.as_dict()

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
        without a limit. Cheap to check, and silent loss of the limit is not. The same
        for the quota: a child outside it would run on its cores' whole time."""
        if self.profile.memory_bytes is not None and not self._limit_in_force():
            self._limit_memory()
        quota = self.profile.cpu_quota
        if quota is not None and not cpu_quota.in_force(self.quota_dir, quota):
            self._limit_cpu()
        if child is None:
            if needs_cgroups(self.profile):
                raise MachineUnavailable("a cgroup inside the machine profile's could not be made: the stack would "
                                         "run outside its limits", hint="run as root with /sys/fs/cgroup writable")
            return
        leaf = child.name.rsplit("/", 1)[-1]
        # The child owns each directory before it is made, so an interrupt between the
        # two cannot leave one its removal does not know.
        if self.cpu_dir is not None:  # v1: the quota's hierarchy is another than memory's
            child.dirs["cpu"] = self.cpu_dir / leaf
            try:
                child.dirs["cpu"].mkdir(exist_ok=True)
            except OSError as e:
                raise MachineUnavailable(f"the stack's cgroup could not be put under the CPU quota ({e})") from None
        if self.cpuset_dir is None:
            return
        child.dirs["cpuset"] = self.cpuset_dir / leaf
        try:
            _v1_cpuset_dir(child.dirs["cpuset"], self.cpus)
        except OSError:  # pinning still holds the servers; a half-made cpuset is no place to join
            _rmdir_up(child.dirs.pop("cpuset"), self.cpuset_dir)

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
        if self.cpu_dir is not None:
            _rmdir_up(self.cpu_dir, cpu_quota.V1)
            self.cpu_dir = None
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
    """Remove a cpuset (or cpu) directory and its parents below `stop`, while they are empty
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
