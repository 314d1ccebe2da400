"""Apache httpd 2.4 as a child process: `apache2 -f CONF -DFOREGROUND`, with our own
config (never Debian's apache2.conf, which needs apache2ctl's environment; docs/servers.md,
"Apache").

One component for every Apache role: prefork + mod_php, event + PHP-FPM (mod_proxy_fcgi),
worker + mod_fcgid (php-cgi), and the prefork + mod_php back end behind nginx or Varnish.
"""

from __future__ import annotations

import signal
from dataclasses import dataclass
from pathlib import Path

from stackbench.servers.base import Knob, Pool, Requirement, Server, render
from stackbench.upkeep.supervise import Probe, tcp_probe

MODULES = "/usr/lib/apache2/modules"
MODS_AVAILABLE = "/etc/apache2/mods-available"
PHP_CGI = "/usr/bin/php-cgi8.2"

# Prefork defaults are Debian's mpm_prefork.conf.
PREFORK_KNOBS = (
    Knob("start_servers", 5, "Apache prefork StartServers"),
    Knob("min_spare_servers", 5, "Apache prefork MinSpareServers"),
    Knob("max_spare_servers", 10, "Apache prefork MaxSpareServers"),
    Knob("max_request_workers", 150, "Apache MaxRequestWorkers (and ServerLimit)"),
)
# Event/worker defaults are Debian's mpm_event.conf / mpm_worker.conf (identical).
THREADED_KNOBS = (
    Knob("start_servers", 2, "Apache StartServers (child processes at start)"),
    Knob("threads_per_child", 25, "Apache ThreadsPerChild (and ThreadLimit)"),
    Knob("min_spare_threads", 25, "Apache MinSpareThreads"),
    Knob("max_spare_threads", 75, "Apache MaxSpareThreads"),
    Knob("max_request_workers", 150, "Apache MaxRequestWorkers: threads over all children "
                                     "(ServerLimit = MaxRequestWorkers / ThreadsPerChild)"),
)
ALLOW_OVERRIDE = Knob("allow_override", "None", "AllowOverride from / down; All adds a .htaccess to the docroot",
                      ("None", "All"))
MODULE_SET = Knob("apache_modules", "minimal",
                  "minimal: only what the stack needs; debian: also every module Debian's apache2 "
                  "enables on install, with its mods-available/*.conf", ("minimal", "debian"))
MODPHP_OPCACHE = Knob("opcache", True, "PHP opcache on or off (php_admin_flag in Apache's config)")
FCGID_KNOBS = (
    Knob("fcgid_max_processes", 100, "mod_fcgid FcgidMaxProcessesPerClass: php-cgi processes at most"),
    Knob("fcgid_min_processes", 3, "mod_fcgid FcgidMinProcessesPerClass: php-cgi processes kept when idle "
                                   "(spawned lazily all the same: warm up)"),
    Knob("opcache", True, "PHP opcache on or off in every php-cgi (each has its own cache)"),
)



def _prefork(n: int) -> dict[str, int]:
    # all n children forked at start and kept (no spare-server churn under the load)
    return {"start_servers": n, "min_spare_servers": n, "max_spare_servers": n, "max_request_workers": n}


# prefork + mod_php: each child runs PHP and holds one client connection while it is open;
# behind a front (nginx, Varnish) the front holds the clients' connections instead.
PREFORK_POOL = Pool("prefork children", "apache2", _prefork, holds_connections=True, one="prefork child")
PROXIED_PREFORK_POOL = Pool("prefork children", "apache2", _prefork, one="prefork child")
FCGID_POOL = Pool("php-cgi processes", "php-cgi", lambda n: {"fcgid_max_processes": n, "fcgid_min_processes": n},
                  one="php-cgi process")

REQUIREMENTS = [Requirement("apache2", "apache2")]
MOD_PHP = Requirement(f"{MODULES}/libphp8.2.so", "libapache2-mod-php8.2")
MOD_PROXY_FCGI = Requirement(f"{MODULES}/mod_proxy_fcgi.so", "apache2")
MOD_FCGID = [Requirement(f"{MODULES}/mod_fcgid.so", "libapache2-mod-fcgid"),
             Requirement("php-cgi8.2", "php8.2-cgi")]
CONF = "apache/apache2.conf"

# Only what every role needs (docs/servers.md, "Apache", lists the compiled-in modules).
MINIMAL_MODULES = ["authz_core", "authz_host", "mime", "dir", "status"]
# What apache2.postinst enables on a fresh install (enable_default_modules, Debian 12), in
# the alphabetical order Debian's `IncludeOptional mods-enabled/*.load` loads them.
DEBIAN_MODULES = ["access_compat", "alias", "auth_basic", "authn_core", "authn_file", "authz_core",
                  "authz_host", "authz_user", "autoindex", "deflate", "dir", "env", "filter", "mime",
                  "negotiation", "reqtimeout", "setenvif", "status"]
# Their mods-available/*.conf, none of which reads APACHE_* variables (those that do,
# e.g. cgid.conf and ssl.conf, belong to modules outside the default set).
DEBIAN_CONFS = ["alias", "autoindex", "deflate", "dir", "mime", "negotiation", "reqtimeout", "setenvif", "status"]
PHP_MODULES = {"mod_php": ["php"], "fpm": ["proxy", "proxy_fcgi"], "fcgid": ["fcgid"], "none": []}

# What AllowOverride All finds in the docroot. Harmless, but Apache must open and parse it.
HTACCESS = b"# stackbench: present so that AllowOverride All has a file to read\nDirectoryIndex index.html index.php\n"


@dataclass
class Apache(Server):
    mpm: str = "prefork"  # prefork | event | worker
    php: str = "mod_php"  # mod_php | fpm | fcgid | none
    fpm_handler: str = ""  # for php = "fpm": the SetHandler target of mod_proxy_fcgi
    listen_port: int | None = None  # None: the stack's own port; else a back-end port

    def __post_init__(self) -> None:
        self.name = "apache2"
        # SIGTERM: stop now (~0.2 s). SIGWINCH would wait for keep-alive clients.
        self.stop_signal = signal.SIGTERM
        if self.knobs.get("allow_override") == "All":
            self.extra_docroot_files = {".htaccess": HTACCESS}

    @property
    def port(self) -> int:
        return self.listen_port or self.ctx.port

    @property
    def serves_tls(self) -> bool:
        """The stack's TLS is this Apache's when it is the front; behind nginx or hitch
        + Varnish it stays clear text (the front terminates TLS)."""
        return self.ctx.tls is not None and self.listen_port is None

    def modules(self) -> list[tuple[str, str]]:
        """(module name, shared object) in load order."""
        names = list(DEBIAN_MODULES if self.knobs.get("apache_modules") == "debian" else MINIMAL_MODULES)
        names += [m for m in PHP_MODULES[self.php] if m not in names]
        # What the workload asks for: rewrite rules for a front controller, SetEnv for
        # the environment mod_php gives scripts (the database's socket).
        if self.ctx.front_controller and "rewrite" not in names:
            names.append("rewrite")
        if self.php == "mod_php" and self.ctx.php_env and "env" not in names:
            names.append("env")
        if self.serves_tls:
            # mod_http2 under prefork too: it refuses HTTP/2 there (docs/servers.md, "TLS and
            # HTTP/2 in these packages") and ALPN falls back to http/1.1, which the read-back
            # records as the result.
            names += [m for m in ("ssl", "http2") if m not in names]
        return [("php", "libphp8.2.so") if n == "php" else (n, f"mod_{n}.so") for n in names]

    def files(self) -> dict[str, str]:
        k = self.knobs
        threads = k.get("threads_per_child", 25)
        debian = k.get("apache_modules") == "debian"
        return {CONF: render(
            "apache2.conf.j2",
            **{**self.ctx.render_values(), "port": self.port,
               **({} if self.serves_tls else {"tls_port": None})},
            mpm=self.mpm,
            php=self.php,
            modules=self.modules(),
            module_confs=[f"{MODS_AVAILABLE}/{c}.conf" for c in DEBIAN_CONFS] if debian else [],
            start_servers=k.get("start_servers"),
            min_spare_servers=k.get("min_spare_servers"),
            max_spare_servers=k.get("max_spare_servers"),
            max_request_workers=k.get("max_request_workers"),
            threads_per_child=threads,
            server_limit=max(1, -(-k.get("max_request_workers", 150) // max(threads, 1))),
            min_spare_threads=k.get("min_spare_threads"),
            max_spare_threads=k.get("max_spare_threads"),
            keepalive_timeout=k["keepalive_timeout"],
            keepalive_requests=k["keepalive_requests"],
            allow_override=k.get("allow_override", "None"),
            opcache=k.get("opcache", True),
            fpm_handler=self.fpm_handler,
            php_cgi=PHP_CGI,
            fcgid_max_processes=k.get("fcgid_max_processes"),
            fcgid_min_processes=k.get("fcgid_min_processes"),
        )}

    def prepare(self) -> None:
        if self.php == "fcgid":
            # mod_fcgid's process manager runs as the worker user and makes its sockets
            # there; php-cgi (same user) puts opcache's lock file in the other.
            self.give_to_worker("run/fcgid/", "tmp/php-cgi/")

    def check_argv(self) -> list[str]:
        return ["apache2", "-f", str(self.ctx.rundir / CONF), "-t"]

    def start_argv(self) -> list[str]:
        return ["apache2", "-f", str(self.ctx.rundir / CONF), "-DFOREGROUND"]

    def env(self) -> dict[str, str]:
        # A clean environment: nothing of apache2ctl's APACHE_* is needed by our config.
        return {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C"}

    def probe(self) -> Probe:
        return tcp_probe(self.ctx.host, self.port)

    def log_paths(self) -> list[Path]:
        return [self.ctx.rundir / "logs" / "apache-error.log"]

    def status_url(self) -> str:
        return f"http://{self.ctx.host}:{self.port}/stackbench/server-status?auto"
