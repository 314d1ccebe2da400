"""Config rendering against golden files (unit). Regenerate after an intended template
change with STACKBENCH_UPDATE_GOLDEN=1 and review the diff like code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stackbench.servers.base import Context
from stackbench.stacks.registry import STACKS

GOLDEN = Path(__file__).parent / "golden"
# case -> (stack, knobs). Each stack with its defaults, plus the knobs that change a template.
CASES = {
    "nginx-fpm": ("nginx-fpm", {}),
    "nginx-fpm-tcp-static-noopcache": ("nginx-fpm", {"fpm_listen": "tcp", "pm": "static", "pm_max_children": 16,
                                                     "opcache": False}),
    "nginx-fpm-keepconn": ("nginx-fpm", {"fastcgi_keep_conn": True, "upstream_keepalive": 4,
                                         "pm_max_children": 16}),
    "apache-prefork-modphp": ("apache-prefork-modphp", {}),
    "apache-prefork-modphp-allowoverride-all": ("apache-prefork-modphp", {
        "allow_override": "All", "start_servers": 100, "min_spare_servers": 100, "max_spare_servers": 100,
        "max_request_workers": 256}),
    "apache-prefork-modphp-debian-noopcache": ("apache-prefork-modphp", {"apache_modules": "debian",
                                                                         "opcache": False}),
    "apache-event-fpm": ("apache-event-fpm", {}),
    "apache-event-fpm-tcp": ("apache-event-fpm", {"fpm_listen": "tcp", "threads_per_child": 16,
                                                  "max_request_workers": 100}),
    "apache-worker-fcgid": ("apache-worker-fcgid", {}),
    "apache-worker-fcgid-noopcache": ("apache-worker-fcgid", {"opcache": False, "fcgid_max_processes": 8}),
    "nginx-proxy-apache": ("nginx-proxy-apache", {}),
    "nginx-proxy-apache-keepalive": ("nginx-proxy-apache", {"proxy_keepalive": True}),
    "nginx-cache-apache": ("nginx-cache-apache", {}),
    "varnish-apache": ("varnish-apache", {}),
    "varnish-apache-pass-php": ("varnish-apache", {"varnish_mode": "pass-php"}),
    "lighttpd-fpm": ("lighttpd-fpm", {}),
    "lighttpd-fpm-tcp": ("lighttpd-fpm", {"fpm_listen": "tcp", "keepalive_requests": 1}),
    "h2o-fpm": ("h2o-fpm", {}),
    "h2o-fpm-tcp": ("h2o-fpm", {"fpm_listen": "tcp", "h2o_threads": 4}),
    "caddy-fpm": ("caddy-fpm", {}),
    "caddy-fpm-tcp": ("caddy-fpm", {"fpm_listen": "tcp"}),
    "jetty-fpm": ("jetty-fpm", {}),
    "jetty-fpm-sized": ("jetty-fpm", {"jetty_min_threads": 4, "jetty_max_threads": 64, "jetty_acceptors": 0,
                                      "jvm_heap_min_mib": 64, "jvm_heap_max_mib": 256, "pm": "static",
                                      "pm_max_children": 16, "keepalive_timeout": 10}),
}


def context(case: str, cpus: list[int] | None = None) -> Context:
    return Context(case, Path("/RUN"), Path("/RUN/docroot"), 8080, cpus or [0], "www-data",
                   {"php-fpm": 9000, "apache": 8081})


def rendered(case: str) -> dict[str, str]:
    stack_id, knobs = CASES[case]
    stack = STACKS[stack_id]
    servers = stack.servers(context(case), stack.resolve_knobs(knobs))
    files = {}
    for s in servers:
        files.update(s.files())
    return files


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case):
    for rel, text in rendered(case).items():
        golden = GOLDEN / case / Path(rel).name
        if os.environ.get("STACKBENCH_UPDATE_GOLDEN"):
            golden.parent.mkdir(parents=True, exist_ok=True)
            golden.write_text(text)
        assert golden.exists(), f"no golden file {golden}: run with STACKBENCH_UPDATE_GOLDEN=1"
        assert text == golden.read_text(), f"{rel} differs from {golden}"


def test_knobs_reach_the_config():
    nginx_fpm = rendered("nginx-fpm-tcp-static-noopcache")
    fpm = nginx_fpm["php-fpm/php-fpm.conf"]
    assert "listen = 127.0.0.1:9000" in fpm and "pm = static" in fpm and "pm.max_children = 16" in fpm
    assert "php_admin_value[opcache.enable] = 0" in fpm
    assert "fastcgi_pass 127.0.0.1:9000;" in nginx_fpm["nginx/nginx.conf"]
    assert "fastcgi_pass unix:/RUN/run/php-fpm.sock;" in rendered("nginx-fpm")["nginx/nginx.conf"]
    apache = rendered("apache-prefork-modphp-allowoverride-all")["apache/apache2.conf"]
    directive = "    AllowOverride All\n"
    assert apache.count(directive) == 2 and "StartServers 100" in apache
    assert directive not in rendered("apache-prefork-modphp")["apache/apache2.conf"]


def test_nothing_outside_the_run_directory_is_written():
    """Every path a rendered config writes to (logs, pids, sockets, temp) is under /RUN."""
    import re

    writers = re.compile(r"^\s*(pid|error_log|PidFile|ErrorLog|DefaultRuntimeDir|Mutex|listen|\w+_temp_path"
                         r"|proxy_cache_path|FcgidIPCDir|FcgidProcessTableFile|server\.errorlog"
                         r"|server\.pid-file|server\.upload-dirs|error-log|temp-buffer-path|output file"
                         r"|-Djava\.io\.tmpdir|-XX:ErrorFile)\b(.*)$",
                         re.M)
    for case in CASES:
        for text in rendered(case).values():
            for _, value in writers.findall(text):
                paths = re.findall(r"(/[\w./-]+)", value)
                assert all(p.startswith("/RUN") for p in paths), (case, value)


def test_every_stack_that_can_run_has_a_golden_case():
    from stackbench.stacks.unpackaged import NotPackaged

    covered = {stack_id for stack_id, _ in CASES.values()}
    assert covered == {s for s, stack in STACKS.items() if not isinstance(stack, NotPackaged)}


def test_new_knobs_reach_the_config():
    event = rendered("apache-event-fpm-tcp")["apache/apache2.conf"]
    assert 'SetHandler "proxy:fcgi://127.0.0.1:9000"' in event and "LoadModule mpm_event_module" in event
    assert "ThreadsPerChild 16" in event and "ServerLimit 7" in event  # ceil(100 / 16)
    assert 'SetHandler "proxy:unix:/RUN/run/php-fpm.sock|fcgi://localhost"' in rendered("apache-event-fpm")[
        "apache/apache2.conf"]
    fcgid = rendered("apache-worker-fcgid-noopcache")["apache/apache2.conf"]
    assert "FcgidMaxProcessesPerClass 8" in fcgid and "-d opcache.enable=0" in fcgid
    assert "LoadModule mpm_worker_module" in fcgid and "opcache.lockfile_path=/RUN/tmp/php-cgi" in fcgid
    debian = rendered("apache-prefork-modphp-debian-noopcache")["apache/apache2.conf"]
    assert "LoadModule negotiation_module" in debian and "Include /etc/apache2/mods-available/mime.conf" in debian
    assert "php_admin_flag opcache.enable Off" in debian
    assert "negotiation_module" not in rendered("apache-prefork-modphp")["apache/apache2.conf"]
    keep = rendered("nginx-fpm-keepconn")["nginx/nginx.conf"]
    assert "fastcgi_keep_conn on;" in keep and "keepalive 4;" in keep and "fastcgi_pass backend;" in keep
    assert "fastcgi_keep_conn" not in rendered("nginx-fpm")["nginx/nginx.conf"]
    proxy = rendered("nginx-proxy-apache-keepalive")
    assert "proxy_http_version 1.1;" in proxy["nginx/nginx.conf"] and "keepalive 8;" in proxy["nginx/nginx.conf"]
    assert "Listen 127.0.0.1:8081" in proxy["apache/apache2.conf"]
    assert "proxy_pass http://127.0.0.1:8081;" in rendered("nginx-proxy-apache")["nginx/nginx.conf"]
    assert "proxy_cache_valid 200 1s;" in rendered("nginx-cache-apache")["nginx/nginx.conf"]
    assert "return (pass);" in rendered("varnish-apache-pass-php")["varnish/default.vcl"]
    assert '"port" => 9000' in rendered("lighttpd-fpm-tcp")["lighttpd/lighttpd.conf"]
    assert "num-threads: 4" in rendered("h2o-fpm-tcp")["h2o/h2o.conf"]
    assert "reverse_proxy @php 127.0.0.1:9000" in rendered("caddy-fpm-tcp")["caddy/Caddyfile"]


def test_keepalive_requests_means_the_same_on_every_front():
    """N requests per connection everywhere: Apache and lighttpd count only the requests
    after the first, so they are given N - 1 (and keep-alive off for N = 1)."""
    assert "MaxKeepAliveRequests 999" in rendered("apache-prefork-modphp")["apache/apache2.conf"]
    assert "keepalive_requests 1000;" in rendered("nginx-fpm")["nginx/nginx.conf"]
    assert "server.max-keep-alive-requests = 999" in rendered("lighttpd-fpm")["lighttpd/lighttpd.conf"]
    assert "server.max-keep-alive-requests = 0" in rendered("lighttpd-fpm-tcp")["lighttpd/lighttpd.conf"]


def test_varnish_writes_only_in_the_run_directory():
    from stackbench.servers.varnish import Varnish

    stack = STACKS["varnish-apache"]
    varnish = [s for s in stack.servers(context("v"), stack.resolve_knobs({})) if isinstance(s, Varnish)][0]
    for argv in (varnish.start_argv(), varnish.check_argv()):
        for flag in ("-n", "-P"):
            if flag in argv:
                assert argv[argv.index(flag) + 1].startswith("/RUN/")
    assert "-T" in varnish.start_argv() and "none" in varnish.start_argv()


@pytest.mark.parametrize("stack_id, knobs, pool_knob", [
    ("nginx-fpm", {"fastcgi_keep_conn": True, "nginx_workers": 3, "upstream_keepalive": 2, "pm_max_children": 6},
     "pm_max_children"),
    ("nginx-proxy-apache", {"proxy_keepalive": True, "nginx_workers": 1, "upstream_keepalive": 8,
                            "max_request_workers": 8}, "max_request_workers"),
])
def test_kept_alive_upstream_connections_that_could_hold_every_back_end_process_are_refused(
        stack_id, knobs, pool_knob):
    from stackbench.errors import UsageError

    stack = STACKS[stack_id]
    with pytest.raises(UsageError, match=pool_knob):
        stack.servers(context("x"), stack.resolve_knobs(knobs))
    # nginx_workers = 0: one worker per core, known only when the cores are: checked at start.
    auto = {**knobs, "nginx_workers": 0}
    resolved = stack.resolve_knobs(auto)
    with pytest.raises(UsageError, match="stall"):
        stack.servers(context("x", cpus=list(range(8))), resolved)
    # Off: no connection is kept, nothing to check.
    off = {k: (False if k in ("fastcgi_keep_conn", "proxy_keepalive") else v) for k, v in knobs.items()}
    stack.servers(context("x"), stack.resolve_knobs(off))


def test_nginx_fpm_plan_with_explicit_workers_is_refused_when_loaded():
    from stackbench.errors import UsageError

    with pytest.raises(UsageError, match="pm_max_children"):
        STACKS["nginx-fpm"].resolve_knobs({"fastcgi_keep_conn": True, "nginx_workers": 4, "upstream_keepalive": 2,
                                           "pm_max_children": 8})


def test_a_stacks_ports_are_distinct_even_when_the_kernel_hands_one_out_twice(monkeypatch):
    """A port is free when asked and bound only when the servers start: the kernel may
    give the same one again (Apache once got its HTTPS port on its clear one)."""
    from stackbench.upkeep import ports

    handed = iter([8080, 9000, 8081, 8443])  # the clear port, then two already the stack's, then a new one
    monkeypatch.setattr(ports, "free_port", lambda host="127.0.0.1": next(handed))
    ctx = context("nginx-fpm")
    assert ctx.aux_port("tls") == 8443 and ctx.aux_port("tls") == 8443  # asked again: the same


def test_jetty_knobs_reach_its_xml_and_its_jvm_options():
    files = rendered("jetty-fpm-sized")
    xml, args = files["jetty/jetty.xml"], files["jetty/java.args"].splitlines()
    assert '<Set name="minThreads" type="int">4</Set>' in xml and '<Set name="maxThreads" type="int">64</Set>' in xml
    assert '<Arg name="acceptors" type="int">0</Arg>' in xml and '<Set name="idleTimeout" type="long">10000</Set>' in xml
    assert "-Xms64m" in args and "-Xmx256m" in args
    assert not any(a.startswith(("-Xms", "-Xmx")) for a in rendered("jetty-fpm")["jetty/java.args"].splitlines())
    # PHP over TCP, and never more FastCGI connections than FPM has children to hold them.
    assert "<Arg>proxyTo</Arg><Arg>http://127.0.0.1:9000</Arg>" in xml
    assert "<Arg>maxConnections</Arg><Arg>16</Arg>" in xml and "listen = 127.0.0.1:9000" in files["php-fpm/php-fpm.conf"]
    assert xml.count('<Set name="acceptQueueSize" type="int">511</Set>') == 1  # nginx's and Apache's backlog
    assert "TryFilesFilter" not in xml


def test_jetty_configs_are_well_formed_xml_and_run_from_the_run_directory():
    import xml.etree.ElementTree as ElementTree

    from stackbench.servers import jetty

    stack = STACKS["jetty-fpm"]
    ctx = context("jetty-fpm")
    ctx.front_controller = "/index.php"
    server = stack.servers(ctx, stack.resolve_knobs({}))[1]
    files = server.files()
    for rel in (jetty.CONF, jetty.CHECK, jetty.RUN):
        assert ElementTree.fromstring(files[rel].split("\n", 2)[2]).tag == "Configure", rel  # after the DOCTYPE
    assert "<Arg>files</Arg><Arg>$path /index.php</Arg>" in files[jetty.CONF]
    assert '<Call name="stop"/>' in files[jetty.CHECK] and '<Call name="join"/>' in files[jetty.RUN]
    # As the worker user, its parent-death signal set again after the switch; the check
    # and the start differ only in what XmlConfiguration does with the server.
    check, start = server.check_argv(), server.start_argv()
    assert check[:8] == ["setpriv", "--reuid", "www-data", "--regid", "www-data", "--init-groups", "--pdeathsig",
                         "TERM"]
    assert check[-1] == "/RUN/jetty/check.xml" and start == check[:-1] + ["/RUN/jetty/run.xml"]
    assert "@/RUN/jetty/java.args" in start and "-XX:-UsePerfData" in files[jetty.ARGS].splitlines()


def test_jetty_reaches_fpm_over_tcp_only_and_its_knobs_agree_with_each_other():
    from stackbench.errors import UsageError

    stack = STACKS["jetty-fpm"]
    assert stack.resolve_knobs({})["fpm_listen"] == "tcp"
    with pytest.raises(UsageError, match="TCP only"):
        stack.resolve_knobs({"fpm_listen": "unix"})
    for knobs, fragment in (({"jetty_min_threads": 50, "jetty_max_threads": 20}, "above jetty_max_threads"),
                            ({"jetty_min_threads": 0, "jetty_max_threads": 0}, "at least 1"),
                            ({"jvm_heap_min_mib": 512, "jvm_heap_max_mib": 256}, "above jvm_heap_max_mib")):
        with pytest.raises(UsageError, match=fragment):
            stack.resolve_knobs(knobs)
    stack.resolve_knobs({"jvm_heap_min_mib": 512})  # no maximum given: the JVM's own, which the dry start meets


def test_a_failed_jetty_dry_start_shows_the_exceptions_not_their_frames():
    stack = STACKS["jetty-fpm"]
    server = stack.servers(context("jetty-fpm"), stack.resolve_knobs({}))[1]
    output = ("2026-11-28 00:23:14.695:WARN:oejx.XmlConfiguration:main: Config error at <Call name=\"start\"/>\n"
              "\tat org.eclipse.jetty.xml.XmlConfiguration.main(XmlConfiguration.java:1911)\n"
              'Exception in thread "main" java.lang.reflect.InvocationTargetException\n'
              "\tat java.base/jdk.internal.reflect.NativeMethodAccessorImpl.invoke0(Native Method)\n"
              "Caused by: java.lang.IllegalStateException: Insufficient configured threads: required=2 < max=2\n"
              "\t... 14 more\n")
    assert server.check_detail(output) == (
        'Exception in thread "main" java.lang.reflect.InvocationTargetException\n'
        "Caused by: java.lang.IllegalStateException: Insufficient configured threads: required=2 < max=2")
