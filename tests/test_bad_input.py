"""Bad input, as a new user types it: one row per error sentence (input → the sentence's
fragment → exit status). Each gets exactly one `error:` line (no traceback), the
documented exit status, and nothing started: no server process, no cgroup, no run
directory left, no run stored."""

from __future__ import annotations

import os
import shutil
import socket
import sqlite3
import subprocess
import tempfile
from pathlib import Path
from typing import Callable

import pytest

from conftest import commands, hold_run_lock
from stackbench import runner
from stackbench.upkeep import lock
from stackbench.cli import main
from stackbench.store import SCHEMA_VERSION, Store

STACK = '[[stacks]]\nid = "nginx-fpm"\n'
APP_DOCROOT = "/usr/share/doc"  # readable by others: the [app] rows fail on their keys, not on this


def plan(text: str) -> Callable[[Path], list[str]]:
    """A row whose input is a plan file with `text`."""
    def argv(d: Path) -> list[str]:
        (d / "plan.toml").write_text(text)
        return ["run", str(d / "plan.toml"), "--db", str(d / "r.sqlite")]
    return argv


# (input, fragment of the one error line, exit status)
PLAN_ROWS = [
    # plan files: syntax, unknown keys at every level
    ("concurrency = [1,\n" + STACK, "not valid TOML", 2),
    ("concurrancy = [1, 16]\n" + STACK, "unknown key 'concurrancy' (did you mean 'concurrency'?)", 2),
    ("keepalve = [true]\n" + STACK, "unknown key 'keepalve' (did you mean 'keepalive'?)", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nknob = { pm = "static" }\n', "unknown key stacks[0].'knob' (did you mean 'knobs'?)", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm_max_childs = 5 }\n', "has no knob 'pm_max_childs'", 2),
    ('[[stacks]]\nid = "nginx-php"\n', "unknown stack 'nginx-php'", 2),
    ('workloads = ["php-helo"]\n' + STACK, "unknown workload 'php-helo'", 2),
    (STACK + '[scenario]\nquestin = "?"\n', "unknown key scenario.'questin' (did you mean 'question'?)", 2),
    ('load = "capacity"\nslo = { p99 = "10ms", p97 = "20ms" }\n' + STACK, "slo has no key 'p97'", 2),
    ('load = "capacity"\nslo = { p99 = "10ms" }\nsearch = { budjet = "1m" }\n' + STACK, "search has no key 'budjet'", 2),
    ('load = "stages"\nstages = [{ duration = "1s", concurency = 4 }]\n' + STACK, "stages[0] has no key 'concurency'", 2),
    ('workloads = ["app"]\n' + STACK + f'[app]\ndocroot = "{APP_DOCROOT}"\nfront_controler = "/index.php"\n',
     "has an unknown key 'front_controler'", 2),
    ('workloads = ["app"]\n' + STACK + f'[app]\ndocroot = "{APP_DOCROOT}"\n[[app.urls]]\npath = "/"\nstatus_code = 200\n',
     "urls[0] has an unknown key 'status_code'", 2),
    ('workloads = ["app"]\n' + STACK + f'[app]\ndocroot = "{APP_DOCROOT}"\nenv = {{ "DB HOST" = "x" }}\n',
     "env name 'DB HOST' is not an environment variable name", 2),
    ('workloads = ["app"]\n' + STACK + f'[app]\ndocroot = "{APP_DOCROOT}"\nenv = {{ A = "x\\nphp_admin_value[x] = 1" }}\n',
     "env value of A holds a line break", 2),
    # values of the wrong kind, numbers out of range
    ('load = "sometimes"\n' + STACK, "load must be one of closed, rate, stages, capacity", 2),
    ('keepalive = "yes"\n' + STACK, "keepalive takes bool values, not 'yes'", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm = "sometimes" }\n', "knob 'pm' is one of", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { pm_max_children = -4 }\n', "takes a whole number >= 0, not -4", 2),
    ("concurrency = [0]\n" + STACK, "whole numbers from 1 to 100,000, not 0", 2),
    ("concurrency = [200000]\n" + STACK, "whole numbers from 1 to 100,000, not 200000", 2),
    ('load = "rate"\nrate = [0]\n' + STACK, "rate takes requests/s above 0", 2),
    ('duration = "0s"\n' + STACK, "duration must be above 0 and at most 1h", 2),
    ('duration = "10h"\n' + STACK, "duration must be above 0 and at most 1h", 2),
    ('duration = "fast"\n' + STACK, "not a duration", 2),
    ('warmup = "2h"\n' + STACK, "warmup must be between 0s and 1h", 2),
    ('timeout = "0s"\n' + STACK, "timeout must be above 0 and at most 10m", 2),
    ("requests = 0\n" + STACK, "requests must be a whole number >= 1", 2),
    ("repetitions = 0\n" + STACK, 'repetitions must be a whole number >= 1 or "auto"', 2),
    ('sample_interval = "1ms"\n' + STACK, "sample_interval must be between 10ms and 10s", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nport = 70000\n', "port must be 1..65535, not 70000", 2),
    ("concurrency = [1]\n", "a plan needs at least one [[stacks]] entry", 2),
    ('baseline = "nginx"\n' + STACK, "baseline 'nginx' is not one of the plan's stacks", 2),
    # protocols: the axis, the tls table, a protocol the stack cannot serve
    ('protocol = ["http/1.1", "spdy"]\n' + STACK, "unknown protocol 'spdy'; one of http/1.1, https, h2", 2),
    ('tls = { handshake = ["full"] }\n' + STACK, "a tls table is given but protocol asks for no TLS", 2),
    ('protocol = ["https"]\ntls = { handshake = ["slow"] }\n' + STACK, "tls.handshake takes keep-alive, resumed, full", 2),
    ('protocol = ["https"]\nstreams = 10\n' + STACK, "streams is read only for HTTP/2", 2),
    ('protocol = ["h2"]\n[[stacks]]\nid = "hhvm"\n', "stack 'hhvm' cannot serve protocol 'h2'", 2),
    # checked before anything starts: the machine's limits, every server's own config check
    ("concurrency = [90000]\n" + STACK, "connections, and this machine lets a process open at most", 2),
    ('[[stacks]]\nid = "nginx-fpm"\nknobs = { nginx_worker_connections = 0 }\n', "nginx rejected its configuration", 5),
    # Jetty: a unix socket its FastCGI client cannot use; knobs that contradict each other;
    # its dry start (Jetty has no checker) finding too few threads for its acceptors and selectors
    ('[[stacks]]\nid = "jetty-fpm"\nknobs = { fpm_listen = "unix" }\n', "connects over TCP only", 2),
    ('[[stacks]]\nid = "jetty-fpm"\nknobs = { jetty_min_threads = 50, jetty_max_threads = 20 }\n',
     "knob 'jetty_min_threads' (50) is above jetty_max_threads (20)", 2),
    ('[[stacks]]\nid = "jetty-fpm"\nknobs = { jetty_min_threads = 1, jetty_max_threads = 2 }\n',
     "jetty rejected its configuration", 5),
]


@pytest.fixture
def clean_machine(workdir, monkeypatch):
    """The lab's temp dir and run lock are the test's own; yields a check that nothing
    the lab starts or makes is there."""
    monkeypatch.setattr(tempfile, "tempdir", str(workdir))
    monkeypatch.setattr(lock, "LOCK_PATH", workdir / "stackbench.lock")

    def begin(*args, **kwargs):  # a row that is not bad input must not measure for minutes
        raise AssertionError("bad input reached the start of a run")

    monkeypatch.setattr(runner, "begin", begin)
    before = _cgroups()

    def nothing_started() -> None:
        assert [p.name for p in workdir.iterdir() if p.name.startswith("stackbench-")] == []
        assert _processes_under(workdir) == []
        assert _cgroups() - before == set(), "a cgroup was made"
        if (workdir / "r.sqlite").exists():
            with sqlite3.connect(workdir / "r.sqlite") as db:
                assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 0

    yield workdir, nothing_started


def _cgroups() -> set[str]:
    return {str(p) for p in Path("/sys/fs/cgroup").glob("*/stackbench/*") if p.is_dir()} | \
        {str(p) for p in Path("/sys/fs/cgroup/stackbench").glob("*") if p.is_dir()}


def _processes_under(path: Path) -> list[str]:
    return [cmd for pid, cmd in commands().items() if str(path) in cmd and pid != os.getpid()]


def one_error(err: str, fragment: str) -> None:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and fragment in lines[0], err
    assert "Traceback" not in err


@pytest.mark.parametrize("text,fragment,status", PLAN_ROWS, ids=[r[1][:40] for r in PLAN_ROWS])
def test_a_bad_plan_is_one_sentence_and_starts_nothing(text, fragment, status, clean_machine, capsys):
    d, nothing_started = clean_machine
    assert main(plan(text)(d)) == status
    one_error(capsys.readouterr().err, fragment)
    nothing_started()


# -- the rest of what a user can get wrong: (name, set-up → argv, fragment, status) ----

def port_in_use(d: Path) -> list[str]:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    _HELD.append(s)
    return plan(f'workloads = ["static-12b"]\n[[stacks]]\nid = "nginx-fpm"\nport = {s.getsockname()[1]}\n')(d)


_HELD: list[socket.socket] = []


def missing_package(d: Path) -> list[str]:
    from stackbench.servers import base
    from stackbench.stacks.registry import STACKS

    _PATCH.setattr(type(STACKS["nginx-fpm"]), "requirements",
                   lambda self: [base.Requirement("/nonexistent/sbin/nginx", "nginx")])
    return plan(STACK)(d)


def newer_store(d: Path) -> list[str]:
    """Refused, and left byte for byte as it was (not even switched to WAL)."""
    db = sqlite3.connect(d / "r.sqlite")
    db.execute("CREATE TABLE runs (id INTEGER PRIMARY KEY, what TEXT)")
    db.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    db.commit()
    db.close()
    before = (d / "r.sqlite").read_bytes()
    _UNDO.append(lambda: _same(d, before))
    return ["run", str(plan(STACK)(d)[1]), "--db", str(d / "r.sqlite")]


def _same(d: Path, before: bytes) -> None:
    assert (d / "r.sqlite").read_bytes() == before
    assert sorted(p.name for p in d.iterdir() if p.name.startswith("r.sqlite")) == ["r.sqlite"]
    (d / "r.sqlite").unlink()  # not a store of this version: nothing_started() cannot read it


def results_path_unwritable(d: Path) -> list[str]:
    return plan(STACK)(d)[:-1] + ["/proc/stackbench/r.sqlite"]  # /proc takes no new files, even from root


def results_file_read_only(d: Path) -> list[str]:
    if not shutil.which("chattr"):
        pytest.skip("chattr (e2fsprogs) is not installed")
    Store(d / "r.sqlite").close()
    subprocess.run(["chattr", "+i", str(d / "r.sqlite")], check=True)  # immutable: read-only even for root
    _UNDO.append(lambda: subprocess.run(["chattr", "-i", str(d / "r.sqlite")], check=True))
    return plan(STACK)(d)


def workdir_unwritable(d: Path) -> list[str]:
    return plan(STACK)(d) + ["--workdir", "/proc/stackbench-workdir"]


def remote_without_duration(d: Path) -> list[str]:
    return plan("requests = 1000\n" + STACK)(d) + ["--allow-remote-target"]


def lab_already_measuring(d: Path) -> list[str]:
    holder = hold_run_lock(d / "stackbench.lock")
    _UNDO.append(lambda: (holder.kill(), holder.wait()))
    _EXPECT.append(f"pid {holder.pid}: ")
    _EXPECT.append("python -c import sys, time;")  # its command line
    return plan(STACK)(d)


def resume_a_complete_run(d: Path) -> list[str]:
    store = Store(d / "r.sqlite")
    run_id = store.begin_run("p", "p.toml", {"stacks": [{"id": "nginx-fpm"}]}, {}, {})
    store.finish_run(run_id, "complete")
    store.close()
    _RUNS.append(1)
    return ["run", "--resume", str(run_id), "--db", str(d / "r.sqlite")]


def resume_with_a_plan(d: Path) -> list[str]:
    return plan(STACK)(d) + ["--resume", "1"]


def show_a_missing_store(d: Path) -> list[str]:
    return ["show", "--db", str(d / "absent.sqlite")]


def missing_plan_file(d: Path) -> list[str]:
    return ["run", str(d / "absent.toml"), "--db", str(d / "r.sqlite")]


def workdir_closed_to_workers(d: Path) -> list[str]:
    if os.geteuid() != 0:
        pytest.skip("workers drop to www-data only when the lab runs as root")
    closed = d / "private"
    closed.mkdir(mode=0o700)
    return plan(STACK)(d) + ["--workdir", str(closed / "runs")]


_PATCH = pytest.MonkeyPatch()
_UNDO: list[Callable] = []
_EXPECT: list[str] = []
_RUNS: list[int] = []

OTHER_ROWS = [
    ("port in use", port_in_use, "is already in use", 4),
    ("missing package", missing_package, "/nonexistent/sbin/nginx is not installed", 3),
    ("newer store", newer_store, "was written by a newer stackbench", 2),
    ("results path unwritable", results_path_unwritable, "cannot open the results store /proc/stackbench/r.sqlite", 7),
    ("results file read-only", results_file_read_only, "cannot write the results store", 7),
    ("workdir unwritable", workdir_unwritable, "cannot write the run directory in /proc/stackbench-workdir", 7),
    ("workdir closed to the workers", workdir_closed_to_workers, "is not searchable by www-data", 2),
    ("remote target without a duration", remote_without_duration, "--allow-remote-target needs a plan whose loads "
                                                                  "are bounded in time", 2),
    ("a lab already measuring", lab_already_measuring, "another stackbench run (", 2),
    ("resume a complete run", resume_a_complete_run, "run 1 is complete: nothing to resume", 2),
    ("resume with a plan", resume_with_a_plan, "--resume continues a stored run with its own plan", 2),
    ("show a store that is not there", show_a_missing_store, "no results store at", 2),
    ("missing plan file", missing_plan_file, "cannot read plan", 2),
]


@pytest.mark.parametrize("name,setup,fragment,status", OTHER_ROWS, ids=[r[0] for r in OTHER_ROWS])
def test_other_bad_input_is_one_sentence_and_starts_nothing(name, setup, fragment, status, clean_machine, capsys):
    d, nothing_started = clean_machine
    _EXPECT.clear()
    _RUNS.clear()
    try:
        argv = setup(d)
        assert main(argv) == status
        err = capsys.readouterr().err
        one_error(err, fragment)
        for expected in _EXPECT:  # e.g. the lock's holder by pid and command
            assert expected in err
        if _RUNS:  # the stored run is the test's own, untouched
            with sqlite3.connect(d / "r.sqlite") as db:
                assert db.execute("SELECT COUNT(*) FROM runs").fetchone()[0] == 1
            (d / "r.sqlite").unlink()
    finally:
        _PATCH.undo()
        while _UNDO:
            _UNDO.pop()()
        while _HELD:
            _HELD.pop().close()
    nothing_started()


def test_the_lock_names_who_holds_it(workdir):
    """The holder is named by pid and command line, read without touching the lock."""
    path = workdir / "stackbench.lock"
    mine = lock.RunLock(path)
    mine.acquire()
    try:
        said = lock.holder(path)
        assert said.startswith(f"pid {os.getpid()}: ") and "pytest" in said and "\n" not in said
        with pytest.raises(Exception) as e:
            lock.RunLock(path).acquire()
        assert f"another stackbench run ({said}) is measuring on this machine" in e.value.message
    finally:
        mine.release()
    assert lock.holder(path) is None
