"""WordPress's readers get passwords of each start's own (workloads/wordpress/accounts.py):
hashed as WordPress checks them, set in the start's database copy before its first
connection, handed to the lab alone in a 0600 file of the run directory — and never in a
repr, a stored config or the snapshot (the real logins: test_logins_real.py)."""

from __future__ import annotations

import json
import os
import re
import stat
import subprocess

from conftest import require_tool
from stackbench.servers.base import Context
from stackbench.workloads import login as login_mod, mariadb
from stackbench.workloads import wordpress
from stackbench.workloads.wordpress import accounts, content, provision

CHECK_PHP = ('require $argv[1] . "/wp-includes/class-phpass.php"; $h = new PasswordHash(8, true);'
             'echo $h->CheckPassword($argv[2], $argv[3]) ? "yes" : "no", $h->CheckPassword($argv[2] . "x", $argv[3]) ? "yes" : "no";')


def test_the_hash_is_one_wordpress_accepts_for_that_password_alone():
    php = require_tool(provision.PHP_CLI, "php8.2-cli")
    password = accounts.new_passwords()["reader1"]
    hashed = accounts.portable_hash(password)
    assert re.fullmatch(r"\$P\$B[./0-9A-Za-z]{8}[./0-9A-Za-z]{22}", hashed)
    out = subprocess.run([php, "-r", CHECK_PHP, str(provision.DEBIAN_TREE), password, hashed],
                         capture_output=True, text=True, timeout=30)
    assert out.stdout == "yesno", out.stderr
    assert accounts.portable_hash("secret", "abcdefgh") == "$P$BabcdefghhoF/sggXNwaIB66V9Zcjt."  # phpass's own, fixed salt
    assert accounts.portable_hash(password) != hashed  # a new salt each time


def test_each_start_has_passwords_of_its_own_for_the_readers_and_the_admin():
    first, second = accounts.new_passwords(), accounts.new_passwords()
    assert set(first) == {"reader1", "reader2", "reader3", "reader4", "admin"}
    assert all(first[u] != second[u] and re.fullmatch(r"[A-Za-z0-9_-]{32}", first[u]) for u in first)
    assert set(accounts.readers(first)) == {u for u, _ in content.READERS}  # the admin's goes to no one
    sql = accounts.init_sql("wordpress", first)
    assert sql.count("UPDATE `wordpress`.`wp_users` SET user_pass = '$P$B") == 5
    assert not any(p in sql for p in first.values())  # hashes only


def test_the_start_gives_the_database_its_accounts_before_the_tcp_account(tmp_path, monkeypatch):
    monkeypatch.setattr(provision, "ensure", lambda: provision.Site(tmp_path / "site"))  # nothing provisioned here
    ctx = Context("wp", tmp_path, tmp_path / "docroot", 8080, [0], None)
    (db,) = wordpress._services(ctx)
    assert isinstance(db, mariadb.MariaDb) and set(ctx.site_logins) == {u for u, _ in content.READERS}
    db.listen = ("10.0.0.6", 3306)
    lines = db.accounts_sql().splitlines()
    assert lines[0].startswith("ALTER USER 'wordpress'@'localhost'")
    assert [l.split(" SET")[0] for l in lines[1:6]] == ["UPDATE `wordpress`.`wp_users`"] * 5
    assert lines[6].startswith("CREATE USER 'wordpress'@'%'")  # still last but one: a failure leaves no way in
    assert not any(p in repr(ctx) + repr(db) for p in ctx.site_logins.values())


def test_the_logins_file_is_the_labs_alone_and_says_how_to_log_in(tmp_path):
    passwords = accounts.readers(accounts.new_passwords())
    path = login_mod.write(tmp_path, accounts.LOGIN, passwords)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    doc = json.loads(path.read_text())
    assert doc["path"] == "/wp-login.php" and doc["method"] == "POST"
    assert doc["body"] == "log={user}&pwd={password}&wp-submit=Log+In&redirect_to=%2F&testcookie=1"
    assert doc["cookie"] == "wordpress_test_cookie=WP%20Cookie%20check"
    assert doc["session_cookie"] == "wordpress_logged_in_"
    assert [(a["user"], a["name"]) for a in doc["accounts"]] == list(content.READERS)
    (first, *_) = login_mod.read(path)
    assert first.password == passwords["reader1"] and first.password not in repr(first)
    assert accounts.LOGIN.body(first) == f"log=reader1&pwd={first.password}&wp-submit=Log+In&redirect_to=%2F&testcookie=1".encode()


def test_the_snapshot_lets_nobody_in_and_its_readers_are_named_apart_from_the_content():
    installer = provision.INSTALLER.read_text()
    assert "SET user_pass = '*'" in installer  # a hash no password matches, for every account
    words = json.dumps({k: v for k, v in content.generate().items() if k != "readers"}).lower()
    for _, name in content.READERS:
        assert name.split()[-1].lower() not in words  # an anonymous page never shows a reader's name
