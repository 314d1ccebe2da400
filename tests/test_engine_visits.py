"""Visits in the engine (`--journey`), from the lab's side: a Journey as LoadSpec asks for
it, the engine's visits parsed once into EngineResult.visits, several engines' visits
merged exactly (counts added, durations and page loads by histogram buckets), and the
cookie jar's acceptance — a page that counts per-session visits answers 1, 2, 3 to one
visitor and 1 to a new one — against a small session server here and against real PHP
(`php -S`, its session extension, marked `servers`)."""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import require_tool, wait_until
from stackbench.engine import merge, process as engine
from stackbench.engine.journey import Choice, Exit, Journey, Login, Page, Think
from stackbench.engine.process import LoadSpec
from stackbench.engine.result import Caveat, EngineResult
from stackbench.report.words.caveats import sentence

COUNTER = Journey(steps=(Page("/count"), Page("/count"), Page("/count")))


class _Sessions(BaseHTTPRequestHandler):
    """/count answers the session's count (a new session: SID set, 1); the answers are
    kept by session for the tests. Anything else: 200, assets."""

    protocol_version = "HTTP/1.1"
    answers: dict[int, list[int]] = {}
    lock = threading.Lock()

    def do_GET(self):  # noqa: N802 - http.server's name
        head = b""
        if self.path == "/count":
            sid_text = re.search(r"SID=(\d+)", self.headers.get("Cookie") or "")
            with self.lock:
                sid = int(sid_text.group(1)) if sid_text and int(sid_text.group(1)) in self.answers else None
                if sid is None:
                    sid = len(self.answers) + 1
                    self.answers[sid] = []
                    head = f"Set-Cookie: SID={sid}; path=/; HttpOnly\r\n".encode()
                self.answers[sid].append(len(self.answers[sid]) + 1)
                body = str(self.answers[sid][-1]).encode()
        else:
            body = b"ok"
        # One write: head and body apart would meet the client's delayed ACK (40 ms).
        self.wfile.write(b"HTTP/1.1 200 OK\r\n" + head + b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def log_message(self, *args):
        pass


@pytest.fixture()
def sessions():
    _Sessions.answers = {}
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Sessions)
    # A short poll: shutdown() waits for one (0.5 s by default, after every test).
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def _visits(url: str, journey: Journey, visitors: int, visits: int, histogram: bool = False) -> EngineResult:
    return engine.run(LoadSpec(url=url, connections=visitors, duration_s=None, requests=visits, journey=journey,
                               page_conns=4, histogram=histogram))


def test_a_journey_is_the_json_the_engine_reads():
    journey = Journey(steps=(Page("/", assets=("/a.css",), name="home"),
                             Choice((Page("/?p=1", weight=3), Exit(weight=1)), think=Think.fixed(500))),
                      think=Think.exponential(3000),
                      login=Login("/wp-login.php", form=(("log", "alice"), ("pwd", "s3cret")), form_page="/wp-login.php"),
                      headers=(("User-Agent", "stackbench"),))
    argv = LoadSpec(url="http://127.0.0.1:8080", connections=10, journey=journey, page_conns=6).argv("stackbench-load")
    text = argv[argv.index("--journey") + 1]
    assert argv[argv.index("--page-conns") + 1] == "6"
    assert text == (
        '{"steps":[{"page":"/","assets":["/a.css"],"name":"home"},{"choice":[{"page":"/?p=1","weight":3},'
        '{"exit":true,"weight":1}],"think":{"kind":"fixed","ms":500}}],"cache_assets":true,'
        '"think":{"kind":"exponential","mean_ms":3000},"login":{"path":"/wp-login.php","follow_redirect":true,'
        '"form":{"log":"alice","pwd":"s3cret"},"form_page":"/wp-login.php"},"headers":{"User-Agent":"stackbench"}}')
    accounts = Login("/l", forms=((("log", "a"), ("pwd", "1")), (("log", "b"), ("pwd", "2"))))
    assert accounts.as_json()["forms"] == [{"log": "a", "pwd": "1"}, {"log": "b", "pwd": "2"}]


def test_one_visitor_counts_one_two_three_and_a_new_one_starts_at_one(sessions):
    result = _visits(sessions, COUNTER, visitors=1, visits=2)
    assert _Sessions.answers == {1: [1, 2, 3], 2: [1, 2, 3]}
    v = result.visits
    assert v is not None and result.pages is not None
    assert (v.completed, v.failed, v.in_flight_at_end, v.pages, v.requests) == (2, 0, 0, 6, 6)
    assert (v.pages_per_visit, v.requests_per_visit, v.due, v.not_started) == (3.0, 3.0, None, None)
    assert v.duration.p50_us is not None and v.duration.p50_us > 0
    assert [(p.name, p.login, p.completed) for p in v.per_page] == [("/count", False, 6)]
    assert result.count_ended, "-n counts visits"
    assert (result.requests.completed, result.pages.completed) == (6, 6)


def test_visitors_at_once_keep_their_own_sessions(sessions):
    journey = Journey(steps=(Page("/count", assets=("/a.css", "/b.js"), name="first"), Page("/count"), Page("/count")))
    result = _visits(sessions, journey, visitors=4, visits=8)
    assert len(_Sessions.answers) == 8 and all(a == [1, 2, 3] for a in _Sessions.answers.values())
    assert result.visits is not None and result.visits.requests_per_visit == 5.0


def test_visits_merge_exactly_across_engines(sessions):
    journey = Journey(steps=(Page("/count", assets=("/a.css",), name="first"),
                             Choice((Page("/count"), Exit())), Page("/other")))
    docs = [_visits(sessions, journey, visitors=2, visits=n, histogram=True).raw for n in (30, 10)]
    merged = merge.merge(docs, [{"host": "local #1"}, {"host": "local #2"}])
    v, parts = merged["visits"], [d["visits"] for d in docs]
    for key in ("completed", "failed", "in_flight_at_end", "pages", "requests"):
        assert v[key] == sum(p[key] for p in parts), key
    assert v["completed"] == 40 and v["pages_per_visit"] == pytest.approx(v["pages"] / 40)
    assert v["per_s"] == pytest.approx(sum(p["per_s"] for p in parts))
    assert v["due"] is None, "closed loop"
    # Durations and page loads: the buckets added, the engine's percentile rule over them.
    duration = merged["visit_duration_us"]
    buckets: dict[int, int] = {}
    for d in docs:
        for value, count in d["visit_duration_us"]["histogram"]:
            buckets[value] = buckets.get(value, 0) + count
    assert duration["histogram"] == sorted(buckets.items()) and duration["count"] == 40
    assert duration["percentiles"]["99"] == merge.percentile(sorted(buckets.items()), 99.0, duration["max"])
    assert duration["histogram_max_us"] == 3_600_000_000
    rows = {r["name"]: r for r in merged["visit_pages"]}
    assert set(rows) == {"first", "/count", "/other"}
    for name, row in rows.items():
        same = [next(r for r in d["visit_pages"] if r["name"] == name) for d in docs]
        assert row["completed"] == sum(r["completed"] for r in same)
        assert row["load_us"]["count"] == sum(r["load_us"]["count"] for r in same)
    # Per URL by method and path; the typed result reads the merged document.
    assert {(r.get("method"), r["path"]) for r in merged["per_url"]} == {("GET", "/count"), ("GET", "/a.css"),
                                                                         ("GET", "/other")}
    typed = EngineResult.from_doc(merged)
    assert typed.visits is not None and typed.visits.completed == 40
    assert {p.name: p.completed for p in typed.visits.per_page} == {n: r["completed"] for n, r in rows.items()}


def test_results_without_visits_merge_and_read_as_before(sessions):
    doc = engine.run(LoadSpec(url=sessions + "/count", connections=2, duration_s=None, requests=20, histogram=True)).raw
    merged = merge.merge([doc, doc], [{"host": "a"}, {"host": "b"}])
    assert merged["visits"] is None and merged["visit_duration_us"] is None and merged["visit_pages"] == []
    old = {k: v for k, v in doc.items() if k not in ("visits", "visit_duration_us", "visit_pages")}
    assert EngineResult.from_doc(old).visits is None, "an older engine's document"


def test_an_open_loop_of_visits_says_so_in_its_caveat():
    caveat = Caveat("rate_not_reached", {"sent_per_s": 8.0, "rate": 20.0, "connections": 2, "due": 20,
                                         "not_sent": 12, "of": "visits"})
    words = sentence(caveat)
    assert words.startswith("only 8.0 of the 20 visits/s asked for began: all 2 visitors were busy")
    assert "12 due visits never began" in words
    plain = Caveat("rate_not_reached", {"sent_per_s": 800, "rate": 1000, "connections": 8, "due": 2000, "not_sent": 400})
    assert "requests/s asked for were sent" in sentence(plain)


# -- the acceptance against real PHP -------------------------------------------------------
COUNT_PHP = """<?php
session_start();
$_SESSION['n'] = ($_SESSION['n'] ?? 0) + 1;
file_put_contents(__DIR__ . '/answers.log', session_id() . ' ' . $_SESSION['n'] . "\\n", FILE_APPEND | LOCK_EX);
echo $_SESSION['n'];
"""


@pytest.mark.servers
def test_a_php_session_counter_answers_one_two_three_to_each_visitor():
    php = require_tool("php", "php8.2-cli")
    with tempfile.TemporaryDirectory(prefix="stackbench-visits-") as tmp:
        root = Path(tmp)
        (root / "count.php").write_text(COUNT_PHP)
        (root / "sessions").mkdir()
        with subprocess.Popen([php, "-n", "-d", "extension=session", "-d", f"session.save_path={root / 'sessions'}",
                               "-S", "127.0.0.1:0", "-t", str(root)], stdout=subprocess.DEVNULL,
                              stderr=subprocess.PIPE, text=True) as server:
            try:
                port = _listening_port(server)
                journey = Journey(steps=(Page("/count.php"),) * 3)
                result = _visits(f"http://127.0.0.1:{port}", journey, visitors=1, visits=3)
            finally:
                server.terminate()
                server.wait(timeout=10)
        answers: dict[str, list[int]] = {}
        for line in (root / "answers.log").read_text().split("\n"):
            if line:
                sid, n = line.split()
                answers.setdefault(sid, []).append(int(n))
    assert list(answers.values()) == [[1, 2, 3]] * 3, answers
    assert result.visits is not None and result.visits.completed == 3


def _listening_port(server: subprocess.Popen) -> int:
    """The port `php -S 127.0.0.1:0` chose, from its first line on stderr."""
    found: list[int] = []
    assert server.stderr is not None

    def read() -> None:
        for line in server.stderr:  # type: ignore[union-attr]
            m = re.search(r"127\.0\.0\.1:(\d+)", line)
            if m:
                found.append(int(m.group(1)))
                return

    threading.Thread(target=read, daemon=True).start()
    assert wait_until(lambda: found, 10), "php -S did not say where it listens"
    time.sleep(0.05)
    return found[0]
