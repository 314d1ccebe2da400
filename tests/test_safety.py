"""Safety: no shell anywhere (names from plan files cannot reach one), load only to
loopback or the lab's own namespaces unless the user says otherwise, run directories
private to the lab yet passable by the servers' workers, workers unprivileged, SIGHUP
under nohup left ignored."""

from __future__ import annotations

import ast
import os
import pwd
import signal
import tempfile
import time
from pathlib import Path

import pytest

from conftest import require_stack
from stackbench import cli, workloads
from stackbench.planning import target
from stackbench.upkeep import leftovers
from stackbench.errors import UsageError
from stackbench.stacks import installed, rundir
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS

PACKAGE = Path(__file__).resolve().parent.parent / "stackbench"
SHELLS = {"sh", "bash", "dash", "/bin/sh", "/bin/bash", "/usr/bin/sh", "/usr/bin/bash"}


def calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
            owner = f.value.id if isinstance(f, ast.Attribute) and isinstance(f.value, ast.Name) else ""
            yield node, owner, name


def test_no_shell_anywhere_in_the_package():
    """Every command is an argv list: no shell=True, os.system, os.popen, getoutput, no
    argv that starts a shell."""
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        for node, owner, name in calls(tree):
            where = f"{path.relative_to(PACKAGE.parent)}:{node.lineno}"
            if any(k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                   for k in node.keywords):
                found.append(f"{where} shell=")
            if (owner, name) in {("os", "system"), ("os", "popen"), ("subprocess", "getoutput"),
                                 ("subprocess", "getstatusoutput"), ("os", "execl"), ("os", "spawnl")}:
                found.append(f"{where} {owner}.{name}")
            if node.args and isinstance(node.args[0], ast.List) and node.args[0].elts:
                first = node.args[0].elts[0]
                if isinstance(first, ast.Constant) and first.value in SHELLS:
                    found.append(f"{where} argv starts a shell")
    assert found == []
    assert len(list(PACKAGE.rglob("*.py"))) > 50  # the walk saw the package


def test_hostile_names_in_a_plan_are_only_names(workdir, monkeypatch, capsys):
    """A label and an application's environment full of shell syntax go through the
    configs and the servers' own checkers as data: nothing is executed."""
    require_stack("nginx-fpm")
    monkeypatch.setattr(tempfile, "tempdir", str(workdir))
    canary = workdir / "pwned"
    app = workdir / "app"
    app.mkdir(mode=0o755)
    (app / "index.php").write_text("<?php echo 'hi';")
    (app / "index.php").chmod(0o644)
    plan = workdir / "plan.toml"
    plan.write_text(f'''workloads = ["app"]
[[stacks]]
id = "nginx-fpm"
label = "x; touch {canary}; $(touch {canary}) `touch {canary}`"
[app]
docroot = "{app}"
env = {{ EVIL = "$(touch {canary}); `touch {canary}` | touch {canary} & touch {canary}" }}
''')
    status = cli.main(["run", "--dry-run", str(plan)])
    out = capsys.readouterr()
    assert status == 0, out.err  # configs rendered and accepted by nginx -t, php-fpm -t
    assert "1 cells" in out.out or "cells" in out.out
    assert not canary.exists()


@pytest.mark.parametrize("host,allowed", [
    ("127.0.0.1", True), ("127.0.0.2", True), ("localhost", True), ("::1", True), ("[::1]", True),
    ("10.200.0.2", False), ("192.0.2.7", False), ("example.org", False), ("", False),
])
def test_load_goes_only_to_loopback(host, allowed):
    if allowed:
        target.check(host)
    else:
        with pytest.raises(UsageError, match="neither loopback nor one of the lab's own network namespaces"):
            target.check(host)
        target.check(host, allow_remote=True)  # the user said so


def test_the_labs_own_namespace_addresses_are_allowed_while_claimed():
    target.claim("10.200.0.2")
    try:
        target.check("10.200.0.2")
    finally:
        target.release("10.200.0.2")
    with pytest.raises(UsageError):
        target.check("10.200.0.2")


def test_allow_remote_target_needs_loads_bounded_in_time():
    target.check_bounded(5.0, True)
    target.check_bounded(None, False)
    with pytest.raises(UsageError, match="bounded in time"):
        target.check_bounded(None, True)


def test_the_engine_is_told_only_for_targets_that_are_not_loopback():
    from stackbench.engine import LoadSpec

    assert "--allow-remote" not in LoadSpec("http://127.0.0.1:1/", 1).argv("e")
    assert "--allow-remote" in LoadSpec("http://10.200.0.2:1/", 1, allow_remote=True).argv("e")


def test_run_directory_acl_lets_the_workers_pass_and_nobody_else(tmp_path):
    uids = [33, 104]
    acl = rundir.passage_acl(uids)
    d = tmp_path / "d"
    d.mkdir()
    os.setxattr(d, "system.posix_acl_access", acl)
    assert rundir.passers(d) == uids
    assert d.stat().st_mode & 0o777 == 0o710  # group bits: the ACL's mask, --x


def test_sighup_under_nohup_stays_ignored():
    old_hup, old_term = signal.getsignal(signal.SIGHUP), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        cli._stop_like_ctrl_c()
        assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN
        signal.signal(signal.SIGHUP, signal.SIG_DFL)
        cli._stop_like_ctrl_c()
        assert callable(signal.getsignal(signal.SIGHUP))
        with pytest.raises(KeyboardInterrupt):
            signal.getsignal(signal.SIGHUP)(signal.SIGHUP, None)
    finally:
        signal.signal(signal.SIGHUP, old_hup)
        signal.signal(signal.SIGTERM, old_term)


# -- real servers ------------------------------------------------------------------------
RUNNABLE = [sid for sid, s in STACKS.items() if not installed.missing(s) and not s.unavailable()]
# Processes the lab starts itself may stay root (masters that bind ports, then drop their
# workers' privileges); of what they fork, only h2o's perl helper does (FIELD-NOTES), and
# it serves no request.
ROOT_HELPERS = {"h2o-fpm": {"perl"}}


@pytest.mark.servers
@pytest.mark.skipif(os.geteuid() != 0, reason="workers drop privileges only when the lab runs as root")
@pytest.mark.parametrize("stack_id", RUNNABLE or ["none"])
def test_workers_run_unprivileged_and_the_run_directory_is_private(stack_id, workdir):
    require_stack(stack_id)
    inst = StackInstance(STACKS[stack_id], {}, workdir=workdir,
                         workloads=[workloads.get("php-hello"), workloads.get("static-12b")])
    with inst:
        inst.verify(["php-hello", "static-12b"])  # the workers reached the docroot and sockets
        d = inst.ctx.rundir
        assert d.stat().st_mode & 0o077 == 0o010, oct(d.stat().st_mode)  # nobody else: mask --x, others 0
        allowed = {pwd.getpwnam(u).pw_uid for u in rundir.WORKER_USERS if _exists(u)}
        assert set(rundir.passers(d)) == allowed
        assert leftovers.owner_of(d) == leftovers.me()
        masters = {p.pid for p in inst.processes}
        workers = {}
        for pid in inst.all_pids():
            name, uid = _name_and_uid(pid)
            if pid not in masters and name not in ROOT_HELPERS.get(stack_id, set()):
                workers[f"{name}[{pid}]"] = uid
        assert workers or stack_id in ("lighttpd-fpm", "caddy-fpm", "h2o-fpm")  # single-process fronts
        assert {name: uid for name, uid in workers.items() if uid == 0} == {}
        for p in inst.processes:  # and those that run as one process have dropped too
            if p.name in ("lighttpd", "caddy", "h2o", "jetty", "mariadbd"):
                assert int(Path(f"/proc/{p.pid}/status").read_text().split("Uid:\t")[1].split()[1]) != 0


def _name_and_uid(pid: int) -> tuple[str, int | None]:
    """A process's name and effective uid, once it has dropped: a child a master has just
    forked is root until its setuid() a moment later (prefork spawns spare children at
    any time), so a root reading is taken again for up to a second. None: it exited."""
    deadline = time.monotonic() + 1
    while True:
        try:
            text = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return "exited", None
        status = dict(line.split(":\t", 1) for line in text.splitlines() if ":\t" in line)
        uid = int(status["Uid"].split()[1])
        if uid != 0 or time.monotonic() > deadline:
            return status["Name"], uid
        time.sleep(0.01)


def _exists(user: str) -> bool:
    try:
        pwd.getpwnam(user)
        return True
    except KeyError:
        return False
