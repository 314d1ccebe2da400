"""The stack on another host (hosts.server = "ssh:DEST", hosts/server.py and agent.py):
the code the lab ships, the agent's answers and errors, and the SSH path for real — an
sshd started by the test in a network namespace is the server's host (the stack there,
the client here)."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import stat
import tarfile
import tempfile
import time
import tomllib
from pathlib import Path

import pytest

from conftest import commands, require_stack, stop_lab, wait_until
from sshd_host import THERE
from test_fault_matrix import snapshot
from stackbench.errors import HostError, UsageError
from stackbench.hosts import bundle, wire
from stackbench.planning import hosts as spec
from stackbench.hosts.agent import boot_id
from stackbench.hosts.server import PREPARE_TIMEOUT_S, START_TIMEOUT_S, AgentLink
from stackbench.model.cost import CgroupSample
from stackbench.model.cost import StoredCost
from stackbench.monitor.session import CellReadings, derive
from stackbench.monitor.status_pages import StatusSample
from stackbench.planning.plan import parse
from stackbench.workloads import login as login_mod, mariadb
from stackbench.workloads.wordpress import provision

# Seconds each (simulations, the real engine, namespaces): left out of `make check`.
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent


def plan_text(hosts: str, duration: str = "1s") -> str:
    return f"""
name = "remote-server"
duration = "{duration}"
warmup = "0s"
concurrency = [4]
keepalive = [true]
workloads = ["php-hello"]
[hosts]
{hosts}
[[stacks]]
id = "nginx-fpm"
"""


# -- the plan --------------------------------------------------------------------------
def test_a_server_host_is_read_and_its_database_goes_with_it():
    plan = parse(tomllib.loads(plan_text('server = "ssh:root@web1"')), "plan.toml")
    assert plan.hosts.remote_server and plan.hosts.server.destination == "root@web1"
    assert plan.hosts.clients == (spec.Client("local"),)  # the load still comes from here
    assert spec.resume_flags(plan.checked()["hosts"]) == " --allow-remote-target"
    same = parse(tomllib.loads(plan_text('server = "ssh:root@web1"\ndb = "ssh:root@web1"')), "plan.toml")
    assert same.hosts == plan.hosts


# -- what crosses the channel ----------------------------------------------------------
def test_a_cost_crosses_with_its_times_moved_to_the_labs_clock():
    samples = [CgroupSample(1_000_500, 10, 5, 1, 2, 700, 400, 300, 6, 9),
               CgroupSample(2_000_500, 12, 6, 1, 2, 900, 500, 400, 7, 9)]
    readings = CellReadings(cost=derive(StoredCost(notes=("n",)), samples), samples=samples,
                            status=[StatusSample(1_500_500, "php-fpm", {"active": 3})])
    back = wire.readings_from_dict(json.loads(json.dumps(wire.readings_to_dict(readings))), offset_us=500)
    assert [s.t_unix_us for s in back.samples] == [1_000_000, 2_000_000]
    assert back.status == [StatusSample(1_500_000, "php-fpm", {"active": 3})]
    assert (back.cost.cpu_total_us, back.cost.procs_max, back.cost.notes) == (200, 7, ("n",))
    assert back.cost == readings.cost  # the figures cross as they are


def test_an_error_there_is_the_same_class_here_and_says_where():
    e = wire.error_from_dict(wire.error_to_dict(UsageError("bad knob", hint="h")), "ssh:web1")
    assert type(e) is UsageError and e.message == "bad knob (on ssh:web1)" and e.hint == "h"
    assert type(wire.error_from_dict({"kind": "NoSuchClass", "message": "x"}, "w")) is HostError


# -- the code shipped ------------------------------------------------------------------
def test_the_bundle_is_the_same_bytes_each_time_and_runs_without_the_labs_packages(tmp_path):
    """Packed twice alike (one upload per build and host), and enough there: Python's
    standard library and the bundle, no site-packages (no Pillow: the JPEGs go along)."""
    first, again = bundle.build.__wrapped__(), bundle.build.__wrapped__()
    assert first.digest == again.digest
    with tarfile.open(fileobj=io.BytesIO(first.data)) as tar:
        names = tar.getnames()
        tar.extractall(tmp_path)
    assert "stackbench/hosts/agent.py" in names and "jinja2/__init__.py" in names
    assert not [n for n in names if n.endswith((".so", ".pyc"))]
    shipped = [n for n in names if "/media_shipped/" in n]
    assert shipped, "the generated JPEGs are shipped"
    check = ("import sys, stackbench.hosts.agent, stackbench.workloads as w; "
             "assert not any('site-packages' in p for p in sys.path); "
             "docs = w.DOCUMENTS; import stackbench.workloads.media as m; assert not m.made; "
             "assert len(b''.join(w.get('static-jpeg-150k').files.values())) > 140_000")
    out = subprocess.run([sys.executable, "-S", "-E", "-c", check], cwd=tmp_path, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr


# -- the agent, driven here without SSH ------------------------------------------------
@pytest.fixture
def agent():
    """The agent as the lab starts it there, with this machine's SSH_CONNECTION faked."""
    proc = subprocess.Popen([sys.executable, "-m", "stackbench.hosts.agent"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**os.environ, "SSH_CONNECTION": "127.0.0.1 50000 127.0.0.1 22"})
    link = AgentLink(proc, "ssh:test")
    yield link
    link.close(timeout=10)


def test_the_agent_answers_and_its_errors_are_the_labs_own(agent):
    hello = agent.call("hello", lab_boot_id=boot_id(), server_cpus=[0], engine_cpus=[1], sample_interval_s=0.25,
                       syscalls=False, machine=None)
    assert hello["same_machine"] is True and hello["address"] == "127.0.0.1"  # SSH's arrival address
    assert hello["environment"]["pinning"]["server_cpus"] == [0] and hello["environment"]["engine"] is None
    assert abs(agent.call("clock") - time.time_ns() // 1000) < 2_000_000
    with pytest.raises(UsageError) as e:
        agent.call("require", stack="no-such-stack")
    assert "(on ssh:test)" in e.value.message
    with pytest.raises(HostError, match="no operation 'bogus'"):
        agent.call("bogus")
    agent.call("versions", stack="nginx-fpm")  # still answering after errors


def test_an_agent_whose_input_ends_cleans_up_and_exits(agent):
    agent.call("hello", lab_boot_id=boot_id(), server_cpus=[0], engine_cpus=[1], sample_interval_s=0.25,
               syscalls=False, machine=None)
    cgroup = Path(f"/sys/fs/cgroup/memory/stackbench/run-{agent.proc.pid}")
    had = cgroup.exists()
    agent.close(timeout=10)
    assert agent.proc.returncode == 0
    assert not cgroup.exists() or not had
    with pytest.raises(HostError, match="ended"):
        agent.call("clock")


# -- for real, over SSH ------------------------------------------------------------------
def _stackbench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "stackbench", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout)


def _theirs() -> list[str]:
    """The agent and the servers it started (run directories under the temp dir)."""
    return [f"{pid} {cmd}" for pid, cmd in commands().items() if "stackbench.hosts.agent" in cmd
            or f"{tempfile.gettempdir()}/stackbench-nginx-fpm-" in cmd]


def _held(workdir: Path) -> dict[str, set]:
    """What the machine holds (processes, cgroups, directories, sockets…) and the agent.
    What an earlier, killed lab left is swept by the next run: take it after a sweep."""
    return snapshot(workdir) | {"agent": set(_theirs())}


def _the_cell(db: Path) -> tuple[sqlite3.Row, dict, dict]:
    """A one-cell run's cell, the engine's document of it, and the run's environment."""
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        (cell,) = conn.execute("SELECT * FROM cells").fetchall()
        env = json.loads(conn.execute("SELECT environment_json FROM runs").fetchone()[0])
    return cell, json.loads(cell["engine_json"]), env


@pytest.mark.servers
def test_a_stack_on_another_host_is_measured_there_and_leaves_nothing(ssh_host, workdir):
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text(f'server = "ssh:remote-test"\nssh_config = "{ssh_host}/ssh_config"'))
    assert _stackbench("clean").returncode == 0
    before = _held(workdir)

    refused = _stackbench("run", str(plan), "--db", str(db))
    assert refused.returncode == 2 and "a server on another host" in refused.stderr, refused.stderr
    assert _held(workdir) == before  # refused before any connection

    dry = _stackbench("run", str(plan), "--dry-run", "--allow-remote-target")
    assert dry.returncode == 0, dry.stderr
    assert f"server: ssh:remote-test at {THERE}" in dry.stdout and "configs checked" in dry.stdout

    done = _stackbench("run", str(plan), "--db", str(db), "--allow-remote-target")
    assert done.returncode == 0, done.stderr
    assert f"server: ssh:remote-test at {THERE} (this machine, through SSH)" in done.stdout + done.stderr
    cell, doc, env = _the_cell(db)
    assert cell["status"] == "ok" and doc["requests"]["completed"] > 100
    assert doc["config"]["url"].startswith(f"http://{THERE}:")  # where the lab reached the host
    # Measured there, by the agent: the stack's cgroup, its processes, perf's system calls.
    assert cell["mem_peak_bytes"] > 1_000_000 and cell["cpu_total_us"] > 0 and cell["procs_max"] >= 3
    assert cell["syscalls_total"] > 0, cell["monitor_notes_json"]
    assert json.loads(cell["versions_json"]).get("nginx")
    server = env["server_host"]
    assert server["same_machine"] is True and server["address"] == THERE
    assert abs(server["offset_us"]) <= server["offset_uncertainty_us"] + 100  # one clock, within its bound
    shown = _stackbench("show", "--db", str(db)).stdout
    assert f"server ssh:remote-test at {THERE}" in shown
    assert _held(workdir) == before  # the agent, its servers, cgroups, run directory, SSH socket: gone


@pytest.mark.servers
@pytest.mark.parametrize("how", ["Ctrl-C", "kill -9"])
def test_a_lab_that_stops_stops_the_stack_on_the_other_host(how, ssh_host, workdir):
    """Ctrl-C: the lab stops the stack there in order (its SSH connection is not in the
    terminal's process group, so it is still open for that). kill -9: the lab's SSH
    clients die with it, the agent's input ends, and it stops the stack itself."""
    require_stack("nginx-fpm")
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text(f'server = "ssh:remote-test"\nssh_config = "{ssh_host}/ssh_config"', "30s"))
    assert _stackbench("clean").returncode == 0
    before = _held(workdir)
    lab = subprocess.Popen([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db),
                            "--allow-remote-target", "--quiet"], cwd=ROOT, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
    assert wait_until(lambda: any("nginx: master" in p for p in _theirs()), 60, while_=lambda: lab.poll() is None), \
        "the stack never started there"
    time.sleep(2.0)  # loading
    stop_lab(lab, how)
    assert wait_until(lambda: not _theirs(), 3), f"the stack there outlived the lab: {_theirs()}"
    if how == "kill -9":  # the SSH socket's directory is the next lab's to sweep
        assert _stackbench("clean").returncode == 0
    assert _held(workdir) == before
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


SIZING = """
name = "remote-sizing"
workloads = ["php-hello"]
keepalive = [true]
slo = {{ p99 = "100ms", errors = 0 }}
search = {{ budget = "10s", precision = "30%", edge = 0 }}
duration = "0.5s"
warmup = "0s"
repetitions = 1
syscalls = false
[hosts]
server = "ssh:remote-test"
ssh_config = "{config}"
[sizing]
target = {{ hits_per_day = 4320000, peak_factor = 2 }}
sizes = [{{ cpus = 1, memory = "256M", label = "one core" }}]
[[stacks]]
id = "nginx-fpm"
label = "nginx + FPM"
"""


@pytest.mark.servers
def test_a_sizing_against_a_server_host_is_said_in_that_hosts_cores(ssh_host_measuring_yardstick, workdir):
    """The path of a rented VPS (docs/guide/sizing.md): `[hosts] server` is the machine the
    sizing measures, and its yardstick is that host's, measured there by the agent. This
    lab's own is switched off (tests/conftest.py sets STACKBENCH_YARDSTICK=off and the
    agent's SSH session does not inherit it), so a figure can only have come from there."""
    require_stack("nginx-fpm")
    plan, db = workdir / "sizing.toml", workdir / "r.sqlite"
    plan.write_text(SIZING.format(config=f"{ssh_host_measuring_yardstick}/ssh_config"))
    assert _stackbench("clean").returncode == 0
    before = _held(workdir)
    done = _stackbench("run", str(plan), "--db", str(db), "--allow-remote-target", timeout=300)
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        stick = json.loads(conn.execute("SELECT yardstick_json FROM sizings").fetchone()[0])
        env = json.loads(conn.execute("SELECT environment_json FROM runs").fetchone()[0])
    assert env["yardstick"] is None  # not measured here
    there = env["server_host"]["environment"]["yardstick"]
    assert there["score"] > 0 and there["php"].startswith("8.") and there["cpu"] == env["pinning"]["server_cpus"][0]
    assert stick == there  # one size: the sizing's core is that run's
    text = " ".join(done.stdout.split())
    # 4,320,000 hits a day at a peak 2× the mean: 100 requests/s
    assert "For 4.32 M hits (page views) a day (peak 2× the day's mean: 100 requests/s at peak)" in text, text
    assert f"yardstick: {there['score']:.0f})" in text and "1 core like this one" in text, text
    again = _stackbench("sizings", "1", "--core", str(there["score"] * 2), "--db", str(db))
    assert again.returncode == 0 and "0.5 of a core of yardstick" in " ".join(again.stdout.split()), again.stdout
    assert _held(workdir) == before


@pytest.mark.servers
def test_a_server_host_that_cannot_be_reached_stops_before_a_run_is_stored(workdir):
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text('server = "ssh:nobody@no-such-host.invalid"'))
    assert _stackbench("clean").returncode == 0
    before = _held(workdir)
    proc = _stackbench("run", str(plan), "--db", str(db), "--allow-remote-target", timeout=60)
    assert proc.returncode == 8, proc.stderr
    assert "nobody@no-such-host.invalid: SSH failed" in proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*) FROM runs").fetchone()[0] == 0
    assert _held(workdir) == before


# -- what the review found ------------------------------------------------------------------
@pytest.mark.parametrize("address, same, problem", [
    ("10.0.0.5", False, None),
    ("127.0.0.1", True, None),  # the lab's own machine: its loopback is the lab's
    ("127.0.0.1", False, "could not reach it"),  # another host's loopback: SSH through a tunnel
    ("0.0.0.0", False, "could not reach it"),
    ("fe80::1", False, "IPv4"),
    ("web1", False, "not an IP address"),
    (None, False, "no SSH_CONNECTION"),
])
def test_the_stack_listens_only_where_the_labs_clients_can_reach_it(address, same, problem):
    from stackbench.hosts.agent import address_problem
    found = address_problem(address, same)
    assert (found is None) if problem is None else (problem in found)


def test_a_failed_starts_state_and_errors_defined_beside_their_module_cross_too():
    from stackbench.network.netns import NetworkError
    e = NetworkError("no veth")
    e.state = {"files": {"nginx/nginx.conf": "x"}, "rundir": "/tmp/r", "since_start": {"oom_kills": 2}}
    back = wire.error_from_dict(json.loads(json.dumps(wire.error_to_dict(e))), "ssh:web1")
    assert type(back) is NetworkError and back.state == e.state


def test_a_stack_on_another_machine_never_shares_the_engines_cores():
    from stackbench.upkeep.pinning import Pinning
    assert Pinning([0], [0, 1]).shared
    apart = Pinning([0], [0, 1], server_host="ssh:web1")
    assert not apart.shared and apart.as_dict()["server_host"] == "ssh:web1"


def test_a_machine_profile_is_checked_on_the_stacks_host_not_here():
    """A profile this machine could not give (all its cores) is the server host's to
    judge; here the same profile is refused."""
    from stackbench.planning import limits
    from stackbench.errors import PlanError
    cores = len(os.sched_getaffinity(0))
    head = f'machine = {{ cpus = {cores} }}\n'
    local = parse(tomllib.loads(head + plan_text("")), "plan.toml")
    if cores > 1:
        with pytest.raises(PlanError):
            limits.check_machine(local)
    remote = parse(tomllib.loads(head + plan_text('server = "ssh:web1"')), "plan.toml")
    limits.check_machine(remote)


def test_on_a_host_of_its_own_the_agent_holds_its_run_lock_and_pins_there(agent):
    """Told the lab is on another machine (another boot id), the agent takes this host's
    run lock (no second lab measures here meanwhile), and chooses the stack's cores as a
    lab would; the lab's engine then gets every core of its own machine."""
    from stackbench.upkeep import lock
    from stackbench.hosts.server import ServerSession
    from stackbench.upkeep.pinning import Pinning, choose
    hello = agent.call("hello", lab_boot_id="another-machine", server_cpus=[0], engine_cpus=[1], sample_interval_s=0.25,
                       syscalls=False, machine=None, address="10.9.9.9")  # hosts.server_address (not loopback)
    assert hello["same_machine"] is False
    assert f"pid {agent.proc.pid}" in (lock.holder() or "")
    assert hello["environment"]["pinning"]["server_cpus"] == choose().server_cpus
    session = ServerSession("web1", "ssh:web1", ssh=None, hello=hello)
    pins = session.pinning(Pinning([0], [1]))
    assert pins.server_cpus == choose().server_cpus and pins.engine_cpus == sorted(os.sched_getaffinity(0))
    assert pins.server_host == "ssh:web1" and not pins.shared
    agent.close(timeout=10)
    assert lock.holder() is None


# -- the database on a host of its own ------------------------------------------------------
def test_a_database_host_is_read_and_needs_a_workload_with_one():
    plan = parse(tomllib.loads(plan_text('db = "ssh:root@db1"').replace('"php-hello"', '"wordpress-home"')), "p.toml")
    assert plan.hosts.remote_db and plan.hosts.db.destination == "root@db1" and not plan.hosts.remote_server
    assert spec.resume_flags(plan.checked()["hosts"]) == " --allow-remote-target"


@pytest.mark.servers
def test_wordpress_with_its_database_on_another_host(ssh_host, workdir):
    """The stack on one host, MariaDB on another (an agent starts it on TCP at that
    host's address): WordPress's pages verified and loaded through it, its cost measured
    there. (`remote-db` is a second name for the test's host: two agents, each with its
    own part. The stack here with its database there takes the same StackInstance path,
    and ran in `bench/remote-server/run.py --wordpress`.)"""
    server = "ssh:remote-test"
    require_stack("nginx-fpm")
    config = ssh_host / "ssh_config"
    config.write_text(config.read_text() + config.read_text().replace("Host remote-test", "Host remote-db"))
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text(plan_text(f'server = "{server}"\ndb = "ssh:remote-db"\nssh_config = "{config}"')
                    .replace('"php-hello"', '"wordpress-home"'))
    assert _stackbench("clean").returncode == 0
    before = _held(workdir)
    done = _stackbench("run", str(plan), "--db", str(db), "--allow-remote-target", "--keep-rundir", timeout=600)
    assert done.returncode == 0, done.stderr
    assert f"database: ssh:remote-db at {THERE}" in done.stdout + done.stderr
    cell, doc, env = _the_cell(db)
    assert cell["status"] == "ok" and doc["requests"]["completed"] > 5 and not doc["requests"].get("non_2xx")
    assert doc["config"]["url"].startswith(f"http://{'127.0.0.1' if server == 'local' else THERE}:")
    assert cell["service_mem_peak_bytes"] > 20_000_000 and cell["service_cpu_us"] > 0  # MariaDB, measured there
    assert env["db_host"]["address"] == THERE and ("server_host" in env) == (server != "local")
    shown = _stackbench("show", "--db", str(db))
    assert f"database ssh:remote-db at {THERE}" in shown.stdout
    # The database's start gave WordPress a password of its own (its PHP-FPM pool there,
    # kept with --keep-rundir: the namespace's host is this machine), which crossed two
    # agents and is nowhere in the store, the run's output or `show`.
    kept = Path(re.search(r"kept nginx-fpm's run directory: (?:\S+:)?(/\S+)", done.stdout + done.stderr).group(1))
    rendered = "\n".join(p.read_text() for p in kept.rglob("*.conf"))
    # The site's readers got theirs from the same start (the verification logged one in
    # through the stack there): in the stack's 0600 logins file, and nowhere else either.
    logins = kept / login_mod.LOGINS_FILE
    assert stat.S_IMODE(logins.stat().st_mode) == 0o600
    readers = [a.password for a in login_mod.read(logins)]
    shutil.rmtree(kept)
    password = re.search(rf'env\[{mariadb.PASSWORD_ENV}\] = "([^"]+)"', rendered).group(1)
    assert len(password) >= 32 and password != provision.SNAPSHOT_PASSWORD and len(readers) == 4
    for what, text in [("the store", b"".join(p.read_bytes() for p in workdir.glob("r.sqlite*"))),
                       ("the run's output", (done.stdout + done.stderr).encode()),
                       ("show", (shown.stdout + shown.stderr).encode())]:
        for secret in (password, *readers):
            assert secret.encode() not in text, f"a password is in {what}"
    assert _held(workdir) == before


@pytest.mark.servers
def test_a_database_there_refuses_the_labs_fixed_password(agent):
    """The database an agent starts for hosts.db listens on TCP: its account has the
    start's own password (set before the first connection, workloads/mariadb.py), which
    the agent hands back for the stack's PHP; the fixed one in this repository is refused
    by MariaDB's client and by PHP's mysqli (WordPress's), and so is a previous start's."""
    from test_db_password import login, refused
    from test_workloads_real import require_wordpress

    require_wordpress()
    agent.call("hello", lab_boot_id=boot_id(), server_cpus=[0], engine_cpus=[1], sample_interval_s=0.25,
               syscalls=False, machine=None, role="database", peer_boot_id=boot_id())
    agent.call("db_prepare", PREPARE_TIMEOUT_S, workloads=["wordpress-home"])
    started = [agent.call("db_up", START_TIMEOUT_S, workloads=["wordpress-home"]) for _ in range(2)]
    try:
        for db, other in zip(started, reversed(started)):
            host, port = db["address"].rsplit(":", 1)
            assert refused(login(host, int(port), provision.SNAPSHOT_PASSWORD))
            assert refused(login(host, int(port), other["password"]))
            assert login(host, int(port), db["password"]) == ("connected", "connected")
    finally:
        for db in started:
            agent.stop("db_down", did=db["id"])


def test_a_stack_and_a_database_provisioned_differently_are_refused():
    from types import SimpleNamespace
    from stackbench.hosts.remote_db import check_same_site

    def host(label, key, wp):
        facts = {"key": key, "wordpress": wp, "mariadb": "mariadbd 10.11"}
        return SimpleNamespace(label=label, link=SimpleNamespace(call=lambda op: facts))

    check_same_site(host("ssh:db1", "k1", "6.1"), host("ssh:web1", "k1", "6.1"))
    with pytest.raises(HostError, match=r"on ssh:web1 \(WordPress 6.1, .*\) and on ssh:db1 \(WordPress 6.4"):
        check_same_site(host("ssh:db1", "k2", "6.4"), host("ssh:web1", "k1", "6.1"))


def test_a_database_on_loopback_is_refused_when_the_stack_is_on_another_machine(agent):
    """Its loopback would be the stack's own: the hint names the database's key."""
    with pytest.raises(HostError) as e:
        agent.call("hello", lab_boot_id=boot_id(), server_cpus=[0], engine_cpus=[1], sample_interval_s=0.25,
                   syscalls=False, machine=None, role="database", peer_boot_id="the-stacks-machine")
    assert "the database cannot listen on 127.0.0.1" in e.value.message and "hosts.db_address" in e.value.hint
