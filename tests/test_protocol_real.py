"""Protocols through the whole runner on real servers: a plan asking clear
HTTP/1.1, HTTPS and HTTP/2 of nginx + FPM and of Apache prefork is run into a store;
each cell keeps the protocol asked, what the engine spoke and what both sides
negotiated; prefork asked for HTTP/2 answers in HTTP/1.1 and is labelled so (a result);
a full-handshake cell resumed nothing; the table, the export and the protocol verdicts
carry it."""

from __future__ import annotations

import io
import os
import tomllib

import pytest

from stackbench import runner
from stackbench.analysis import protocols, questions
from stackbench.analysis.run import analyze
from stackbench.planning import plan as plan_mod
from stackbench.report import export
from stackbench.report.text import run_report
from stackbench.store import Store

from conftest import require_stack

pytestmark = pytest.mark.servers

PLAN = """
name = "protocols"
duration = "1s"
warmup = "0s"
syscalls = false
concurrency = [4]
keepalive = [true]
workloads = ["static-12b"]
protocol = ["http/1.1", "https", "h2"]
tls = { handshake = ["keep-alive", "full"] }
streams = 4
[[stacks]]
id = "nginx-fpm"
[[stacks]]
id = "apache-prefork-modphp"
knobs = { start_servers = 8, min_spare_servers = 8, max_spare_servers = 16 }
"""


@pytest.fixture(scope="module")
def measured():
    require_stack("nginx-fpm")
    require_stack("apache-prefork-modphp")
    if os.geteuid() != 0:
        pytest.skip("cgroups need root")
    store = Store()
    outcome = runner.run_plan(plan_mod.parse(tomllib.loads(PLAN), "protocols.toml"), store)
    assert outcome.status == "complete", outcome.errors
    cells = store.cells(outcome.run_id)
    return store, outcome.run_id, {(c.stack_id, c.protocol, c.handshake): c for c in cells}


def test_each_cell_keeps_its_protocol_and_what_was_negotiated(measured):
    _, _, cells = measured
    assert set(cells) == {(s, p, h) for s in ("nginx-fpm", "apache-prefork-modphp")
                          for p, h in (("http/1.1", None), ("https", "keep-alive"), ("https", "full"),
                                       ("h2", "keep-alive"))}
    for (stack, protocol, handshake), c in cells.items():
        assert c.status == "ok" and c.engine.requests.completed > 0 and c.engine.requests.failed == 0, c.error
        if protocol == "http/1.1":
            assert (c.engine.tls, c.negotiated, c.handshake) == (None, None, None)
            continue
        expect = "h2" if protocol == "h2" and stack == "nginx-fpm" else "http/1.1"
        assert c.engine.protocol == expect and questions.spoken(c) == expect
        engine_side = c.engine.tls.negotiated[0]
        assert (engine_side.alpn, engine_side.version, engine_side.group) == (expect, "TLSv1.3", "X25519")
        # The stack's own read-back when it was verified agrees with what the engine saw.
        assert (c.negotiated.alpn, c.negotiated.version, c.negotiated.cipher, c.negotiated.group) == \
            (engine_side.alpn, engine_side.version, engine_side.cipher, engine_side.group)
        assert c.engine.tls.handshake.p50_us and c.engine.tls.connect.p50_us
    full = cells[("nginx-fpm", "https", "full")].engine.tls
    assert full.resumed == 0 and full.full >= cells[("nginx-fpm", "https", "full")].engine.requests.completed
    assert cells[("nginx-fpm", "h2", "keep-alive")].streams == 4


def test_prefork_asked_for_http2_is_labelled_as_what_it_spoke(measured):
    store, run_id, cells = measured
    prefork = cells[("apache-prefork-modphp", "h2", "keep-alive")]
    assert questions.spoken_label(prefork) == "h2 → http/1.1"
    assert questions.spoken_label(cells[("nginx-fpm", "h2", "keep-alive")]) == "h2"
    a = analyze(store.run(run_id), store.cells(run_id), store.search_rows(run_id))
    out = io.StringIO()
    run_report.render(a, out)
    assert "h2 → http/1.1" in out.getvalue() and "protocol" in out.getvalue()
    rows = export.cell_rows(a.cells)
    assert {(r["stack_id"], r["protocol"], r["protocol_label"], r["alpn"]) for r in rows if r["protocol"] == "h2"} \
        == {("nginx-fpm", "h2", "h2", "h2"), ("apache-prefork-modphp", "h2", "h2 → http/1.1", "http/1.1")}
    # Each stack's CPU per new connection: its full-handshake cell against its kept-alive one.
    assert sorted((h.protocol, h.handshake, h.runs, h.keepalive_runs) for h in a.handshake_costs) == \
        [("https", "full", 1, 1)] * 2
    assert all(h.cpu_us_per_connection is not None and h.cpu_us_per_connection > 0 for h in a.handshake_costs)
    sides = {v.candidate for v in protocols.decide(store.cells(run_id)).for_metric("throughput")}
    assert sides == {"HTTPS", "HTTP/2", "HTTP/2 → http/1.1"}  # full handshakes have no clear no-keep-alive cell
