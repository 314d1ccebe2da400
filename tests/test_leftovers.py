"""What a dead lab left, found and removed (leftovers.py): only what carries the lab's
mark and whose maker is gone; only processes inside the lab's own stale cgroups are
signalled. The cgroup tests use real cgroups (root)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from conftest import require_tool
from test_fault_matrix import PLAN as FAULT_PLAN
from stackbench.upkeep import leftovers
from stackbench.monitor.cgroup import Cgroup


@pytest.fixture
def tmp(tmp_path, monkeypatch):
    """A temp dir of the test's own: make_dir, the ledger and the sweep look there (and
    only there: the machine's own stale cgroups or namespaces are not this test's)."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(leftovers, "FINDERS", [leftovers.stale_directories])
    return tmp_path


def dead_owner() -> leftovers.Owner:
    """The pid and start time of a process that has exited."""
    proc = subprocess.Popen(["sleep", "30"])
    owner = leftovers.Owner(proc.pid, leftovers.process_start(proc.pid))
    proc.kill()
    proc.wait()
    return owner


def mark(path: Path, owner: leftovers.Owner) -> Path:
    path.mkdir()
    (path / leftovers.OWNER_FILE).write_text(f"{owner.pid} {owner.start}\n")
    (path / "logs").mkdir()
    (path / "logs" / "error.log").write_text("a server's last words\n")
    return path


def test_a_directory_of_a_live_lab_is_kept_and_one_of_a_dead_lab_is_removed(tmp):
    mine = leftovers.make_dir("stackbench-nginx-fpm-")
    assert mine.parent == tmp and mine.stat().st_mode & 0o777 == 0o700
    assert leftovers.owner_of(mine) == leftovers.me() and leftovers.me().alive()
    gone = mark(tmp / "stackbench-apache-prefork-modphp-x1", dead_owner())
    assert not leftovers.owner_of(gone).alive()
    found = list(leftovers.stale_directories())
    assert [(f.kind, f.what) for f in found] == [("run directory", str(gone))]
    swept = leftovers.sweep()
    assert [left.what for left in swept.removed] == [str(gone)] and not swept.failed
    assert not gone.exists() and mine.exists()
    assert "removed run directory" in swept.removed[0].line() and f"pid {leftovers.owner_of(mine).pid}" not in \
        swept.removed[0].line()


def test_nothing_without_the_mark_or_the_prefix_is_touched(tmp):
    owner = dead_owner()
    unmarked = tmp / "stackbench-nginx-fpm-old"
    unmarked.mkdir()  # an older stackbench's directory, or the user's: no mark, not provably ours
    other = mark(tmp / "myapp-cache", owner)  # a mark, but not the lab's name
    not_a_dir = tmp / "stackbench-load-0.3"
    not_a_dir.write_text("a file")
    link_target = mark(tmp / "elsewhere", owner)
    (tmp / "stackbench-link").symlink_to(link_target)
    assert leftovers.sweep().removed == []
    assert unmarked.exists() and other.exists() and not_a_dir.exists() and link_target.exists()


def test_a_reused_pid_is_not_the_maker(tmp):
    me = leftovers.me()
    impostor = mark(tmp / "stackbench-perf-x", leftovers.Owner(me.pid, me.start - 1))  # same pid, other start
    assert [f.what for f in leftovers.stale_directories()] == [str(impostor)]


def test_dry_run_lists_without_removing(tmp):
    gone = mark(tmp / "stackbench-strace-abc", dead_owner())
    swept = leftovers.sweep(dry_run=True)
    assert [(left.kind, left.line(dry_run=True).split()[0]) for left in swept.removed] == [
        ("strace scratch directory", "would")]
    assert gone.exists()


def test_workdirs_are_remembered_and_swept_too(tmp, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("workdir")
    made = leftovers.make_dir("stackbench-nginx-fpm-", workdir)
    assert str(workdir.resolve()) in (tmp / leftovers.LEDGER).read_text().splitlines()
    assert workdir.resolve() in leftovers.bases()
    stale = mark(workdir / "stackbench-nginx-fpm-dead", dead_owner())
    assert [left.what for left in leftovers.sweep().removed] == [str(stale)]
    assert made.exists()


def test_a_gone_workdir_is_forgotten(tmp, tmp_path_factory):
    workdir = tmp_path_factory.mktemp("gone")
    leftovers.make_dir("stackbench-x-", workdir)
    subprocess.run(["rm", "-rf", str(workdir)], check=True)
    leftovers.sweep()
    assert str(workdir) not in (tmp / leftovers.LEDGER).read_text()


def test_disowned_directories_are_the_users(tmp):
    kept = leftovers.make_dir("stackbench-nginx-fpm-")
    leftovers.disown(kept)
    (kept / leftovers.OWNER_FILE).write_text("")  # even a broken mark is no mark
    assert list(leftovers.stale_directories()) == []


def test_registered_finders_run_after_the_others_and_a_failure_does_not_stop_the_sweep(tmp, monkeypatch):
    removed = []

    def namespaces():
        def fail():
            raise PermissionError(1, "Operation not permitted")
        yield leftovers.Leftover("network namespace", "stackbench-123-a", "made by pid 123, gone", fail)
        yield leftovers.Leftover("network namespace", "stackbench-123-b", "made by pid 123, gone",
                                 lambda: removed.append("b"))

    leftovers.register(namespaces)
    leftovers.register(namespaces)  # once only
    assert leftovers.FINDERS[-1] is namespaces and leftovers.FINDERS.count(namespaces) == 1
    swept = leftovers.sweep()
    assert removed == ["b"]
    assert [left.what for left in swept.removed] == ["stackbench-123-b"]
    assert [(left.what, why) for left, why in swept.failed] == [("stackbench-123-a", "Operation not permitted")]


def test_cgroup_of_a_reused_pid_is_stale(tmp):
    made = tmp / "hierarchy"
    made.mkdir()
    time.sleep(2.5)  # beyond the margin for /proc's clock (btime is whole seconds)
    later = subprocess.Popen(["sleep", "30"])  # started after the "cgroup" was made: not its maker
    try:
        assert leftovers._cgroup_stale(f"run-{later.pid}", [made]) == f"made by pid {later.pid}, gone"
        assert leftovers._cgroup_stale(f"run-{os.getpid()}", [made]) is None  # this test was there before
    finally:
        later.kill()
        later.wait()


needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="making cgroups needs root")


@needs_root
def test_a_dead_labs_cgroup_loses_its_processes_and_nothing_else_is_signalled(tmp):
    owner = dead_owner()
    run_cg = Cgroup.create(f"run-{owner.pid}")
    if run_cg is None:
        pytest.skip("no usable cgroup hierarchy here")
    stack_cg = Cgroup.create("stackbench-nginx-fpm-abc", parent=run_cg.name)
    inside = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: stack_cg.join())
    # Not the lab's: a process whose command line looks like the lab's, outside its cgroups.
    outside = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", "stackbench-nginx-fpm-abc"])
    live_cg = Cgroup.create(f"run-{os.getpid()}-test")  # not a run-PID name: maker unknown, has members
    bystander = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: live_cg.join())
    try:
        found = {left.what: left for left in leftovers.stale_cgroups()}
        assert found[f"stackbench/run-{owner.pid}"].why == f"made by pid {owner.pid}, gone; 1 of its processes killed"
        assert found[f"stackbench/run-{os.getpid()}-test"].remove is None  # reported, left alone
        found[f"stackbench/run-{owner.pid}"].remove()
        assert inside.wait(timeout=5) == -9
        assert outside.poll() is None and bystander.poll() is None
        assert not any(d.exists() for d in run_cg.dirs.values())
        assert all(d.exists() for d in live_cg.dirs.values())
    finally:
        for p in (inside, outside, bystander):
            p.kill()
            p.wait()
        live_cg.remove()
        stack_cg.remove()
        run_cg.remove()


@needs_root
def test_an_empty_cgroup_of_unknown_maker_is_removed(tmp):
    cg = Cgroup.create("stackbench-caddy-fpm-nodir")  # its run directory is gone
    if cg is None:
        pytest.skip("no usable cgroup hierarchy here")
    try:
        found = [left for left in leftovers.stale_cgroups() if left.what == f"stackbench/{cg.name}"]
        assert [left.why for left in found] == ["empty"]
        found[0].remove()
        assert not any(d.exists() for d in cg.dirs.values())
    finally:
        cg.remove()


@needs_root
def test_a_stack_cgroup_follows_its_run_directory(tmp):
    rundir = leftovers.make_dir("stackbench-nginx-fpm-")
    cg = Cgroup.create(rundir.name)
    if cg is None:
        pytest.skip("no usable cgroup hierarchy here")
    proc = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: cg.join())
    try:
        assert [left for left in leftovers.stale_cgroups() if left.what.endswith(rundir.name)] == []  # maker alive
        (rundir / leftovers.OWNER_FILE).write_text(f"{dead_owner().pid} 1\n")
        found = [left for left in leftovers.stale_cgroups() if left.what.endswith(rundir.name)]
        assert len(found) == 1 and found[0].why.endswith("1 of its processes killed")
    finally:
        proc.kill()
        proc.wait()
        cg.remove()


@needs_root
def test_a_dead_labs_cpu_quota_is_swept_with_its_other_cgroups(tmp):
    """A machine profile's fractional CPU is a directory in the v1 cpu hierarchy (another
    mount than memory's): the sweep finds it under the dead run's name and removes it."""
    from stackbench.monitor import cpu_quota
    from stackbench.monitor.machine_cgroup import MachineCgroup
    from stackbench.planning.machine import MachineProfile

    if cpu_quota.unavailable_reason():
        pytest.skip(cpu_quota.unavailable_reason())
    owner = dead_owner()
    run_cg = Cgroup.create(f"run-{owner.pid}")
    mc = MachineCgroup.create("stackbench-nginx-fpm-q1-machine", run_cg.name, MachineProfile(0.5, None), [0])
    stack_cg = Cgroup.create("stackbench-nginx-fpm-q1", parent=mc.name)
    mc.fence(stack_cg)
    inside = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: stack_cg.join())
    quota_dirs = [mc.quota_dir, *stack_cg.dirs.values()]
    try:
        found = {left.what: left for left in leftovers.stale_cgroups()}
        assert found[f"stackbench/run-{owner.pid}"].why == f"made by pid {owner.pid}, gone; 1 of its processes killed"
        found[f"stackbench/run-{owner.pid}"].remove()
        assert inside.wait(timeout=5) == -9
        assert not any(d.exists() for d in quota_dirs)
    finally:
        inside.kill()
        inside.wait()
        stack_cg.remove()
        mc.remove()
        run_cg.remove()


# The fault matrix's tiny plan (1 s cells, four of them), its stack under a CPU quota.
QUOTA_PLAN = "machine = { cpus = 0.5 }\n" + FAULT_PLAN


@pytest.mark.servers
@needs_root
def test_a_lab_killed_under_a_cpu_quota_leaves_it_to_the_next_sweep(workdir):
    """kill -9 of a lab while its stack runs under `cpus = 0.5`: nothing could remove the
    quota's cgroups, and the sweep (the next lab's, `stackbench clean`'s) does."""
    from conftest import require_stack, wait_until
    from stackbench.monitor import cpu_quota

    require_stack("nginx-fpm")
    if cpu_quota.unavailable_reason():
        pytest.skip(cpu_quota.unavailable_reason())
    plan = workdir / "plan.toml"
    plan.write_text(QUOTA_PLAN)
    lab = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(workdir / "r.sqlite"),
                            "--workdir", str(workdir)], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                           cwd=Path(__file__).resolve().parent.parent)
    run = cpu_quota.V1 / "stackbench" / f"run-{lab.pid}"

    def quota_with_members() -> list[Path]:
        try:  # each cell starts the stack afresh: a machine may go while it is read
            return [d for d in run.glob("*-machine") if (d / "cpu.cfs_quota_us").read_text().strip() == "50000"
                    and any((c / "cgroup.procs").read_text().split() for c in d.iterdir() if c.is_dir())]
        except OSError:
            return []

    try:
        assert wait_until(quota_with_members, 30, while_=lambda: lab.poll() is None), lab.stderr.read()
    finally:
        lab.kill()
        lab.wait()
    assert run.exists()  # left: the lab could not see its end
    found = [left for left in leftovers.stale_cgroups() if left.what == f"stackbench/run-{lab.pid}"]
    assert [left.why.split(";")[0] for left in found] == [f"made by pid {lab.pid}, gone"]
    found[0].remove()
    assert not run.exists()
    assert not list(Path("/sys/fs/cgroup").glob(f"*/stackbench/run-{lab.pid}"))


@pytest.mark.servers
@needs_root
def test_a_lab_killed_while_provisioning_wordpress_leaves_no_mariadbd_and_a_swept_directory(workdir):
    """kill -9 while the WordPress snapshot is being built: its mariadbd dies with the lab
    (started as the database user with its own parent-death signal), and the half-built
    directory is the next sweep's."""
    from stackbench.workloads.wordpress import provision

    require_tool("mariadbd", "mariadb-server")
    require_tool("mariadb-install-db", "mariadb-server")
    require_tool("php8.2", "php8.2-cli")
    cache = workdir / "cache"
    proc = subprocess.Popen([sys.executable, "-c", "from stackbench.workloads.wordpress import provision; "
                             "provision.ensure()"], env={**os.environ, provision.CACHE_ENV: str(cache)},
                            cwd=Path(__file__).resolve().parent.parent)
    # The provisioning server: one that lives 0.3 s (mariadb-install-db's bootstrap
    # mariadbd comes and goes first; catching it made this test flaky).
    deadline = time.monotonic() + 120
    running: set[int] = set()
    while not running and time.monotonic() < deadline and proc.poll() is None:
        seen = set(_mariadbd_under(cache))
        if seen:
            time.sleep(0.3)
            running = seen & set(_mariadbd_under(cache))
        else:
            time.sleep(0.05)
    assert running, "provisioning never started its mariadbd"
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 10
    while _mariadbd_under(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _mariadbd_under(cache) == []
    while _processes_under(cache) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _processes_under(cache) == [], "a provisioning child outlived its lab (the installer, say)"
    found = [left for left in leftovers.stale_directories() if left.what.startswith(str(cache))]
    assert [left.kind for left in found] == ["WordPress provisioning directory (a MariaDB datadir)"]
    found[0].remove()
    assert [p.name for p in cache.iterdir() if p.is_dir()] == []


def _processes_under(path: Path) -> list[str]:
    """Live processes whose command line names `path` (a zombie is gone already)."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (proc / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(path) in cmd and state != "Z":
            found.append(f"{proc.name}: {cmd[:120]}")
    return found


def _mariadbd_under(path: Path) -> list[int]:
    pids = []
    for entry in Path("/proc").iterdir():
        try:  # a process may end between the two reads: then it is not there
            cmd = (entry / "cmdline").read_bytes()
            alive = b"mariadbd" in cmd and str(path).encode() in cmd and \
                (entry / "stat").read_text().split(") ")[1][0] != "Z"
        except OSError:
            continue
        if alive:
            pids.append(int(entry.name))
    return pids


@needs_root
def test_a_run_leaves_nothing_a_half_made_machine_put_outside_its_own_cgroup(tmp):
    """A machine profile's v1 cpu and cpuset directories are made below the run's name
    in hierarchies the run's cgroup does not hold; an interrupt between a stack's stop
    steps may leave them. The run's close removes them with a member still inside."""
    from stackbench.monitor import cpu_quota, machine_cgroup
    from stackbench.monitor.run import RunMonitor
    run = RunMonitor([0], count_syscalls=False)
    if run.cgroup is None:
        pytest.skip("no usable cgroup hierarchy here")
    made = []
    for base in (cpu_quota.V1, machine_cgroup.CPUSET):
        if (base / "cgroup.procs").exists():
            leaf = base / "stackbench" / run.cgroup.name / "stackbench-x-machine" / "stackbench-x"
            if base == machine_cgroup.CPUSET:
                machine_cgroup._v1_cpuset_dir(leaf, [0])
            else:
                leaf.mkdir(parents=True)
            made.append(leaf)
    if not made:
        pytest.skip("no v1 cpu or cpuset hierarchy here")
    inside = subprocess.Popen(["sleep", "60"], preexec_fn=lambda: (made[0] / "cgroup.procs").write_text(str(os.getpid())))
    try:
        run.close()
        assert inside.wait(timeout=5) == -9
        assert [leaf for leaf in made if leaf.parent.parent.exists()] == []
    finally:
        inside.kill()
        inside.wait()
