"""The verifier's logged-in check (workloads/verify.py's verify_login) says in one sentence
what went wrong: a login refused, a logged-in page that is not the visitor's, a visitor's
page served to someone else. Against a small HTTP server of the test's own that plays
each fault (the real stacks pass it: test_logins_real.py)."""

from __future__ import annotations

import http.server
import threading
from urllib.parse import parse_qs

import pytest

from stackbench.errors import VerifyFailed
from stackbench.workloads import wordpress
from stackbench.workloads.login import Account
from stackbench.workloads.verify import verify_login

READER = Account("reader1", "Reader Quince", "right-password")
ANONYMOUS = b"<html><body>stackbench WordPress</body></html>"
PERSONAL = b'<html><body><div id="wpadminbar">Howdy, Reader Quince</div>stackbench WordPress</body></html>'


def serve(fault: str):
    """A site like WordPress (the login form, its test cookie, the logged-in cookie), with
    one `fault`: "none", "refuses" (every password wrong), "leaks" (a cache that keeps the
    last page it served for everyone), "ignores" (no page is ever personalised)."""
    last = [ANONYMOUS]

    class Site(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def _answer(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_POST(self):
            form = parse_qs(self.rfile.read(int(self.headers["Content-Length"])).decode())
            cookies = self.headers.get("Cookie", "")
            if "wordpress_test_cookie=WP%20Cookie%20check" not in cookies:
                return self._answer(200, b'<div id="login_error">Cookies are blocked</div>')
            if fault == "refuses" or form["pwd"] != [READER.password]:
                return self._answer(200, b'<div id="login_error"><strong>Error:</strong> The password you entered '
                                         b'for the username <strong>reader1</strong> is incorrect.</div>')
            self._answer(302, b"", {"Location": "/", "Set-Cookie": "wordpress_logged_in_abc=reader1%7Cx; path=/; HttpOnly"})

        def do_GET(self):
            mine = "wordpress_logged_in_abc=" in self.headers.get("Cookie", "")
            page = PERSONAL if mine and fault != "ignores" else ANONYMOUS
            if fault == "leaks":
                last[0] = page if mine else last[0]
                page = last[0]
            self._answer(200, page, {"Content-Type": "text/html"})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Site)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


@pytest.mark.parametrize("fault, said", [
    ("refuses", "wp wordpress-home: reader1 could not log in (POST /wp-login.php answered 200 without a wordpress_logged_in_* "
                "cookie): the login page says 'Error: The password you entered for the username reader1 is incorrect.'"),
    ("ignores", "wp wordpress-home: the home page reader1 gets once logged in is not theirs (status 200, neither "
                "the admin bar nor 'Reader Quince' on it)"),
    ("leaks", "wp wordpress-home: an anonymous visitor's home page after reader1 logged in shows 'id=\"wpadminbar\"': "
              "a page personalised for a logged-in visitor was served to someone else"),
])
def test_each_fault_is_one_sentence(fault, said):
    server = serve(fault)
    try:
        with pytest.raises(VerifyFailed) as e:
            verify_login("127.0.0.1", server.server_address[1], wordpress.WORDPRESS_HOME, [READER], "wp")
        assert said in e.value.message
    finally:
        server.shutdown()


def test_a_site_that_keeps_pages_apart_passes_and_one_without_accounts_does_not():
    server = serve("none")
    try:
        verify_login("127.0.0.1", server.server_address[1], wordpress.WORDPRESS_HOME, [READER], "wp")
        with pytest.raises(VerifyFailed, match="the start has no accounts to log in with"):
            verify_login("127.0.0.1", server.server_address[1], wordpress.WORDPRESS_HOME, [], "wp")
    finally:
        server.shutdown()
