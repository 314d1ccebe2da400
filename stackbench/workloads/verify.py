"""Check that a running stack serves a workload correctly before it is measured — in
clear text, and over TLS with the chain checked against the run's own CA — and read
back what its TLS port negotiates."""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import subprocess
import time
from pathlib import Path

from stackbench.errors import VerifyFailed
from stackbench.servers.tls_policy import CLIENT_TLS13_ORDER, cipher_name, client_tls12_order, iana_group
from stackbench.workloads.base import Workload

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
