"""Knobs change what the real servers do (integration), one test per knob family: the
rendered config is not enough evidence that a server honours a directive."""

from __future__ import annotations

import contextlib
import http.client
import time
from pathlib import Path

import pytest

from stackbench import workloads
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS
from stackbench.stacks.unpackaged import NotPackaged
from stackbench.workloads.verify import fetch

from test_stacks_all import load, require_runnable

pytestmark = pytest.mark.servers

HELLO_PHP = workloads.WORKLOADS["php-hello"]
OPCACHE_PHP = (b"<?php $s = function_exists('opcache_get_status') ? opcache_get_status(false) : false;\n"
               b"echo ($s && $s['opcache_enabled']) ? 'on' : 'off';\n")


def start(stack_id: str, knobs: dict, workdir: Path) -> StackInstance:
    require_runnable(stack_id)
    return StackInstance(STACKS[stack_id], knobs, cpus=[0], workdir=workdir)


def established(port: int) -> int:
    """Established TCP connections whose local end is 127.0.0.1:port (the server side)."""
    count = 0
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        local, _, state = line.split()[1:4]
        if int(local.split(":")[1], 16) == port and state == "01":
            count += 1
    return count


@pytest.mark.parametrize("stack_id", ["h2o-fpm", "apache-event-fpm"])
def test_pm_static_runs_max_children_and_ondemand_none(stack_id, workdir):
    # ondemand: the readiness probe's connection to the socket already makes FPM fork one.
    for pm, children in (("static", {4}), ("ondemand", {0, 1}), ("dynamic", {3})):
        with start(stack_id, {"pm": pm, "pm_max_children": 4, "pm_start_servers": 3,
                              "pm_min_spare_servers": 1, "pm_max_spare_servers": 3}, workdir) as inst:
            fpm = inst.pids()["php-fpm"]
            assert len(fpm) - 1 in children, (pm, fpm)  # the master and its children
            if inst.cgroup:
                assert set(fpm) <= set(inst.cgroup.pids())
            assert not load(inst.port, HELLO_PHP, requests=40)


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-prefork-modphp", "apache-worker-fcgid", "caddy-fpm"])
def test_opcache_knob_turns_opcache_off(stack_id, workdir):
    for opcache in (True, False):
        with start(stack_id, {"opcache": opcache}, workdir) as inst:
            (inst.ctx.docroot / "opcache.php").write_bytes(OPCACHE_PHP)
            status, _, body = fetch(inst.host, inst.port, "/opcache.php", timeout=40)
            assert (status, body) == (200, b"on" if opcache else b"off")


def test_apache_module_set_debian_loads_debians_default_modules(workdir):
    """Debian's alias.conf maps /icons/ (mod_alias is in Debian's set, not in ours)."""
    for modules, expected in (("debian", 200), ("minimal", 404)):
        with start("apache-prefork-modphp", {"apache_modules": modules}, workdir) as inst:
            status, _, _ = fetch(inst.host, inst.port, "/icons/apache_pb.png")
            assert status == expected, modules
            inst.verify([w.id for w in workloads.DOCUMENTS])


@pytest.mark.parametrize("stack_id", [s for s, st in STACKS.items()
                                      if any(k.name == "apache_modules" for k in st.knobs)
                                      and s != "apache-prefork-modphp"])
def test_debian_module_set_works_in_every_apache_role(stack_id, workdir):
    with start(stack_id, {"apache_modules": "debian"}, workdir) as inst:
        inst.verify([w.id for w in workloads.DOCUMENTS])


def wait_for_count(inst: StackInstance, server: str, count: int, deadline_s: float = 3.0) -> int:
    """Apache answers as soon as its parent listens; the children are forked after that."""
    deadline = time.monotonic() + deadline_s
    while len(inst.pids()[server]) != count and time.monotonic() < deadline:
        time.sleep(0.02)
    return len(inst.pids()[server])


def test_apache_process_counts_follow_the_mpm_knobs(workdir):
    with start("apache-prefork-modphp", {"start_servers": 8, "min_spare_servers": 8, "max_spare_servers": 16},
               workdir) as inst:
        assert wait_for_count(inst, "apache2", 1 + 8) == 1 + 8
    with start("apache-event-fpm", {"start_servers": 3, "threads_per_child": 10, "min_spare_threads": 10,
                                    "max_spare_threads": 40, "max_request_workers": 60}, workdir) as inst:
        assert wait_for_count(inst, "apache2", 1 + 3) == 1 + 3
        assert not load(inst.port, HELLO_PHP, requests=40)


@pytest.mark.parametrize("stack_id, knob, upstream", [
    ("nginx-fpm", "fastcgi_keep_conn", "php-fpm"),
    ("nginx-proxy-apache", "proxy_keepalive", "apache"),
])
def test_upstream_keepalive_keeps_connections_to_the_back_end(stack_id, knob, upstream, workdir):
    """With keep-alive on, idle connections to the back end stay open after the requests
    (nginx keeps them); off, every one is closed after its request."""
    for on in (True, False):
        with start(stack_id, {knob: on, "fpm_listen": "tcp"} if stack_id == "nginx-fpm" else {knob: on},
                   workdir) as inst:
            assert ("fastcgi_keep_conn on;" in inst.files["nginx/nginx.conf"]) == (on and stack_id == "nginx-fpm")
            assert not load(inst.port, HELLO_PHP, requests=40, connections=2)
            port = inst.ctx.aux_ports[upstream]
            deadline = time.monotonic() + 2
            while not on and established(port) and time.monotonic() < deadline:
                time.sleep(0.02)
            assert (established(port) > 0) == on, (knob, on)


@pytest.mark.parametrize("stack_id, knobs, path, expected", [
    ("nginx-cache-apache", {"cache_ttl": 60}, "/hello.php", ["MISS", "HIT"]),
    ("nginx-cache-apache", {"cache_ttl": 0}, "/hello.php", ["MISS", "MISS"]),
    ("varnish-apache", {"varnish_mode": "cache"}, "/hello.php", ["MISS", "HIT"]),
    ("varnish-apache", {"varnish_mode": "pass-php"}, "/hello.php", ["PASS", "PASS"]),
    ("varnish-apache", {"varnish_mode": "pass-php"}, "/hello.html", ["MISS", "HIT"]),
    ("varnish-apache", {"varnish_mode": "pass"}, "/hello.html", ["PASS", "PASS"]),
])
def test_caches_say_what_they_did_in_x_cache(stack_id, knobs, path, expected, workdir):
    with start(stack_id, knobs, workdir) as inst:
        seen = []
        for _ in expected:
            status, headers, _ = fetch(inst.host, inst.port, path)
            assert status == 200
            seen.append(headers.get("x-cache"))
        assert seen == expected


def test_keepalive_knobs_on_every_front(workdir):
    """keepalive_requests = 2 closes a connection with the 2nd response (where the front
    supports a limit; its knob help says where not), and keepalive_timeout = 1 closes an
    idle one within ~2 s. All stacks at once, so the idle wait is paid once."""
    knobs = {"keepalive_requests": 2, "keepalive_timeout": 1}
    runnable = [s for s, st in STACKS.items() if not isinstance(st, NotPackaged)]
    with contextlib.ExitStack() as stack:
        idle: dict[str, http.client.HTTPConnection] = {}
        for stack_id in runnable:
            inst = stack.enter_context(start(stack_id, knobs, workdir))
            supported = not next(k for k in STACKS[stack_id].knobs if k.name == "keepalive_requests").help.startswith("ignored")
            conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=5)
            closes = []
            for _ in range(2):
                conn.request("GET", "/hello.html")
                resp = conn.getresponse()
                resp.read()
                closes.append(resp.will_close)
            conn.close()
            assert closes == ([False, True] if supported else [False, False]), stack_id
            conn = http.client.HTTPConnection("127.0.0.1", inst.port, timeout=5)
            conn.request("GET", "/hello.php")
            conn.getresponse().read()
            idle[stack_id] = conn
        time.sleep(2.2)  # lighttpd checks its timeouts once a second
        still_open = []
        for stack_id, conn in idle.items():
            conn.sock.settimeout(0.5)
            try:
                if conn.sock.recv(1) != b"":
                    still_open.append(stack_id)
            except TimeoutError:
                still_open.append(stack_id)
            conn.close()
        assert not still_open, f"idle connections not closed after keepalive_timeout: {still_open}"


def test_varnish_leader_is_the_manager_named_in_its_pidfile(workdir):
    """FIELD-NOTES: under setsid(1) $! is not varnishd. The supervisor's own setsid() does
    not fork, so the process it supervises is the manager that -P names."""
    with start("varnish-apache", {}, workdir) as inst:
        manager = inst.processes[-1]
        assert int((inst.ctx.rundir / "run" / "varnishd.pid").read_text()) == manager.pid
        assert len(manager.group_pids()) == 2  # the manager and its cache child
