"""Logged-in WordPress on real stacks (integration): a reader logs in with this start's
password and gets pages of their own; the password is in the start's 0600 logins file and
nowhere the lab keeps; a wrong one is refused in words. Through each cache in front
(Varnish, nginx's micro-cache) a logged-in page is never served to another visitor, a
logged-in visitor never gets a cached anonymous page, and anonymous visitors — with no
cookie, or WordPress's test cookie alone — are still served from the cache, at once (not
held 40 ms for the client's delayed ACK)."""

from __future__ import annotations

import http.client
import http.cookiejar
import os
import stat
import time
import urllib.request
from dataclasses import replace

import pytest

from stackbench import workloads
from stackbench.errors import VerifyFailed
from stackbench.workloads import login as login_mod
from stackbench.workloads.verify import _visitor, _cookie, _open, verify_login
from test_workloads_real import instance, require_wordpress

pytestmark = pytest.mark.servers
HOME = workloads.get("wordpress-home")
LOGIN = HOME.login


def fetch(inst, jar: http.cookiejar.CookieJar | None = None, cookie: str | None = None) -> tuple[int, dict, bytes]:
    """The home page as one visitor (`jar`: their cookies; `cookie`: a header of its own)."""
    headers = {"Cookie": cookie} if cookie else {}
    return _open(_visitor(jar if jar is not None else http.cookiejar.CookieJar()),
                 urllib.request.Request(inst.url("/"), headers=headers))


def log_in(inst, account) -> http.cookiejar.CookieJar:
    """A visitor's jar after the login form, as a browser posts it (workloads/login.py)."""
    jar = http.cookiejar.CookieJar()
    jar.set_cookie(_cookie(LOGIN.cookie, inst.host))
    status, headers, _ = _open(_visitor(jar), urllib.request.Request(
        inst.url(LOGIN.path), data=LOGIN.body(account), method="POST",
        headers={"Content-Type": "application/x-www-form-urlencoded"}))
    assert status == 302 and headers["location"].endswith("/"), (status, headers)
    assert any(c.name.startswith(LOGIN.session_cookie) for c in jar)
    return jar


def personalised(body: bytes, account) -> bool:
    return LOGIN.personalised in body or account.name.encode() in body


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-prefork-modphp"])
def test_a_reader_logs_in_with_this_starts_password_and_gets_pages_of_their_own(stack_id, workdir):
    require_wordpress()
    with instance(stack_id, HOME, workdir) as inst:
        inst.verify([HOME.id])  # the lab's own check: logged in, personalised, nobody else's
        path = inst.logins_path
        assert path is not None and stat.S_IMODE(os.stat(path).st_mode) == 0o600
        accounts = login_mod.read(path)
        assert [a.user for a in accounts] == ["reader1", "reader2", "reader3", "reader4"]
        assert accounts == inst.accounts(HOME.id)
        assert not any(a.password in text for a in accounts for text in inst.files.values())  # nothing stored
        last = accounts[-1]
        status, _, body = fetch(inst, log_in(inst, last))
        assert status == 200 and LOGIN.personalised in body and last.name.encode() in body
        assert not personalised(fetch(inst)[2], last)
        wrong = replace(last, password=last.password[:-1] + ("x" if last.password[-1] != "x" else "y"))
        with pytest.raises(VerifyFailed, match=f"{stack_id} wordpress-home: reader4 could not log in .*"
                                               "the login page says 'Error: The password you entered for the "
                                               "username reader4 is incorrect"):
            verify_login(inst.host, inst.port, HOME, [wrong], inst.label)
    assert not path.exists()  # gone with the run directory


@pytest.mark.parametrize("stack_id, knobs, passed", [
    ("varnish-apache", {}, "PASS"),
    ("nginx-cache-apache", {"cache_ttl": 60}, "BYPASS"),
])
def test_a_logged_in_page_is_never_served_from_a_cache_to_another_visitor(stack_id, knobs, passed, workdir):
    require_wordpress()
    with instance(stack_id, HOME, workdir, **knobs) as inst:
        inst.verify([HOME.id])
        a, other = inst.accounts(HOME.id)[:2]
        # Anonymous visitors first: the page is cached for them.
        assert [fetch(inst)[1].get("x-cache") for _ in range(2)][-1] == "HIT"
        jar = log_in(inst, a)
        for _ in range(2):  # A's pages are A's, every time: never the cached anonymous page
            status, headers, body = fetch(inst, jar)
            assert status == 200 and personalised(body, a) and headers.get("x-cache") == passed, headers
        status, headers, body = fetch(inst)  # B, anonymous, after A
        assert status == 200 and not personalised(body, a) and headers.get("x-cache") == "HIT"
        # WordPress's test cookie alone is anonymous, and cached; any other cookie is passed.
        assert fetch(inst, cookie=LOGIN.cookie)[1].get("x-cache") == "HIT"
        assert fetch(inst, cookie=f"{LOGIN.cookie}; wp-settings-1=x")[1].get("x-cache") == passed
        # Another reader gets their own page, not A's.
        status, _, body = fetch(inst, log_in(inst, other))
        assert personalised(body, other) and a.name.encode() not in body


@pytest.mark.parametrize("stack_id, knobs", [("varnish-apache", {}), ("nginx-cache-apache", {"cache_ttl": 60})])
def test_a_cached_page_goes_out_at_once_on_a_kept_alive_connection(stack_id, knobs, workdir):
    """nginx served its cached WordPress page (chunked: PHP sends no length) by sendfile
    with TCP_CORK, and the last chunk waited for the client's delayed ACK: 40 ms a page
    from the fourth request of a connection on (docs/servers.md, "nginx")."""
    require_wordpress()
    with instance(stack_id, HOME, workdir, **knobs) as inst:
        inst.verify([HOME.id])
        conn = http.client.HTTPConnection(inst.host, inst.port, timeout=10)
        took = []
        for _ in range(12):
            started = time.monotonic()
            conn.request("GET", "/")
            resp = conn.getresponse()
            body = resp.read()
            took.append(time.monotonic() - started)
            assert resp.status == 200 and resp.getheader("X-Cache") == "HIT" and len(body) > 50_000
        conn.close()
        assert max(took[1:]) < 0.02, [f"{t * 1000:.1f} ms" for t in took]
