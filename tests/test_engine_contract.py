"""The load engine's JSON contract and honesty, against a real nginx (integration):
the document validates against loadgen/schema/result-v1.schema.json, and the engine's
request count equals what nginx itself counted (stub_status)."""

from __future__ import annotations

import json

import jsonschema
import pytest

from stackbench import engine
from stackbench.monitor.status_pages import fetch, parse_nginx
from stackbench.stacks.lifecycle import StackInstance
from stackbench.stacks.registry import STACKS

from conftest import require_stack

pytestmark = pytest.mark.servers


@pytest.fixture(scope="module")
def nginx(request):
    require_stack("nginx-fpm")
    inst = StackInstance(STACKS["nginx-fpm"], {}, cpus=[0])
    inst.up()
    request.addfinalizer(inst.down)
    return inst


def served(inst) -> int:
    """Requests nginx counted, minus the status request itself."""
    return parse_nginx(fetch(f"http://127.0.0.1:{inst.port}/stackbench/nginx-status"))["requests"] - 1


def schema() -> dict:
    return json.loads(engine.SCHEMA_PATH.read_text())


# Every way the engine can drive a closed-loop HTTP/1.1 load: its direct
# epoll loop (the default for such runs), its task loop on epoll (forced here, as it
# runs every other kind of load), and io_uring (tasks).
PATHS = {"direct": ("epoll", None), "tasks": ("epoll", "tasks"), "uring": ("uring", None)}


def on_path(monkeypatch, path: str) -> str:
    io, loop = PATHS[path]
    if loop:
        monkeypatch.setenv("STACKBENCH_LOAD_LOOP", loop)
    return io


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("keepalive", [True, False])
def test_document_validates_and_counts_match_the_server(nginx, keepalive, path, monkeypatch):
    """On every path: the requests the engine counts are the ones nginx counted."""
    io = on_path(monkeypatch, path)
    before = served(nginx)
    doc = engine.run(engine.LoadSpec(url=f"http://127.0.0.1:{nginx.port}/hello.php", connections=8,
                                     duration_s=None, requests=2000, keepalive=keepalive, io=io)).raw
    after = served(nginx) - 1  # the first status request is counted too
    jsonschema.validate(doc, schema())
    assert (doc["io"], doc["event_loop"]) == (io, "direct" if path == "direct" else "tasks")
    assert doc["requests"]["completed"] == 2000 and doc["requests"]["failed"] == 0
    assert after - before == 2000, "the engine and nginx disagree on how many requests were made"
    assert doc["requests"]["ok_2xx"] == 2000 and doc["status_codes"] == {"200": 2000}
    assert doc["bytes"]["body_received"] == 2000 * len(b"Hello World")
    if keepalive:
        assert doc["connections_opened"] == 8
    else:
        assert doc["connections_opened"] == 2000


@pytest.mark.parametrize("path", list(PATHS))
def test_static_bodies_discarded_unread_still_count_as_nginx_counts(nginx, path, monkeypatch):
    """The 150 KB JPEG and the 100 KB page are static files nginx sends with a
    Content-Length: the engine discards their bodies in the kernel and must
    still count every request nginx counted and every body byte."""
    from stackbench.workloads import WORKLOADS

    io = on_path(monkeypatch, path)
    for name in ("static-jpeg-150k", "static-100k"):
        url = WORKLOADS[name].urls[0]
        before = served(nginx)
        doc = engine.run(engine.LoadSpec(url=f"http://127.0.0.1:{nginx.port}{url.path}", connections=8,
                                         duration_s=None, requests=1000, io=io)).raw
        after = served(nginx) - 1
        assert doc["requests"]["completed"] == 1000 and doc["requests"]["failed"] == 0, name
        assert after - before == 1000, f"{name}: the engine and nginx disagree on how many requests were made"
        assert doc["bytes"]["body_received"] == 1000 * url.check.expected_length(), name
        assert doc["config"]["read_bodies"] is False


def test_php_100k_bodies_are_read_whole(nginx):
    """nginx + FPM answers PHP with chunked transfer encoding over HTTP/1.1."""
    doc = engine.run(engine.LoadSpec(url=f"http://127.0.0.1:{nginx.port}/100k.php", connections=4,
                                     duration_s=None, requests=200)).raw
    from stackbench.workloads import WORKLOADS

    assert doc["requests"]["completed"] == 200 and doc["requests"]["failed"] == 0
    assert doc["bytes"]["body_received"] == 200 * WORKLOADS["php-100k"].check.expected_length()


def test_engine_refuses_non_loopback_targets():
    import subprocess

    res = subprocess.run([engine.binary(), "--json", "-n", "1", "http://192.0.2.1/"], capture_output=True, text=True)
    assert res.returncode == 2 and res.stdout == ""
    assert "loopback" in res.stderr or "allow-remote" in res.stderr
