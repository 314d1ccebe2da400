"""A logged-in share with the real engine (engine/logged_in.py), against a small site whose
home page greets its visitor by the login cookie: the anonymous class is never greeted,
every page of the logged-in class is its visitor's own, the two engines' results merge into
the cell's, each class's kept, and the accounts' passwords are in no result."""

from __future__ import annotations

import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl

import pytest

from stackbench.engine import logged_in, process as engine
from stackbench.engine.journey import Journey, Login, Page
from stackbench.engine.process import LoadSpec

PASSWORDS = {"alice": "pw-alice-7", "bob": "pw-bob-9"}


class _Site(BaseHTTPRequestHandler):
    """GET /login sets a test cookie; a POST of user and pwd with it logs in (302 to /,
    USER set); / greets USER, or nobody. Every greeting is kept for the test."""

    protocol_version = "HTTP/1.1"
    greeted: list[str] = []
    lock = threading.Lock()

    def _answer(self, status: str, body: bytes = b"", head: str = "") -> None:
        self.wfile.write(f"HTTP/1.1 {status}\r\n{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)

    def do_GET(self):  # noqa: N802 - http.server's name
        cookie = self.headers.get("Cookie") or ""
        if self.path == "/login":
            return self._answer("200 OK", b"form", "Set-Cookie: test=1; path=/\r\n")
        user = re.search(r"USER=(\w+)", cookie)
        who = user.group(1) if user else "anonymous"
        with self.lock:
            self.greeted.append(who)
        self._answer("200 OK", f"hello {who}".encode())

    def do_POST(self):  # noqa: N802
        form = dict(parse_qsl(self.rfile.read(int(self.headers["Content-Length"])).decode()))
        if "test=1" not in (self.headers.get("Cookie") or "") or PASSWORDS.get(form.get("user", "")) != form.get("pwd"):
            return self._answer("403 Forbidden")
        self._answer("302 Found", head=f"Location: /\r\nSet-Cookie: USER={form['user']}; path=/; HttpOnly\r\n")

    def log_message(self, *args):
        pass


@pytest.fixture()
def site():
    _Site.greeted = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Site)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()


def test_half_the_visitors_log_in_and_every_page_of_theirs_is_their_own(site):
    home = Journey((Page("/"), Page("/")))
    login = Login("/login", form_page="/login",
                  forms=tuple((("user", u), ("pwd", p)) for u, p in PASSWORDS.items()))
    spec = LoadSpec(url=site, connections=4, duration_s=None, requests=5, journey=home,
                    login_journey=Journey(home.steps, login=login), login_share=0.5, page_conns=2)
    result = logged_in.run(engine.run, spec, [])
    # 5 visits a class (-n is each engine's): the anonymous 2 pages each, the logged-in 3
    # (the login's redirect to / and the two pages), all greeted by their account
    assert sorted(set(_Site.greeted)) == ["alice", "anonymous", "bob"]
    assert _Site.greeted.count("anonymous") == 10 and len(_Site.greeted) == 25
    v = result.visits
    assert v is not None and (v.completed, v.failed, v.pages) == (10, 0, 20)
    assert next(p for p in v.per_page if p.login).completed == 5
    assert [(c["host"], c["connections"]) for c in result.raw["clients"]] == [("anonymous", 2), ("logged in", 2)]
    assert result.requests.completed == 10 + 5 * 5  # the logged-in visits: form, post, redirect, 2 pages
    text = json.dumps(result.raw)
    assert not any(p in text for p in PASSWORDS.values())
