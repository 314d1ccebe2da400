"""The run's CA and leaf (servers/certificates.py), made with the openssl CLI: what they
say, who may read the keys, and that a client trusting the CA alone accepts the leaf for
127.0.0.1 and localhost — and one trusting another CA does not (unit: no server of the
lab's, a TLS socket of Python's own on loopback)."""

from __future__ import annotations

import http.server
import os
import pwd
import ssl
import subprocess
import threading
from pathlib import Path

import pytest

from stackbench.errors import VerifyFailed
from stackbench.servers import certificates
from stackbench.workloads import verify


def _text(path: Path) -> str:
    return subprocess.run(["openssl", "x509", "-in", str(path), "-noout", "-text"], capture_output=True,
                          text=True, check=True).stdout


@pytest.fixture(scope="module", params=certificates.KINDS)
def certs(request, tmp_path_factory) -> certificates.Certificates:
    old = os.umask(0)  # the keys' modes must not depend on the lab's umask
    try:
        return certificates.make(tmp_path_factory.mktemp(request.param) / "tls", request.param)
    finally:
        os.umask(old)


def test_private_keys_are_0600_and_the_rest_is_readable(certs):
    assert certs.directory.stat().st_mode & 0o777 == 0o711
    for path in certs.private_files():
        assert path.stat().st_mode & 0o777 == 0o600, path
    for path in (certs.ca, certs.leaf):
        assert path.stat().st_mode & 0o777 == 0o644, path
    # openssl made no file of its own (a serial file, a CSR) beside them.
    assert sorted(p.name for p in certs.directory.iterdir()) == [
        "ca.key", "ca.pem", "leaf-bundle.pem", "leaf.key", "leaf.pem", "openssl.cnf"]


def test_the_leaf_is_signed_by_the_ca_for_loopback_and_is_no_ca(certs):
    res = subprocess.run(["openssl", "verify", "-CAfile", str(certs.ca), "-purpose", "sslserver", str(certs.leaf)],
                         capture_output=True, text=True)
    assert res.returncode == 0, res.stdout + res.stderr
    leaf, ca = _text(certs.leaf), _text(certs.ca)
    assert "IP Address:127.0.0.1, DNS:localhost" in leaf
    assert "CA:FALSE" in leaf and "TLS Web Server Authentication" in leaf
    assert "CA:TRUE" in ca and "Certificate Sign" in ca


def test_key_types_follow_the_kind(certs):
    for path in (certs.ca, certs.leaf):
        text = _text(path)
        if certs.kind == "rsa":
            assert "rsaEncryption" in text and "(2048 bit)" in text
        else:
            assert "id-ecPublicKey" in text and "prime256v1" in text


def test_valid_for_a_few_days_only(certs):
    res = subprocess.run(["openssl", "x509", "-in", str(certs.leaf), "-noout", "-checkend",
                          str(certificates.VALID_DAYS * 86400 + 60)], capture_output=True, text=True)
    assert res.returncode == 1  # expires within VALID_DAYS (and a minute)
    res = subprocess.run(["openssl", "x509", "-in", str(certs.leaf), "-noout", "-checkend",
                          str((certificates.VALID_DAYS - 1) * 86400)], capture_output=True, text=True)
    assert res.returncode == 0


def test_the_bundle_is_the_key_then_the_leaf(certs):
    assert certs.bundle.read_bytes() == certs.key.read_bytes() + certs.leaf.read_bytes()


@pytest.mark.skipif(os.geteuid() != 0, reason="handing a file to www-data needs root")
def test_a_key_handed_to_the_worker_stays_0600_and_the_ca_key_stays_roots(tmp_path):
    certs = certificates.make(tmp_path / "tls", "ecdsa")
    certs.give_key_to("www-data")
    uid = pwd.getpwnam("www-data").pw_uid
    assert certs.key.stat().st_uid == certs.bundle.stat().st_uid == uid
    assert certs.ca_key.stat().st_uid == 0
    assert all(p.stat().st_mode & 0o777 == 0o600 for p in certs.private_files())


def test_an_unknown_kind_is_refused(tmp_path):
    with pytest.raises(ValueError):
        certificates.make(tmp_path / "tls", "dsa")


class _Hello(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's name)
        body = b"Hello World"
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def https_server(certs):
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hello)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.leaf, certs.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_a_client_trusting_the_run_ca_accepts_the_leaf(certs, https_server):
    for host in ("127.0.0.1", "localhost"):
        status, _, body = verify.fetch(host, https_server, "/", cafile=certs.ca)
        assert (status, body) == (200, b"Hello World")


def test_a_client_trusting_another_ca_refuses_it(certs, https_server, tmp_path):
    other = certificates.make(tmp_path / "other", "ecdsa")
    with pytest.raises(VerifyFailed, match="does not verify against the run's CA"):
        verify.read_back("127.0.0.1", https_server, other.ca, "test")
    with pytest.raises(ssl.SSLCertVerificationError):
        verify.fetch("127.0.0.1", https_server, "/", cafile=other.ca)


def test_the_leaf_names_the_stacks_own_address_too(tmp_path):
    """A stack in a network namespace (or on another host) listens on another address:
    the leaf names it beside loopback, so the chain and the host name still check."""
    certs = certificates.make(tmp_path / "tls", "ecdsa", hosts=("10.213.0.2", *certificates.HOSTS))
    assert "IP Address:10.213.0.2, IP Address:127.0.0.1, DNS:localhost" in _text(certs.leaf)


def test_a_leaf_for_another_host_is_refused(tmp_path, https_server):
    """The run's CA, but a leaf that names another host: the host name check refuses it."""
    certs = certificates.make(tmp_path / "tls", "ecdsa", hosts=("203.0.113.9",))
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hello)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(certs.leaf, certs.key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(VerifyFailed, match="IP address mismatch"):
            verify.read_back("127.0.0.1", server.server_address[1], certs.ca, "test")
    finally:
        server.shutdown()
        server.server_close()


def test_clear_text_on_the_tls_port_is_said_so(certs):
    """A server that answers HTTP where TLS is expected: one sentence, not a hang."""
    server = http.server.HTTPServer(("127.0.0.1", 0), _Hello)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        with pytest.raises(VerifyFailed, match="without TLS"):
            verify.read_back("127.0.0.1", server.server_address[1], certs.ca, "test")
    finally:
        server.shutdown()
        server.server_close()
