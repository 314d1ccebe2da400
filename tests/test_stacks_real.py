"""Real servers from Debian's packages on 127.0.0.1 (integration): each stack starts,
serves every workload correctly, and leaves no process behind."""

from __future__ import annotations

import os
import socket

import pytest

from stackbench.errors import ConfigCheckFailed, PortInUse, ServerExited
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS
from stackbench.upkeep.supervise import live_pids_in_group
from stackbench.workloads.verify import fetch

from conftest import require_stack

pytestmark = pytest.mark.servers


def test_workers_run_unprivileged(workdir):
    """As root, the masters stay root and the workers run as www-data."""
    require_stack("nginx-fpm")
    if os.geteuid() != 0:
        pytest.skip("the lab runs as root to drop workers to www-data")
    with StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir) as inst:
        pids = inst.all_pids()
        assert {os.stat(f"/proc/{p}").st_uid for p in pids} == {0, 33}


def test_allow_override_all_makes_apache_read_htaccess(workdir):
    """With All, a broken .htaccess is an error (500); with None it is never read."""
    require_stack("apache-prefork-modphp")
    for override, expected in (("All", 500), ("None", 200)):
        with StackInstance(STACKS["apache-prefork-modphp"], {"allow_override": override}, cpus=[0],
                           workdir=workdir) as inst:
            (inst.ctx.docroot / ".htaccess").write_text("ThisIsNotADirective on\n")
            status, _, _ = fetch(inst.host, inst.port, "/hello.html")
            assert status == expected, override


def test_config_check_failure_shows_the_checker_message(workdir):
    require_stack("nginx-fpm")
    inst = StackInstance(STACKS["nginx-fpm"], {"nginx_worker_connections": 0}, cpus=[0], workdir=workdir)
    with pytest.raises(ConfigCheckFailed) as e:
        inst.up()
    assert "nginx rejected its configuration" in e.value.message
    assert "worker_connections" in e.value.detail  # nginx's own words
    assert not inst.all_pids() and not list(workdir.iterdir())


def test_port_in_use_is_refused_before_starting(workdir):
    require_stack("apache-prefork-modphp")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        with pytest.raises(PortInUse, match=str(port)):
            StackInstance(STACKS["apache-prefork-modphp"], {}, port=port, workdir=workdir).up()


def test_server_that_exits_during_start_reports_its_log(workdir):
    """PHP-FPM accepts its config but cannot bind its TCP port (taken behind the lab's
    back): it dies while starting, and the error carries FPM's own log line."""
    require_stack("nginx-fpm")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))  # bound, not listening: FPM's bind fails, probes get no answer
        busy = s.getsockname()[1]
        inst = StackInstance(STACKS["nginx-fpm"], {"fpm_listen": "tcp"}, cpus=[0], workdir=workdir,
                             aux_ports={"php-fpm": busy})
        with pytest.raises(ServerExited) as e:
            inst.up()
    assert "php-fpm" in e.value.message
    assert "Address already in use" in e.value.detail
    assert not inst.all_pids()


def test_server_killed_mid_run_is_detected(workdir):
    require_stack("nginx-fpm")
    with StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir) as inst:
        fpm = inst.processes[0]
        os.kill(fpm.pid, 9)
        fpm.popen.wait(5)
        with pytest.raises(ServerExited, match="php-fpm"):
            inst.check_alive()
    assert not live_pids_in_group(fpm.pid)


def test_status_pages_of_nginx_fpm_are_reachable(workdir):
    """The monitor polls nginx's stub_status and PHP-FPM's status page through nginx."""
    from stackbench.monitor.session import status_pages_of
    from stackbench.monitor.status_pages import PARSERS, fetch as fetch_status

    require_stack("nginx-fpm")
    with StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir) as inst:
        pages = status_pages_of(inst.servers)
        assert set(pages) == {"nginx", "php-fpm"}
        for kind, url in pages.values():
            values = PARSERS[kind](fetch_status(url))
            assert values, (kind, url)
        fpm = PARSERS["fpm"](fetch_status(pages["php-fpm"][1]))
        assert fpm["total_processes"] >= 1 and "listen_queue" in fpm
