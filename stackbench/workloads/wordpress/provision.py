"""The lab's WordPress, provisioned once and cached: a copy of Debian's WordPress tree
with the lab's own wp-config.php (Debian's reads /etc/wordpress/config-*.php, which the
lab never writes), and a MariaDB datadir snapshot holding the installed site.

The cache key is a hash of everything that decides the bytes served: the installer, the
lab's must-use plugin (slow.php), the generated content, wp-config.php, the .htaccess,
WordPress's and MariaDB's versions.
Provisioning is idempotent (a finished entry is reused; a half-built one is never
visible: it is built in a temporary directory and renamed) and serialised by a lock, so
two labs never build the same entry at once.

Each stack instance then serves the cached tree read-only and starts MariaDB on a
*copy* of the snapshot (workloads/mariadb.py), removed with the run directory.
"""

from __future__ import annotations

import fcntl
import functools
import hashlib
import os
import shutil
import subprocess
import time
from pathlib import Path

from stackbench.upkeep import leftovers
from stackbench.errors import ServerError
from stackbench.upkeep.supervise import die_with_parent, tail_file
from stackbench.workloads import mariadb, php_probe
from stackbench.workloads.wordpress import content

DEBIAN_TREE = Path("/usr/share/wordpress")
PHP_CLI = "php8.2"
INSTALLER = Path(__file__).with_name("install.php")
# The lab's must-use plugin: a page asked with ?stackbench_slow=MS holds its PHP worker MS ms
# (the wordpress-mix-slow workload's slow request). WordPress loads every file of
# wp-content/mu-plugins/ on every request, so it is in the tree every WordPress workload serves.
SLOW_PLUGIN = Path(__file__).with_name("slow.php")
SLOW_PLUGIN_PATH = "wp-content/mu-plugins/stackbench-slow.php"
# Where provisioned entries live: readable by the servers' worker user (not /root).
CACHE_ENV = "STACKBENCH_CACHE"
DEFAULT_CACHE = Path("/var/cache/stackbench")
DB_NAME = "wordpress"
DB_USER = "wordpress"
# The snapshot's password, used while provisioning only: every start of the database
# replaces it with one of its own before it accepts a connection (workloads/mariadb.py).
SNAPSHOT_PASSWORD = "stackbench"
READY_S = 30.0

WP_CONFIG = f"""<?php
// The lab's own wp-config.php (Debian's reads /etc/wordpress/config-*.php, which the lab
// never writes). The database's socket lives in each run directory: every PHP runtime
// gets it in its environment ({mariadb.SOCKET_ENV}, the stacks' php_env) — or, with the
// database on a host of its own, its host:port ({mariadb.HOST_ENV}). The password is the
// database's start's own ({mariadb.PASSWORD_ENV}): none is written here.
define('DB_NAME', '{DB_NAME}');
define('DB_USER', '{DB_USER}');
define('DB_PASSWORD', (string) getenv('{mariadb.PASSWORD_ENV}'));
define('DB_HOST', getenv('{mariadb.HOST_ENV}')
    ?: 'localhost:' . (getenv('{mariadb.SOCKET_ENV}') ?: '/nonexistent/stackbench-db.sock'));
define('DB_CHARSET', 'utf8mb4');
define('DB_COLLATE', '');
// Fixed keys and salts: no visitor logs in, and fixed values keep the bytes fixed.
foreach (['AUTH_KEY', 'SECURE_AUTH_KEY', 'LOGGED_IN_KEY', 'NONCE_KEY',
          'AUTH_SALT', 'SECURE_AUTH_SALT', 'LOGGED_IN_SALT', 'NONCE_SALT'] as $k) {{
    define($k, 'stackbench-' . $k);
}}
// No background job inside a measurement (WP-Cron runs on page views otherwise), no
// update checks, no outgoing HTTP.
define('DISABLE_WP_CRON', true);
define('AUTOMATIC_UPDATER_DISABLED', true);
define('WP_AUTO_UPDATE_CORE', false);
define('WP_HTTP_BLOCK_EXTERNAL', true);
// The address the site is reached at: the stack's port changes from run to run.
if (!empty($_SERVER['HTTP_HOST'])) {{
    define('WP_HOME', 'http://' . $_SERVER['HTTP_HOST']);
    define('WP_SITEURL', 'http://' . $_SERVER['HTTP_HOST']);
}}
$table_prefix = 'wp_';
if (!defined('ABSPATH')) {{
    define('ABSPATH', __DIR__ . '/');
}}
require_once ABSPATH . 'wp-settings.php';
"""

# WordPress's own rules (what Settings → Permalinks writes), read by Apache when
# AllowOverride is All: the real-world case the htaccess argument is about.
HTACCESS = """# BEGIN WordPress
<IfModule mod_rewrite.c>
RewriteEngine On
RewriteRule .* - [E=HTTP_AUTHORIZATION:%{HTTP:Authorization}]
RewriteBase /
RewriteRule ^index\\.php$ - [L]
RewriteCond %{REQUEST_FILENAME} !-f
RewriteCond %{REQUEST_FILENAME} !-d
RewriteRule . /index.php [L]
</IfModule>
# END WordPress
"""


def cache_root() -> Path:
    return Path(os.environ.get(CACHE_ENV) or DEFAULT_CACHE)


def wordpress_version() -> str:
    text = (DEBIAN_TREE / "wp-includes" / "version.php").read_text()
    for line in text.splitlines():
        if line.startswith("$wp_version"):
            return line.split("'")[1]
    return "unknown"


def mariadb_version() -> str:
    out = subprocess.run([mariadb.BINARY, "--version"], capture_output=True, text=True).stdout
    return out.strip()


@functools.cache
def key() -> str:
    h = hashlib.sha256()
    for part in (INSTALLER.read_bytes(), SLOW_PLUGIN.read_bytes(), content.as_json().encode(), WP_CONFIG.encode(), HTACCESS.encode(),
                 php_probe.SCRIPT, mariadb.settings(Path("/D"), Path("/H")).encode(),
                 wordpress_version().encode(), mariadb_version().encode()):
        h.update(hashlib.sha256(part).digest())
    return h.hexdigest()[:16]


class Site:
    """A provisioned entry: the tree to serve and the datadir snapshot to copy."""

    def __init__(self, root: Path):
        self.root = root
        self.tree = root / "tree"
        self.datadir = root / "datadir"


def ensure() -> Site:
    """The cached site, provisioned first if this machine has none for the current key."""
    root = cache_root()
    root.mkdir(parents=True, exist_ok=True)
    root.chmod(0o755)
    entry = root / f"wordpress-{key()}"
    with open(root / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (entry / "done").exists():
            _provision(entry)
    return Site(entry)


def _provision(entry: Path) -> None:
    started = time.monotonic()
    shutil.rmtree(entry, ignore_errors=True)
    # Marked as this lab's until it is renamed into place: a lab killed while
    # provisioning leaves a directory the next lab's sweep removes (leftovers.py).
    work = leftovers.make_dir(f"stackbench-{entry.name}.", entry.parent)
    work.chmod(0o755)
    try:
        site = Site(work)
        _copy_tree(site.tree)
        _install_database(site)
        (work / "done").write_text(f"provisioned in {time.monotonic() - started:.1f} s\n")
        leftovers.disown(work)
        work.rename(entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _copy_tree(tree: Path) -> None:
    """Debian's tree (its symbolic links to Debian's shared libraries kept) with the
    lab's wp-config.php, WordPress's .htaccess, the PHP probe and the lab's must-use plugin."""
    subprocess.run(["cp", "-a", str(DEBIAN_TREE), str(tree)], check=True)
    (tree / "wp-config.php").unlink()
    (tree / "wp-config.php").write_text(WP_CONFIG)
    (tree / ".htaccess").write_text(HTACCESS)
    (tree / php_probe.PROBE_PATH.lstrip("/")).write_bytes(php_probe.SCRIPT)
    plugin = tree / SLOW_PLUGIN_PATH
    plugin.parent.mkdir(exist_ok=True)
    plugin.write_bytes(SLOW_PLUGIN.read_bytes())


def _install_database(site: Site) -> None:
    """mariadb-install-db, then a private mariadbd, the database and its user, and
    WordPress's installer with the generated content; the server is stopped cleanly so
    the datadir is a consistent snapshot."""
    home = site.root / "db"
    home.mkdir()
    (site.root / "logs").mkdir()
    cnf = home / "my.cnf"
    cnf.write_text(mariadb.settings(site.datadir, home))
    log = site.root / "logs" / "mariadb.log"
    log.touch()
    mariadb.chown_to_db(home, log)
    _run([mariadb.INSTALL_DB, f"--defaults-file={cnf}", "--auth-root-authentication-method=socket",
          "--skip-test-db"], "mariadb-install-db")
    # As the database user from the start, with a parent-death signal: a lab killed
    # while provisioning must not leave this mariadbd running (workloads/mariadb.py).
    server = subprocess.Popen(mariadb.as_db_user([mariadb.BINARY, f"--defaults-file={cnf}"]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        socket = home / "mysqld.sock"
        deadline = time.monotonic() + READY_S
        while not socket.exists():
            if server.poll() is not None or time.monotonic() > deadline:
                raise ServerError("MariaDB did not start while provisioning WordPress", detail=tail_file(log, 15))
            time.sleep(0.05)
        mariadb.client(socket, f"CREATE DATABASE {DB_NAME} CHARACTER SET utf8mb4; "
                               f"CREATE USER '{DB_USER}'@'localhost' IDENTIFIED BY '{SNAPSHOT_PASSWORD}'; "
                               f"GRANT ALL ON {DB_NAME}.* TO '{DB_USER}'@'localhost';")
        content_file = site.root / "content.json"
        content_file.write_text(content.as_json())
        _run([PHP_CLI, "-d", "display_errors=stderr", str(INSTALLER), str(site.tree), str(content_file)],
             "WordPress's installer",
             env={**os.environ, mariadb.SOCKET_ENV: str(socket), mariadb.PASSWORD_ENV: SNAPSHOT_PASSWORD})
    finally:
        server.terminate()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
    shutil.rmtree(home)


def _run(argv: list[str], what: str, env: dict | None = None) -> str:
    # die_with_parent: a lab killed with -9 takes the installer along (it was found
    # orphaned, sleeping, after tests/test_leftovers.py killed a provisioning lab).
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=300, preexec_fn=die_with_parent)
    if proc.returncode != 0:
        raise ServerError(f"{what} failed while provisioning WordPress (exit status {proc.returncode})",
                          detail=(proc.stderr or proc.stdout).strip()[-2000:])
    return proc.stdout
