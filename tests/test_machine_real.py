"""Machine profiles on real servers (tier 3): the limits are really in the kernel's
cgroup files while the stack runs, the database counts against the same machine, and
a prefork pool sized for more clients than a small machine holds is OOM-killed — which
the lab stores as the cell's result while the plan goes on."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest

from stackbench import runner, workloads
from stackbench.planning import machine, plan as plan_mod
from stackbench.analysis import figures
from stackbench.monitor.cgroup import LAB, ROOT
from stackbench.stacks import registry
from stackbench.stacks.lifecycle import StackInstance
from stackbench.store import Store

from conftest import require_stack

pytestmark = pytest.mark.servers
MiB = 2**20


@pytest.fixture(autouse=True)
def root_with_v1_memory():
    if os.geteuid() != 0:
        pytest.skip("machine profiles need root (cgroups)")
    if not (ROOT / "memory" / "cgroup.procs").exists():
        pytest.skip("these tests read cgroup v1 memory files, as this lab's machines have them")


def cpus_allowed(pid: int) -> str:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split()[1]
    raise AssertionError(f"no Cpus_allowed_list for {pid}")


def test_the_limits_are_in_the_cgroup_while_the_stack_runs(workdir):
    require_stack("nginx-fpm")
    profile = machine.MachineProfile(cpus=1, memory_bytes=256 * MiB)
    inst = StackInstance(registry.get("nginx-fpm"), {}, cpus=[0], workdir=workdir,
                         workloads=[workloads.get("php-hello")], machine=profile)
    with inst:
        mc = inst.machine_cgroup
        mem = mc.cgroup.path("memory")
        assert (mem / "memory.limit_in_bytes").read_text().strip() == str(256 * MiB)
        if (machine.swap_total_bytes() or 0) == 0:  # no swap here: memsw left alone (see machine_cgroup.py)
            assert mc.applied["swap"] == "none on this machine"
        # the stack's own cgroup is inside the machine, so the limit covers every process
        assert inst.cgroup.path("memory").parent == mem
        members = inst.cgroup.pids()
        assert members and set(members) <= {int(p) for p in (inst.cgroup.path("memory") / "cgroup.procs")
                                            .read_text().split()}
        if (ROOT / "cpuset" / "cgroup.procs").exists():
            fence = inst.cgroup.path("cpuset")
            assert fence.parent == mc.cpuset_dir
            assert (mc.cpuset_dir / "cpuset.cpus").read_text().strip() == "0"
            assert set(members) <= {int(p) for p in (fence / "cgroup.procs").read_text().split()}
        assert {cpus_allowed(pid) for pid in members} == {"0"}
        dirs = [d for d in [mem, mc.cpuset_dir, inst.cgroup.path("cpuset")] if d is not None]
    assert not any(d.exists() for d in dirs)  # nothing left behind


def test_the_database_counts_against_the_same_machine(workdir):
    require_stack("nginx-fpm")
    inst = StackInstance(registry.get("nginx-fpm"), {}, cpus=[0], workdir=workdir,
                         workloads=[workloads.get("wordpress-home")],
                         machine=machine.MachineProfile(memory_bytes=1024 * MiB))
    with inst:
        mem = inst.machine_cgroup.cgroup.path("memory")
        assert inst.services_cgroup.path("memory").parent == mem  # MariaDB ...
        assert inst.cgroup.path("memory").parent == mem  # ... and the web stack: one machine
        usage = int((mem / "memory.usage_in_bytes").read_text())
        db = int((inst.services_cgroup.path("memory") / "memory.usage_in_bytes").read_text())
        assert usage >= db > 0


# A prefork pool sized like a tuned production box (StartServers = the clients) on a
# machine far smaller than that pool: measured here, 96 children serving php-100k need
# ~1 MiB each on top of Apache's base (56 MiB at 52 children), so at 40 MiB the OOM
# killer runs whether the pool is still spawning at the start or growing under load
# (at 32, 48 and 56 MiB it did, every time; at 72 MiB with 59 children it did not).
# A small FPM pool follows, to show the plan goes on and a stack that fits is measured.
OOM_PLAN = """
name = "small-vps-oom"
duration = "1s"
warmup = "0.5s"
concurrency = [96]
keepalive = [true]
workloads = ["php-100k"]
syscalls = false
machine = { cpus = 1, memory = "40M" }
[[stacks]]
id = "apache-prefork-modphp"
label = "prefork 96"
knobs = { start_servers = 96, min_spare_servers = 96, max_spare_servers = 128, max_request_workers = 128 }
[[stacks]]
id = "nginx-fpm"
label = "FPM static 4"
knobs = { pm = "static", pm_max_children = 4 }
"""


def test_a_memory_limited_prefork_run_records_oom_events():
    require_stack("apache-prefork-modphp")
    require_stack("nginx-fpm")
    store = Store()
    plan = plan_mod.parse(tomllib.loads(OOM_PLAN), "small-vps-oom.toml")
    outcome = runner.run_plan(plan, store)
    # The lab survived and the run is complete: an OOM-killed stack is a result.
    assert outcome.status == "complete" and outcome.errors == [], [e.message for e in outcome.errors]
    prefork, fpm = store.cells(outcome.run_id)
    f = figures.of(prefork)
    assert f.oom_kills and f.oom_kills >= 1, prefork.cost.memory_events
    events = prefork.cost.memory_events
    assert events.limit_bytes == 40 * MiB
    # The kernel met the limit before it killed: in the window when it killed there;
    # when the pool died while still spawning (start or warm-up: kills_before), the
    # window's counters begin after it, and a cgroup's OOM kill is itself the limit met.
    if events.oom_kills:
        assert events.limit_hits > 0, events
    else:
        assert events.oom_kills_before >= 1, events
    # Whichever process the kernel chose, the stored cell names the OOM killer: as the
    # reason when Apache's parent was taken, as a caveat when children were.
    named = {c.code for c in prefork.caveats}
    assert "oom_killed" in named or "OOM-killed under the 40 MiB limit" in (prefork.error or "")
    # The plan went on: the small pool fits the machine and is measured like any stack.
    assert fpm.status == "ok" and fpm.engine.requests_per_s > 0
    assert fpm.cost.oom_kills == 0 and fpm.cost.memory_events.peak_bytes < 40 * MiB
    # Nothing left behind: no server, no cgroup of the run (nor a cpuset).
    for base in (ROOT / "memory" / LAB, ROOT / "cpuset" / LAB):
        leftovers = [p for p in base.glob(f"run-{os.getpid()}/*")] if base.exists() else []
        assert leftovers == []


def test_a_machine_swept_before_its_first_child_gets_its_limit_back():
    """Another lab's sweep of empty cgroups may remove the machine's cgroup in the moment
    before its first child exists; the child's mkdir makes it again, without a limit."""
    from stackbench.monitor.cgroup import Cgroup
    from stackbench.monitor.machine_cgroup import MachineCgroup

    mc = MachineCgroup.create(f"test-{os.getpid()}-machine", None, machine.MachineProfile(None, 64 * MiB), [0])
    child = None
    try:
        mem = mc.cgroup.path("memory")
        mem.rmdir()  # what a concurrent sweep does to an empty cgroup
        child = Cgroup.create("stack", parent=mc.name)
        assert (mem / "memory.limit_in_bytes").read_text().strip() != str(64 * MiB)  # made again, unlimited
        mc.fence(child)
        assert (mem / "memory.limit_in_bytes").read_text().strip() == str(64 * MiB)
    finally:
        if child:
            child.remove()
        mc.remove()
    assert not mem.exists()


# -- fractional CPUs: a quota on the machine's cgroup ------------------------------------

def needs_cpu_controller():
    from stackbench.monitor import cpu_quota

    reason = cpu_quota.unavailable_reason()
    if reason:
        pytest.skip(reason)


def quota_files(d: Path) -> dict[str, str]:
    return {f.name: f.read_text().strip() for f in d.iterdir() if f.name in
            ("cpu.max", "cpu.cfs_period_us", "cpu.cfs_quota_us", "cpu.cfs_burst_us", "cpu.max.burst")}


def test_a_fractional_cpu_is_a_quota_while_the_stack_runs_and_gone_after(workdir):
    require_stack("nginx-fpm")
    needs_cpu_controller()
    inst = StackInstance(registry.get("nginx-fpm"), {}, cpus=[0], workdir=workdir,
                         workloads=[workloads.get("php-hello")], machine=machine.MachineProfile(cpus=0.5))
    with inst:
        mc = inst.machine_cgroup
        written = quota_files(mc.quota_dir)
        if "cpu.max" in written:  # v2
            assert (written["cpu.max"], written.get("cpu.max.burst", "0")) == ("50000 100000", "0")
        else:  # v1; burst left 0: a steady share, not a burstable VPS
            assert written == {"cpu.cfs_period_us": "100000", "cpu.cfs_quota_us": "50000", "cpu.cfs_burst_us": "0"}
        assert mc.applied["cpu_quota"] == {"cpu_period_us": 100_000, "cpu_quota_us": 50_000}
        members = inst.cgroup.pids()
        assert members
        if mc.cpu_dir is not None:  # v1: the stack's cgroup below the machine's in the cpu hierarchy
            mine = inst.cgroup.path("cpu")
            assert mine.parent == mc.cpu_dir
            assert set(members) <= {int(p) for p in (mine / "cgroup.procs").read_text().split()}
        assert {cpus_allowed(pid) for pid in members} == {"0"}  # ceil(0.5) = 1 core
        dirs = [d for d in [mc.quota_dir, mc.cpu_dir, inst.cgroup.path("cpu"), mc.cgroup.path("memory")] if d]
    assert dirs and not any(d.exists() for d in dirs)  # nothing left behind
    assert not (ROOT / "cpu" / LAB / f"run-{os.getpid()}").exists()


SPIN = """
import os, time
os.sched_setaffinity(0, [0])
start, cpu = time.monotonic(), time.process_time()
while time.monotonic() < start + 1.0:
    pass
print(time.process_time() - cpu, time.monotonic() - start)
"""


def test_the_quota_holds_a_busy_process_to_its_share():
    """A process spinning on its core for a second under `cpus = 0.5` gets about half of
    it, and the kernel counts the periods it was throttled in."""
    import subprocess
    import sys

    from stackbench.monitor.cgroup import Cgroup
    from stackbench.monitor.machine_cgroup import MachineCgroup

    needs_cpu_controller()
    mc = MachineCgroup.create(f"test-{os.getpid()}-machine", None, machine.MachineProfile(0.5, None), [0])
    child = Cgroup.create("spin", parent=mc.name)
    try:
        mc.fence(child)
        out = subprocess.run([sys.executable, "-c", SPIN], preexec_fn=child.join, capture_output=True, text=True,
                             timeout=10, check=True).stdout
        cpu_s, wall_s = map(float, out.split())
        stat = dict(line.split() for line in (mc.quota_dir / "cpu.stat").read_text().splitlines())
        assert 0.35 <= cpu_s / wall_s <= 0.6, (cpu_s, wall_s)
        assert int(stat["nr_throttled"]) >= 5, stat  # ~10 periods in the second, most of them cut short
    finally:
        child.remove()
        mc.remove()
    assert not mc.cgroup.dirs and mc.cpu_dir is None
