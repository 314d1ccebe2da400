"""Every front over HTTPS and HTTP/2 on the real servers (integration): started with
tls, verified over TLS against the run's own CA (and in clear text beside it), what it
negotiated read back — TLS 1.3, X25519, h2 where the server has it and http/1.1 for
Apache prefork asked for h2 — the fair policy held (no TLS 1.1, no CBC, no group but
X25519 and P-256, tickets that resume), the keys 0600, and nothing left after down().
An ECDSA leaf for every front, an RSA leaf with tickets off on one front per TLS
library (OpenSSL through nginx, Apache and hitch; Go through Caddy; JSSE through Jetty)."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
from pathlib import Path

import pytest

from stackbench import workloads
from stackbench.errors import PortInUse
from stackbench.servers import tls_policy
from stackbench.stacks.lifecycle import StackInstance, TlsOptions
from stackbench.stacks.registry import STACKS

from conftest import require_stack, require_tool

pytestmark = pytest.mark.servers

FRONTS = ["nginx-fpm", "nginx-proxy-apache", "nginx-cache-apache", "apache-prefork-modphp", "apache-event-fpm",
          "apache-worker-fcgid", "lighttpd-fpm", "h2o-fpm", "caddy-fpm", "jetty-fpm", "varnish-apache"]
# mod_http2 refuses HTTP/2 under prefork (FIELD-NOTES): asked for h2, it answers http/1.1.
NO_H2 = {"apache-prefork-modphp"}
WORKLOADS = ["static-12b", "php-hello"]
REQUEST = b"GET /hello.html HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"


def s_client(inst: StackInstance, *args: str) -> tuple[int, str]:
    """One `openssl s_client` handshake (and a request) with the run's CA."""
    res = subprocess.run(["openssl", "s_client", "-connect", f"{inst.host}:{inst.tls_port}", "-CAfile",
                          str(inst.ca_path), "-verify_return_error", "-ign_eof", *args],
                         input=REQUEST, capture_output=True, timeout=15)
    return res.returncode, (res.stdout + res.stderr).decode(errors="replace")


def resumes(inst: StackInstance, tmp: Path, version: str) -> bool:
    """A second connection offers the first one's session (ticket): resumed?"""
    session = tmp / f"session-{version}.pem"
    session.unlink(missing_ok=True)
    s_client(inst, version, "-sess_out", str(session))
    if not session.exists():
        return False
    return "Reused," in s_client(inst, version, "-sess_in", str(session))[1]


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] != b"Z"
    except OSError:
        return False


def started(stack_id: str, workdir: Path, tls: TlsOptions):
    require_stack(stack_id)
    return StackInstance(STACKS[stack_id], {}, cpus=[0], workdir=workdir, tls=tls,
                         workloads=[workloads.get(w) for w in WORKLOADS])


@pytest.mark.parametrize("stack_id", FRONTS)
def test_every_front_serves_https_and_h2_with_the_runs_ca(stack_id, workdir):
    require_tool("openssl", "openssl")
    inst = started(stack_id, workdir, TlsOptions())
    with inst:
        inst.verify(WORKLOADS)  # clear text and over TLS, the chain checked against the run's CA
        pids = inst.all_pids()
        rundir = inst.ctx.rundir
        certs = inst.ctx.tls.certificates
        assert inst.ca_path == certs.ca and inst.leaf_path == certs.leaf and inst.tls_port != inst.port
        assert all(p.stat().st_mode & 0o777 == 0o600 for p in certs.private_files())

        got = inst.negotiated
        assert got["https"]["alpn"] == "http/1.1"
        assert got["h2"]["alpn"] == ("http/1.1" if stack_id in NO_H2 else "h2")
        for seen in got.values():
            assert seen["version"] == "TLSv1.3" and seen["group"] == "X25519"
            assert seen["cipher"] in {tls_policy.cipher_name(s) for s in tls_policy.TLS13_SUITES}

        # The policy, as the server answers it.
        status, out = s_client(inst, "-tls1_2", "-brief")
        assert status == 0, out
        cipher = re.search(r"Ciphersuite: (\S+)", out).group(1)
        assert cipher in tls_policy.tls12_ciphers("ecdsa"), cipher
        assert s_client(inst, "-tls1_1")[0] != 0, "TLS 1.1 accepted"
        assert s_client(inst, "-tls1_2", "-cipher", "ECDHE-ECDSA-AES128-SHA:AES128-GCM-SHA256")[0] != 0, \
            "a suite outside the policy accepted"
        assert s_client(inst, "-groups", "secp384r1")[0] != 0, "a group outside the policy accepted"
        status, out = s_client(inst, "-groups", "P-256", "-brief")
        assert status == 0 and "prime256v1" in out, out
        assert resumes(inst, workdir, "-tls1_3"), "no TLS 1.3 resumption with tickets on"
        # Caddy announces no HTTP/3 (no Alt-Svc): the protocols are h1 and h2 only.
        assert "alt-svc" not in s_client(inst, "-alpn", "http/1.1")[1].lower()
    assert not rundir.exists(), "the run directory (and the keys in it) outlived the stack"
    assert not [p for p in pids if alive(p)], "a process of the stack outlived it"


@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-event-fpm", "caddy-fpm", "jetty-fpm", "varnish-apache"])
def test_an_rsa_leaf_with_tickets_off(stack_id, workdir):
    require_tool("openssl", "openssl")
    inst = started(stack_id, workdir, TlsOptions(certificate="rsa", tickets=False))
    with inst:
        inst.verify(WORKLOADS)
        assert inst.negotiated["h2"]["alpn"] == "h2" and inst.negotiated["h2"]["version"] == "TLSv1.3"
        status, out = s_client(inst, "-tls1_2", "-brief")
        assert status == 0 and re.search(r"Ciphersuite: (\S+)", out).group(1) in tls_policy.tls12_ciphers("rsa")
        assert "Signature type: RSA" in out, out
        # hitch has no switch for OpenSSL's own session cache, which it keeps per worker,
        # nor JSSE (Jetty) for its TLS 1.2 one: without tickets a client still resumes
        # there (docs/methods/fair-tls.md).
        assert resumes(inst, workdir, "-tls1_3") == (stack_id == "varnish-apache")
        assert not resumes(inst, workdir, "-tls1_2") or stack_id in ("varnish-apache", "jetty-fpm")


def _engine_speaks_tls() -> str | None:
    engine = Path(__file__).parent.parent / "loadgen" / "target" / "release" / "stackbench-load"
    if not engine.exists():
        return None
    help_text = subprocess.run([str(engine), "--help"], capture_output=True, text=True).stdout
    return str(engine) if "--cacert" in help_text and "--http2" in help_text else None


@pytest.mark.parametrize("stack_id", FRONTS)
def test_the_engine_drives_each_front_over_https_and_h2(stack_id, workdir):
    """A second of load over HTTPS and one over HTTP/2: what the engine says it
    negotiated is what verification read back."""
    engine = _engine_speaks_tls()
    if engine is None:
        msg = "the load engine has no --cacert/--http2 yet (build loadgen: scripts/setup.sh)"
        pytest.fail(msg) if os.environ.get("CI") else pytest.skip(msg)
    inst = started(stack_id, workdir, TlsOptions())
    with inst:
        inst.verify(WORKLOADS)
        for protocol, extra in (("https", []), ("h2", ["--http2", "--streams", "4"])):
            res = subprocess.run([engine, inst.https_url("/hello.html"), "--json", "-c", "4", "-d", "1s",
                                  "--cacert", str(inst.ca_path), *extra], capture_output=True, text=True, timeout=30)
            assert res.returncode == 0, res.stderr
            doc = json.loads(res.stdout)
            assert doc["requests"]["completed"] > 0 and doc["requests"]["failed"] == 0, doc["errors"]
            negotiated = doc["tls"]["negotiated"]
            read_back = inst.negotiated[protocol]
            # The engine (rustls) and the read-back (OpenSSL) each got the same tuple.
            assert [{k: n[k] for k in read_back} for n in negotiated] == [read_back] * len(negotiated), \
                (protocol, negotiated, read_back)
            assert doc["protocol"] == ("h2" if read_back["alpn"] == "h2" else "http/1.1")



@pytest.mark.parametrize("stack_id", ["nginx-fpm", "apache-event-fpm"])
def test_handshake_modes_as_the_server_counts_them(stack_id, workdir):
    """`full` resumes no session, in the server's own log as in the engine's count;
    `resumed` resumes all but the first of each engine thread's connections."""
    engine = _engine_speaks_tls()
    if engine is None:
        msg = "the load engine has no --cacert/--http2 yet (build loadgen: scripts/setup.sh)"
        pytest.fail(msg) if os.environ.get("CI") else pytest.skip(msg)
    inst = started(stack_id, workdir, TlsOptions(log_sessions=True))
    with inst:
        inst.verify(WORKLOADS)
        log = inst.ctx.rundir / tls_policy.SESSION_LOG
        for mode in ("full", "resumed"):
            log.write_text("")  # what verification's own handshakes left
            res = subprocess.run([engine, inst.https_url("/hello.html"), "--json", "-c", "2", "-t", "1", "-d", "1s",
                                  "--cacert", str(inst.ca_path), "--handshake", mode],
                                 capture_output=True, text=True, timeout=30)
            assert res.returncode == 0, res.stderr
            handshakes = json.loads(res.stdout)["tls"]["handshakes"]
            lines = log.read_text().split()[::2]  # "r" / "." (nginx), "Resumed" / "Initial" (Apache)
            resumed = sum(word in ("r", "Resumed") for word in lines)
            assert len(lines) >= handshakes["full"] + handshakes["resumed"] > 0
            if mode == "full":
                assert resumed == 0 and handshakes["resumed"] == 0, (lines[:5], handshakes)
            else:
                assert resumed >= handshakes["resumed"] > 0.9 * len(lines), (resumed, len(lines), handshakes)


def test_a_tls_port_in_use_is_refused_before_starting(workdir):
    require_stack("nginx-fpm")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        busy = s.getsockname()[1]
        inst = StackInstance(STACKS["nginx-fpm"], {}, cpus=[0], workdir=workdir, tls=TlsOptions(), tls_port=busy)
        with pytest.raises(PortInUse, match=str(busy)):
            inst.up()
    assert not inst.all_pids() and not list(workdir.iterdir())
