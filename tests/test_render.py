"""Config rendering against golden files (unit). Regenerate after an intended template
change with STACKBENCH_UPDATE_GOLDEN=1 and review the diff like code."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from stackbench.stacks.base import Context
from stackbench.stacks.registry import STACKS

GOLDEN = Path(__file__).parent / "golden"
CASES = {
    "nginx-fpm": {},
    "nginx-fpm-tcp-static-noopcache": {"fpm_listen": "tcp", "pm": "static", "pm_max_children": 16, "opcache": False},
    "apache-prefork-modphp": {},
    "apache-prefork-modphp-allowoverride-all": {"allow_override": "All", "start_servers": 100,
                                                "min_spare_servers": 100, "max_spare_servers": 100,
                                                "max_request_workers": 256},
}


def rendered(case: str) -> dict[str, str]:
    stack_id = "nginx-fpm" if case.startswith("nginx-fpm") else "apache-prefork-modphp"
    stack = STACKS[stack_id]
    ctx = Context(case, Path("/RUN"), Path("/RUN/docroot"), 8080, [0], "www-data", {"php-fpm": 9000})
    servers = stack.servers(ctx, stack.resolve_knobs(CASES[case]))
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

    writers = re.compile(r"^\s*(pid|error_log|PidFile|ErrorLog|DefaultRuntimeDir|Mutex|listen|\w+_temp_path)\b(.*)$",
                         re.M)
    for case in CASES:
        for text in rendered(case).values():
            for _, value in writers.findall(text):
                paths = re.findall(r"(/[\w./-]+)", value)
                assert all(p.startswith("/RUN") for p in paths), (case, value)
