"""Protocols in analysis and reports, on fake engine documents: questions keep
protocols apart, a stack asked HTTP/2 that spoke HTTP/1.1 is labelled so, HTTPS is
compared with HTTP on the same stack, the server's CPU per new connection, and the
table, verdicts and export carry it all."""

from __future__ import annotations

import io
import json
import random

import jsonschema

from stackbench.analysis import protocols, questions
from stackbench.analysis.run import analyze
from stackbench.report import export
from stackbench.report.text import run_report
from cells import stored_cell, stored_run

TLS13 = {"version": "TLSv1.3", "cipher": "TLS13_AES_128_GCM_SHA256", "group": "X25519"}
# (protocol, handshake, keep-alive) → (req/s, server CPU µs per request)
MODES = {("http/1.1", None, True): (20000, 50), ("http/1.1", None, False): (10000, 100),
         ("https", "keep-alive", True): (18000, 60), ("https", "full", False): (4000, 400),
         ("https", "resumed", False): (6000, 250), ("h2", "keep-alive", True): (17000, 65)}


def tls_doc(protocol: str, handshake: str, n: int, spoken: str) -> dict:
    latency = {"count": n, "min": 200, "mean": 900.0, "max": 5000, "percentiles": {"50": 800, "99": 3000}}
    full = n if handshake == "full" else 16 if handshake == "keep-alive" else 1
    return {"protocol": spoken,
            "tls": {"handshakes": {"full": full, "resumed": n - full if handshake == "resumed" else 0},
                    "connect_us": {**latency, "percentiles": {"50": 40, "99": 90}}, "handshake_us": latency,
                    "negotiated": [{"alpn": spoken, **TLS13, "connections": full}]}}


def cells(stacks=("nginx-fpm", "prefork"), reps=5, seed=1):
    rng, out, seq = random.Random(seed), [], 0
    for rep in range(reps):
        for label in stacks:
            for (proto, hs, ka), (rps, cpu) in MODES.items():
                rps *= rng.gauss(1, 0.01)
                completed = int(rps * 2)
                spoken = "http/1.1" if proto != "h2" or label == "prefork" else "h2"
                engine = tls_doc(proto, hs, completed, spoken) if proto != "http/1.1" else {}
                negotiated = {"alpn": spoken, **TLS13} if proto != "http/1.1" else None
                out.append(stored_cell(
                    seq=seq, repetition=rep, stack_label=label, workload="static-12b", concurrency=16, keepalive=ka,
                    protocol=proto, handshake=hs, streams=10 if proto == "h2" else None, negotiated=negotiated,
                    engine=engine, requests_per_s=rps, latency_mean_us=1e6 / rps, latency_p50_us=int(1e6 / rps),
                    latency_p99_us=int(3e6 / rps), requests_failed=0, non_2xx=0, requests_completed=completed,
                    connections_measured=16, connections_without_response=0, mem_rss_peak_bytes=10 << 20,
                    mem_peak_bytes=12 << 20, cpu_total_us=int(completed * cpu), cpu_window_us=2_000_000,
                    engine_cpu_us=1, procs_max=3, threads_max=3))
                seq += 1
    return out


def test_questions_keep_protocols_and_handshakes_apart():
    found = {questions.of(c) for c in cells(reps=1)}
    assert len(found) == len(MODES)  # one question per protocol and connection mode
    modes = sorted((q.mode() for q in found))
    assert modes == ["h2 keep-alive", "https full handshakes", "https keep-alive", "https resumed handshakes",
                     "keep-alive", "no keep-alive"]


def test_h2_answered_in_http_1_1_is_labelled_so():
    by = {(c.stack_label, c.protocol): c for c in cells(reps=1)}
    assert questions.spoken_label(by[("prefork", "h2")]) == "h2 → http/1.1"
    assert questions.spoken_label(by[("nginx-fpm", "h2")]) == "h2"
    assert questions.spoken_label(by[("nginx-fpm", "https")]) == "https"
    assert protocols.side(by[("prefork", "h2")]) == "HTTP/2 → http/1.1"


def test_https_is_compared_with_http_on_the_same_stack_and_connections():
    vs = protocols.decide(cells())
    through = vs.for_metric("throughput")
    pairs = {(v.within, v.question.workload, v.question.keepalive, v.candidate): v for v in through}
    assert set(pairs) == {
        (s, "static-12b", ka, side) for s in ("nginx-fpm", "prefork")
        for ka, side in ((True, "HTTPS"), (False, "HTTPS full handshakes"), (False, "HTTPS resumed handshakes"))
    } | {("nginx-fpm", "static-12b", True, "HTTP/2"), ("prefork", "static-12b", True, "HTTP/2 → http/1.1")}
    full = pairs[("nginx-fpm", "static-12b", False, "HTTPS full handshakes")]
    assert full.baseline == protocols.HTTP and full.kind == "lower"
    assert 0.35 < full.comparison.ratio < 0.45  # 4,000 against 10,000 req/s without keep-alive
    assert vs.self_comparison and vs.axis.name == "protocol"


def test_http2_is_compared_with_https_where_both_were_asked_else_with_http():
    """HTTP/2 against HTTP/1.1 over the same TLS: what HTTP/2 changes, not what
    encryption costs; without HTTPS cells, against clear HTTP/1.1. One Holm family."""
    vs = protocols.decide(cells())
    h2 = next(v for v in vs.for_metric("throughput") if v.candidate == "HTTP/2")
    assert h2.baseline == "HTTPS" and 0.92 < h2.comparison.ratio < 0.97  # 17,000 against 18,000 req/s
    assert vs.family_sizes["throughput"] == len(vs.for_metric("throughput")) == 8
    no_https = [c for c in cells() if c.protocol != "https"]
    h2 = next(v for v in protocols.decide(no_https).for_metric("throughput") if v.candidate == "HTTP/2")
    assert h2.baseline == protocols.HTTP and 0.82 < h2.comparison.ratio < 0.88  # against 20,000


def test_the_server_cost_per_new_connection_is_the_difference_in_cpu_per_request():
    costs = {(h.stack_label, h.handshake): h for h in protocols.handshake_costs(cells())}
    assert set(costs) == {(s, h) for s in ("nginx-fpm", "prefork") for h in ("resumed", "full")}
    full = costs[("nginx-fpm", "full")]
    assert (full.runs, full.keepalive_runs, full.protocol, full.level) == (5, 5, "https", "c=16")
    assert abs(full.cpu_us_per_connection - 340) < 2  # 400 - 60 µs
    assert abs(costs[("nginx-fpm", "resumed")].cpu_us_per_connection - 190) < 2
    assert full.handshake_p50_us == 800 and full.handshake_p99_us == 3000


def test_the_terminal_report_carries_the_protocol_the_verdicts_and_the_cost():
    run = stored_run(plan_checked={"baseline": "nginx-fpm"})
    out = io.StringIO()
    one = cells(reps=1)
    run_report.render(analyze(run, one), out)
    text = out.getvalue()
    head = next(x for x in text.splitlines() if x.startswith("#"))
    assert "protocol" in head and "h2 → http/1.1" in text and " full " in text
    out = io.StringIO()
    run_report.render(analyze(run, cells()), out)
    text = out.getvalue()
    assert "static-12b c=16 https full handshakes: prefork vs nginx-fpm" in text  # like with like
    h2_line = next(x for x in text.splitlines() if x.startswith("static-12b c=16 h2 keep-alive: prefork"))
    assert h2_line.endswith("(prefork: h2 → http/1.1)") or "(prefork: h2 → http/1.1) — and" in h2_line
    assert "what TLS costs each stack" in text
    assert "nginx-fpm · static-12b c=16 no keep-alive: HTTPS full handshakes is 60 % slower than HTTP" in text
    assert "the server's cost per new TLS connection" in text and "340" in text
    assert "h2 → http/1.1 on" in text  # the summary's protocol and mode
    # one question, one group: prefork's "h2 → http/1.1" row right under nginx's "h2" row
    rows = text.split("over repetitions", 1)[1].splitlines()
    h2 = next(i for i, x in enumerate(rows) if " h2 on " in x)
    assert "h2 → http/1.1 on" in rows[h2 + 1], rows[h2:h2 + 3]


def test_export_carries_protocol_negotiated_and_handshakes_and_validates():
    a = analyze(stored_run(plan_checked={"baseline": "nginx-fpm"}), cells())
    doc = export.document(a)
    jsonschema.validate(doc, json.loads(export.SCHEMA_PATH.read_text()))
    row = next(c for c in doc["cells"] if c["stack_label"] == "prefork" and c["protocol"] == "h2")
    assert (row["protocol_label"], row["spoken"], row["alpn"], row["tls_version"], row["tls_group"], row["streams"]) \
        == ("h2 → http/1.1", "http/1.1", "http/1.1", "TLSv1.3", "X25519", 10)
    full = next(c for c in doc["cells"] if c["handshake"] == "full")
    assert full["handshakes_resumed"] == 0 and full["handshakes_full"] == full["requests_completed"]
    assert full["handshake_p99_us"] == 3000
    assert {v["candidate"] for v in doc["protocol_verdicts"]} >= {"HTTPS", "HTTPS full handshakes"}
    assert {h["handshake"] for h in doc["handshake_costs"]} == {"resumed", "full"}
    out = io.StringIO()
    export.write_cells(a.cells, out)
    head = out.getvalue().splitlines()[0].split(",")
    assert {"protocol", "handshake", "alpn", "handshake_p99_us"} <= set(head)


def test_the_html_report_names_protocols_verdicts_and_handshake_costs():
    from stackbench.report.html import page

    a = analyze(stored_run(plan_checked={"baseline": "nginx-fpm"}), cells())
    html = page.render([a], NoStore(), "2026-01-01T00:00:00+00:00")
    assert "What TLS costs each stack" in html and "HTTPS full handshakes is 60 % slower than HTTP" in html
    assert "h2 → http/1.1" in html and "TLSv1.3 TLS13_AES_128_GCM_SHA256 X25519" in html
    assert "The server&#x27;s cost per new TLS connection" in html
    # the charts: each stack's throughput and CPU in every protocol and connection mode
    assert "Throughput by protocol — static-12b at c=16" in html and "CPU per request by protocol" in html


class NoStore:
    """The report's reader with nothing beyond the cells (no samples, processes, calls)."""

    def samples(self, cell_id):
        return []

    def processes(self, cell_id):
        return []

    def syscalls(self, cell_id):
        return {}

    def config_files(self, config_hash):
        return {}


def test_the_answer_names_each_side_s_own_baseline_http_2_against_https():
    """The protocols' block is against HTTP, its HTTP/2 sides against HTTPS where both were
    asked: the answer's sentence names the baseline each verdict had (http2 --quick said
    "no side serves clearly more … than HTTP; HTTP/2: …" of HTTP/2 against HTTPS, and this
    one "HTTP serves 5 % more … than HTTP/2" where HTTPS served them)."""
    from stackbench.analysis import answer
    from stackbench.report.words import answer as answer_words

    said = [answer_words.part(a) for a in answer.of_verdicts(protocols.decide(cells()))]
    h2 = [text for topic, text in said if topic == "nginx-fpm · static-12b c=16 keep-alive" and "HTTP/2" in text]
    assert len(h2) == 1 and h2[0].startswith("HTTPS serves 5 % more requests a second than HTTP/2"), said
    tls = [text for topic, text in said if topic == "nginx-fpm · static-12b c=16 keep-alive" and "HTTP/2" not in text]
    assert len(tls) == 1 and tls[0].startswith("HTTP serves") and "HTTPS" in tls[0], said
