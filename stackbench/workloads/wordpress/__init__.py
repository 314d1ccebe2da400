"""WordPress (Debian's package) on MariaDB (a child process of the lab): the home page
alone, or a weighted mix of the pages real traffic asks for.

The site is provisioned once per machine and cached (provision.py); each stack serves
the cached tree read-only and its own copy of the database snapshot, in which every
start gives the site's readers (subscribers who log in) passwords of its own
(accounts.py; how a visitor logs in: workloads/login.py).
"""

from __future__ import annotations

from pathlib import Path

from stackbench.servers.base import Context, Requirement, Server
from stackbench.workloads import mariadb
from stackbench.workloads.base import PHP_ERRORS, Check, Url, Workload
from stackbench.workloads.wordpress import accounts, content, provision

REQUIREMENTS = (
    Requirement(str(provision.DEBIAN_TREE / "wp-settings.php"), "wordpress"),
    Requirement(str(provision.DEBIAN_TREE / "wp-content/themes/twentytwentythree/theme.json"),
                "wordpress-theme-twentytwentythree"),
    Requirement("/etc/php/8.2/mods-available/mysqli.ini", "php8.2-mysql"),
    Requirement(provision.PHP_CLI, "php8.2-cli"),
    *mariadb.REQUIREMENTS,
)
# A page is right when it is a 200, names the site, and carries no PHP error (the lab's
# stacks show them: display_errors is on for this workload) and no "Error establishing a
# database connection".
CHECK = Check(contains=(content.TITLE.encode(),), forbids=PHP_ERRORS)


def _docroot() -> Path:
    return provision.ensure().tree


def _services(ctx: Context) -> list[Server]:
    """The database, its start's copy giving every account a password of its own; the
    readers' go to the lab (Context.site_logins: the start's logins file)."""
    passwords = accounts.new_passwords()
    ctx.site_logins.update(accounts.readers(passwords))
    return [mariadb.MariaDb(ctx, {}, snapshot=provision.ensure().datadir, account=provision.DB_USER,
                            database=provision.DB_NAME, init_sql=accounts.init_sql(provision.DB_NAME, passwords))]


def _wordpress(wid: str, description: str, urls: tuple[Url, ...]) -> Workload:
    return Workload(
        wid, description, urls=urls, needs_php=True, requirements=REQUIREMENTS, services=_services,
        docroot=_docroot, front_controller="/index.php", htaccess_rewrites=True,
        php_ini={"display_errors": "On"}, probe="script", login=accounts.LOGIN)


_URLS = content.urls()
# Weights like a small blog's traffic: mostly the home page and posts.
MIX_WEIGHTS = {"home": 4, "post": 3, "category": 2, "search": 1}

WORDPRESS_HOME = _wordpress("wordpress-home", "WordPress home page (Debian's package, MariaDB, 40 posts)",
                            (Url(_URLS["home"], CHECK),))
WORDPRESS_MIX = _wordpress(
    "wordpress-mix", "WordPress: home 4 : post 3 : category 2 : search 1",
    tuple(Url(_URLS[name], CHECK, weight) for name, weight in MIX_WEIGHTS.items()))

# The traffic a site sees, slow requests included: the mix, 1 request in 50 a search whose query
# took a second (the lab's must-use plugin holds the PHP worker: provision.py SLOW_PLUGIN). A
# pool of one process serves nobody else meanwhile; a tuning on this mix chooses for that
# (docs/methods/tuning.md). The mix's shares are kept: searches are 5 in 50, one of them slow.
SLOW_MS = 1000
SLOW_WEIGHTS = {"home": 20, "post": 15, "category": 10, "search": 4}
SLOW_PATH = f"{_URLS['search']}&stackbench_slow={SLOW_MS}"
WORDPRESS_MIX_SLOW = _wordpress(
    "wordpress-mix-slow",
    f"WordPress: home 20 : post 15 : category 10 : search 4 : a search held {SLOW_MS / 1000:g} s 1 "
    "(1 request in 50 slow)",
    tuple(Url(_URLS[name], CHECK, weight) for name, weight in SLOW_WEIGHTS.items())
    + (Url(SLOW_PATH, CHECK, 1, slow_ms=SLOW_MS),))
