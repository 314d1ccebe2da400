"""Check that a running stack serves a workload correctly before it is measured — in
clear text, and over TLS with the chain checked against the run's own CA — and read
back what its TLS port negotiates; for a workload visitors log in to, that a logged-in
page is personalised and never served to anyone else."""

from __future__ import annotations

import html
import http.client
import http.cookiejar
import re
import socket
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from stackbench.errors import VerifyFailed
from stackbench.servers.tls_policy import CLIENT_TLS13_ORDER, cipher_name, client_tls12_order, iana_group
from stackbench.workloads.base import Workload, around
from stackbench.workloads.login import Account

# What is offered per protocol the plans name: "https" is HTTP/1.1 over TLS, "h2" offers
# HTTP/2 first, as a browser (and the engine's --http2) does.
ALPN_OFFERS = {"https": ("http/1.1",), "h2": ("h2", "http/1.1")}


def tls_context(cafile: Path, alpn: tuple[str, ...] = ("http/1.1",)) -> ssl.SSLContext:
    """Trusts the run's CA only, checks the host name (127.0.0.1 against the leaf's IP
    SAN), TLS 1.2 or 1.3, and offers `alpn`."""
    ctx = ssl.create_default_context(cafile=str(cafile))
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.set_alpn_protocols(list(alpn))
    return ctx


def fetch(host: str, port: int, path: str, timeout: float = 10.0,
          cafile: Path | None = None) -> tuple[int, dict[str, str], bytes]:
    """GET `path`; over TLS when `cafile` (the run's CA) is given."""
    if cafile is not None:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(host, port, timeout=timeout,
                                                                       context=tls_context(cafile))
    else:
        conn = http.client.HTTPConnection(host, port, timeout=timeout)
    try:
        conn.request("GET", path)
        resp = conn.getresponse()
        return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    finally:
        conn.close()


def verify(host: str, port: int, workload: Workload, stack_label: str, cafile: Path | None = None) -> None:
    """Every URL of the workload answers as its Check says (over TLS with `cafile`); a
    deliberately slow one (`Url.slow_ms`) no sooner than it holds its worker — a slow request
    that comes back fast measures a mix without one."""
    scheme = "https" if cafile is not None else "http"
    for url in workload.urls:
        where = f"{stack_label} {workload.id} (GET {url.path}{' over https' if cafile else ''})"
        started = time.monotonic()
        try:
            status, headers, body = fetch(host, port, url.path, timeout=10.0 + url.slow_ms / 1000, cafile=cafile)
        except ssl.SSLCertVerificationError as e:
            raise VerifyFailed(f"{where}: the certificate does not verify against the run's CA: "
                               f"{e.verify_message}") from None
        except ssl.SSLError as e:
            raise VerifyFailed(f"{where}: no TLS handshake: {_tls_reason(e)}") from None
        except (OSError, http.client.HTTPException) as e:
            raise VerifyFailed(f"{where}: no valid {scheme.upper()} response: {e}") from None
        took_s = time.monotonic() - started
        problem = url.check.problem(status, headers, body)
        if problem:
            raise VerifyFailed(f"{where}: {problem[0]}", detail=problem[1])
        if took_s < url.slow_ms / 1000:
            raise VerifyFailed(f"{where}: answered in {took_s:.2f} s, but this request is to hold its PHP worker "
                               f"{url.slow_ms / 1000:g} s: the page did not go through the lab's slow-request plugin")


def read_back(host: str, port: int, cafile: Path, stack_label: str) -> dict[str, dict]:
    """What the TLS port negotiates per protocol ("https", "h2"): ALPN and version from a
    handshake of Python's (chain checked), the cipher and the key exchange group from
    `openssl s_client -brief` offering the suites in the lab's client's order
    (tls_policy.CLIENT_TLS13_ORDER: Python 3.11's ssl can neither order TLS 1.3 suites nor
    name the group), one each — what the engine will negotiate, since every front
    follows the client's order."""
    found = {}
    for protocol, alpn in ALPN_OFFERS.items():
        try:
            with socket.create_connection((host, port), timeout=10) as raw:
                with tls_context(cafile, alpn).wrap_socket(raw, server_hostname=host) as tls:
                    cipher = tls.cipher()
                    chosen, version = tls.selected_alpn_protocol(), tls.version()
                    python_cipher = cipher_name(cipher[0]) if cipher else None
        except ssl.SSLCertVerificationError as e:
            raise VerifyFailed(f"{stack_label}: the TLS port's certificate does not verify against the run's CA: "
                               f"{e.verify_message}") from None
        except ssl.SSLError as e:
            raise VerifyFailed(f"{stack_label}: no TLS handshake on {host}:{port} offering "
                               f"{', '.join(alpn)}: {_tls_reason(e)}") from None
        except OSError as e:
            raise VerifyFailed(f"{stack_label}: no TLS handshake on {host}:{port} offering "
                               f"{', '.join(alpn)}: {e}") from None
        suite, group = _openssl_read_back(host, port, cafile, alpn)
        found[protocol] = {"alpn": chosen, "version": version,
                           "cipher": cipher_name(suite) if suite else python_cipher, "group": group}
    return found


def _tls_reason(e: ssl.SSLError) -> str:
    """OpenSSL's reason in words; a clear-text answer on a TLS port is said as such."""
    if e.reason == "WRONG_VERSION_NUMBER":
        return "the port answered without TLS (clear text on the TLS port?)"
    return (e.reason or str(e)).replace("_", " ").lower()


_TEMP_KEY = re.compile(r"^(?:Server|Peer) Temp Key: (?:ECDH, )?([A-Za-z0-9_-]+)", re.M)
_SUITE = re.compile(r"^Ciphersuite: (\S+)", re.M)


def _openssl_read_back(host: str, port: int, cafile: Path, alpn: tuple[str, ...]) -> tuple[str | None, str | None]:
    """The cipher suite and the key exchange group, as `openssl s_client -brief` prints
    them ("Ciphersuite: TLS_AES_128_GCM_SHA256"; "Server Temp Key: X25519, 253 bits" /
    "ECDH, prime256v1, 256 bits"), offering the lab's client's order; None for what it
    does not say."""
    res = subprocess.run(["openssl", "s_client", "-connect", f"{host}:{port}", "-brief", "-CAfile", str(cafile),
                          "-verify_return_error", "-alpn", ",".join(alpn),
                          "-ciphersuites", ":".join(CLIENT_TLS13_ORDER), "-cipher", ":".join(client_tls12_order())],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         timeout=15, env={"PATH": "/usr/bin:/bin", "LANG": "C"})
    out = res.stdout.decode(errors="replace")
    suite, group = _SUITE.search(out), _TEMP_KEY.search(out)
    return (suite.group(1) if suite else None), (iana_group(group.group(1)) if group else None)


# -- a visitor who logs in -----------------------------------------------------------------
class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """A login's answer is a redirect that carries its cookies: read it, do not follow it."""

    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None


def _visitor(jar: http.cookiejar.CookieJar) -> urllib.request.OpenerDirector:
    """A client with a cookie jar (Set-Cookie kept with its path and expiry, sent back
    where it applies, as a browser does), no proxy from the environment, no redirects."""
    return urllib.request.build_opener(urllib.request.ProxyHandler({}), urllib.request.HTTPCookieProcessor(jar),
                                       _NoRedirect())


def _open(opener: urllib.request.OpenerDirector, request: urllib.request.Request,
          timeout: float = 30.0) -> tuple[int, dict[str, str], bytes]:
    try:
        with opener.open(request, timeout=timeout) as resp:
            return resp.status, {k.lower(): v for k, v in resp.getheaders()}, resp.read()
    except urllib.error.HTTPError as e:  # a redirect not followed, a 4xx, a 5xx: an answer all the same
        with e:
            return e.code, {k.lower(): v for k, v in e.headers.items()}, e.read()


def _login_error(body: bytes) -> str:
    """What WordPress's login page says went wrong (its #login_error box), in one line."""
    m = re.search(rb'id="login_error"[^>]*>(.*?)</div>', body, re.S)
    text = re.sub(r"<[^>]+>", "", (m.group(1) if m else body[:300]).decode(errors="replace"))
    return " ".join(html.unescape(text).split())[:200]


def verify_login(host: str, port: int, workload: Workload, accounts: list[Account], stack_label: str) -> None:
    """A visitor who logs in gets pages of their own, and nobody else gets them: an
    anonymous visitor's home page shows no account's name and no admin bar; the first
    account logs in (the form POSTed with the test cookie, as workloads/login.py says) and
    its home page is personalised; then an anonymous visitor's is still not — a cache in
    front that keyed pages without the cookies would fail here, before any measurement."""
    login = workload.login
    assert login is not None
    where = f"{stack_label} {workload.id}"
    if not accounts:
        raise VerifyFailed(f"{where}: the start has no accounts to log in with (its database made none)")
    base = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    names = [a.name.encode() for a in accounts]

    def anonymous(when: str) -> None:
        status, _, body = _open(_visitor(http.cookiejar.CookieJar()), urllib.request.Request(base + "/"))
        shown = [n.decode() for n in (login.personalised, *names) if n in body]
        if status == 200 and shown:
            raise VerifyFailed(f"{where}: an anonymous visitor's home page {when} shows {shown[0]!r}: a page "
                               "personalised for a logged-in visitor was served to someone else",
                               detail=around(body, shown[0].encode()))

    anonymous("before anyone logged in")
    account = accounts[0]
    jar = http.cookiejar.CookieJar()
    visitor = _visitor(jar)
    jar.set_cookie(_cookie(login.cookie, host))
    try:
        status, _, body = _open(visitor, urllib.request.Request(
            base + login.path, data=login.body(account), method="POST",
            headers={"Content-Type": "application/x-www-form-urlencoded"}))
        session = [c.name for c in jar if c.name.startswith(login.session_cookie)]
        if not session:
            said = f": the login page says {_login_error(body)!r}" if status == 200 else ""
            raise VerifyFailed(f"{where}: {account.user} could not log in (POST {login.path} answered {status} "
                               f"without a {login.session_cookie}* cookie){said}",
                               detail=None if said else body[:300].decode(errors="replace"))
        status, _, body = _open(visitor, urllib.request.Request(base + "/"))
    except (OSError, http.client.HTTPException) as e:
        raise VerifyFailed(f"{where}: no valid HTTP answer while {account.user} logged in: {e}") from None
    if status != 200 or (login.personalised not in body and account.name.encode() not in body):
        raise VerifyFailed(f"{where}: the home page {account.user} gets once logged in is not theirs (status "
                           f"{status}, neither the admin bar nor {account.name!r} on it): a cache in front answered "
                           "from pages it stored for other visitors?", detail=body[:300].decode(errors="replace"))
    anonymous(f"after {account.user} logged in")


def _cookie(pair: str, host: str) -> http.cookiejar.Cookie:
    """A cookie a page of the site would have set ("name=value", for the whole site)."""
    name, _, value = pair.partition("=")
    return http.cookiejar.Cookie(0, name, value, None, False, host, False, False, "/", True, False, None, False,
                                 None, None, {})
