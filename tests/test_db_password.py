"""WordPress's database gets a password of its own on every start (workloads/mariadb.py):
set on the copied snapshot before the first connection is accepted, handed to PHP in its
environment, and kept out of everything the lab keeps or shows — the store's configs, the
terminal, the logs. The fixed password in this repository is refused on TCP (here and,
through the agent, in test_remote_server.py)."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import require_stack
from stackbench.servers.base import Context
from stackbench.workloads import mariadb
from stackbench.workloads.wordpress import provision

ROOT = Path(__file__).resolve().parent.parent
# How PHP's mysqli (WordPress's client) answers a login: "connected" or the error's number.
MYSQLI_LOGIN = ("mysqli_report(MYSQLI_REPORT_OFF);"
                "$m = @mysqli_connect($argv[1], $argv[2], getenv('DB_PASSWORD_TRIED'), $argv[3], (int) $argv[4]);"
                "echo $m ? 'connected' : mysqli_connect_errno();")


def _database(tmp_path: Path, **kw) -> mariadb.MariaDb:
    ctx = Context("wp", tmp_path, tmp_path / "docroot", 8080, [0], None)
    return mariadb.MariaDb(ctx, {}, account=provision.DB_USER, database=provision.DB_NAME, **kw)


# -- without servers -----------------------------------------------------------------------
def test_each_start_has_a_password_of_its_own_for_php_and_in_no_config(tmp_path):
    first, second = _database(tmp_path), _database(tmp_path)
    assert first.password != second.password and len(first.password) >= 32
    assert re.fullmatch(r"[A-Za-z0-9_-]+", first.password)  # nothing to quote in SQL or a config
    assert first.ctx.php_env[mariadb.PASSWORD_ENV] == first.password
    cnf = first.files()[mariadb.CONF]
    assert first.password not in cnf and f"init-file = {tmp_path / mariadb.INIT_FILE}" in cnf
    assert first.password not in repr(first)


def test_the_account_reachable_over_tcp_is_made_last_and_only_on_a_host_of_its_own(tmp_path):
    local = _database(tmp_path)
    assert local.accounts_sql() == f"ALTER USER 'wordpress'@'localhost' IDENTIFIED BY '{local.password}';\n"
    there = _database(tmp_path, listen=("10.0.0.6", 3306))
    lines = there.accounts_sql().splitlines()
    # mariadbd stops at an init file's first failing statement: a failed ALTER must not
    # leave the TCP account made with anything but this start's password.
    assert [line.split(" IDENTIFIED")[0] for line in lines[:2]] == [
        "ALTER USER 'wordpress'@'localhost'", "CREATE USER 'wordpress'@'%'"]
    assert all(there.password in line for line in lines[:2]) and lines[2] == "GRANT ALL ON `wordpress`.* TO 'wordpress'@'%';"
    assert "init-file" not in mariadb.settings(Path("/D"), Path("/H"))  # the snapshot's provisioning


def test_the_configs_the_lab_keeps_show_a_stand_in(tmp_path):
    db = _database(tmp_path)
    pool = f'env[{mariadb.PASSWORD_ENV}] = "{db.password}"\nenv[{mariadb.SOCKET_ENV}] = "{db.socket}"\n'
    kept = mariadb.redacted({"php/fpm.conf": pool, mariadb.CONF: db.files()[mariadb.CONF]}, db.ctx.php_env)
    assert db.password not in str(kept) and mariadb.PASSWORD_STAND_IN in kept["php/fpm.conf"]
    assert str(db.socket) in kept["php/fpm.conf"] and kept[mariadb.CONF] == db.files()[mariadb.CONF]
    assert mariadb.redacted({"a": "b"}, {}) == {"a": "b"}  # no database, nothing to hide


def test_wordpress_reads_the_password_from_its_environment_only():
    assert f"getenv('{mariadb.PASSWORD_ENV}')" in provision.WP_CONFIG
    assert provision.SNAPSHOT_PASSWORD not in provision.WP_CONFIG.replace("stackbench-", "")


# -- real servers --------------------------------------------------------------------------
def login(host: str, port: int, password: str) -> tuple[str, str]:
    """(MariaDB's client, PHP's mysqli) logging in as WordPress's account over TCP: each
    "connected" or how it was refused."""
    env = {**os.environ, "MYSQL_PWD": password, "DB_PASSWORD_TRIED": password}
    client = subprocess.run([mariadb.CLIENT, "--no-defaults", "-h", host, "-P", str(port), "-u", provision.DB_USER,
                             "-N", "-B", "-e", "SELECT 1"], capture_output=True, text=True, env=env, timeout=30)
    php = subprocess.run([provision.PHP_CLI, "-r", MYSQLI_LOGIN, host, provision.DB_USER, provision.DB_NAME, str(port)],
                         capture_output=True, text=True, env=env, timeout=30)
    return ("connected" if client.returncode == 0 and client.stdout.strip() == "1" else client.stderr.strip(),
            php.stdout.strip())


def refused(answer: tuple[str, str]) -> bool:
    client, php = answer
    return "Access denied" in client and php == "1045"  # ER_ACCESS_DENIED_ERROR: the account is there


@pytest.mark.servers
def test_on_tcp_the_fixed_password_is_refused_and_the_starts_own_let_in(tmp_path):
    """The database as hosts/database.py starts it (here on loopback): the snapshot's
    fixed password is refused by MariaDB's client and by mysqli, the start's own accepted;
    the init file that set it is gone once the server answers; the next start has another."""
    from stackbench.hosts.database import DatabaseInstance
    from stackbench.workloads import get as workload
    from test_workloads_real import require_wordpress

    require_wordpress()
    first = DatabaseInstance([workload("wordpress-home")], "127.0.0.1", [0], None)
    second = DatabaseInstance([workload("wordpress-home")], "127.0.0.1", [0], None)
    try:
        host, port = first.up().rsplit(":", 1)
        assert refused(login(host, int(port), provision.SNAPSHOT_PASSWORD))
        assert login(host, int(port), first.password) == ("connected", "connected")
        assert not (first.rundir / mariadb.INIT_FILE).exists()
        assert first.password not in (first.rundir / "logs" / "mariadb.log").read_text()
        host2, port2 = second.up().rsplit(":", 1)
        assert second.password != first.password and refused(login(host2, int(port2), first.password))
    finally:
        first.down()
        second.down()


@pytest.mark.servers
def test_a_run_keeps_the_password_out_of_the_store_the_terminal_and_the_logs(workdir):
    """The real path, with the database beside the stack: WordPress served through the
    start's password (the run's cell is ok), which is nowhere in the store file, the
    run's output, `show`, or the logs; the stored config has the stand-in."""
    from test_workloads_real import require_wordpress

    require_stack("nginx-fpm")
    require_wordpress()
    plan, db = workdir / "plan.toml", workdir / "r.sqlite"
    plan.write_text('name = "wp-password"\nduration = "1s"\nwarmup = "0s"\nconcurrency = [2]\n'
                    'keepalive = [true]\nworkloads = ["wordpress-home"]\nsyscalls = false\n'
                    '[[stacks]]\nid = "nginx-fpm"\n')
    done = subprocess.run([sys.executable, "-m", "stackbench", "run", str(plan), "--db", str(db), "--workdir",
                           str(workdir), "--keep-rundir"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    kept = Path(re.search(r"kept nginx-fpm's run directory: (\S+)", done.stdout + done.stderr).group(1))
    rendered = "\n".join(p.read_text() for p in kept.rglob("*.conf"))
    password = re.search(rf'env\[{mariadb.PASSWORD_ENV}\] = "([^"]+)"', rendered).group(1)
    assert len(password) >= 32 and password != provision.SNAPSHOT_PASSWORD
    shown = subprocess.run([sys.executable, "-m", "stackbench", "show", "--db", str(db)], cwd=ROOT,
                           capture_output=True, text=True, timeout=60)
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT status FROM cells").fetchone()[0] == "ok"
        (configs,) = conn.execute("SELECT files_json FROM configs").fetchone()
    assert mariadb.PASSWORD_STAND_IN in configs
    stored = b"".join(p.read_bytes() for p in workdir.glob("r.sqlite*"))
    for what, text in [("the store", stored), ("run's output", (done.stdout + done.stderr).encode()),
                       ("show", (shown.stdout + shown.stderr).encode()),
                       *[(str(p), p.read_bytes()) for p in (kept / "logs").iterdir()]]:
        assert password.encode() not in text, f"the password is in {what}"
    assert not (kept / mariadb.INIT_FILE).exists()


@pytest.mark.servers
def test_a_password_the_database_did_not_take_fails_its_start_in_words(workdir):
    """mariadbd runs an init file up to its first failing statement and starts all the
    same; the lab's probe reads that from its log and fails the start, saying so, without
    the password."""
    from stackbench.errors import ServerError
    from stackbench.stacks.lifecycle import spawn_server, write_files
    from stackbench.upkeep.supervise import wait_ready
    from test_workloads_real import require_wordpress

    require_wordpress()
    rundir = workdir / "run"
    (rundir / "logs").mkdir(parents=True)
    ctx = Context("wp", rundir, rundir / "docroot", 8080, [0], None)
    db = mariadb.MariaDb(ctx, {}, snapshot=provision.ensure().datadir, account="nobody", database=provision.DB_NAME)
    write_files(db, rundir)
    db.prepare()
    proc = spawn_server(db, rundir, [0], None)
    try:
        with pytest.raises(ServerError, match="did not set this start's password") as e:
            wait_ready(proc, db.probe(), 30)
    finally:
        proc.stop()
    assert "ALTER USER failed for 'nobody'@'localhost'" in e.value.detail and db.password not in e.value.detail
    assert not (rundir / mariadb.INIT_FILE).exists()
