"""The fair TLS policy (servers/tls_policy.py) and how each front renders it (unit):
golden files of every front's config with tls, the suites and groups by name, the
OpenSSL config for what a server has no directive for, and what each stack serves.
Regenerate the golden files after an intended change with STACKBENCH_UPDATE_GOLDEN=1."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from stackbench.errors import UsageError
from stackbench.servers import tls_policy
from stackbench.servers.base import Context
from stackbench.servers.certificates import Certificates
from stackbench.stacks.base import PROTOCOLS
from stackbench.stacks.lifecycle import TlsOptions
from stackbench.stacks.registry import STACKS

GOLDEN = Path(__file__).parent / "golden"
# case -> (stack, knobs, certificate kind, tickets): every front once, and the knobs
# that change what TLS renders.
CASES = {
    "tls-nginx-fpm": ("nginx-fpm", {}, "ecdsa", True),
    "tls-nginx-fpm-rsa-notickets": ("nginx-fpm", {}, "rsa", False),
    "tls-nginx-proxy-apache": ("nginx-proxy-apache", {}, "ecdsa", True),
    "tls-apache-prefork-modphp": ("apache-prefork-modphp", {}, "ecdsa", True),
    "tls-apache-event-fpm-rsa-notickets": ("apache-event-fpm", {}, "rsa", False),
    "tls-apache-worker-fcgid": ("apache-worker-fcgid", {}, "ecdsa", True),
    "tls-lighttpd-fpm": ("lighttpd-fpm", {}, "ecdsa", True),
    "tls-lighttpd-fpm-notickets": ("lighttpd-fpm", {}, "ecdsa", False),
    "tls-h2o-fpm": ("h2o-fpm", {}, "ecdsa", True),
    "tls-h2o-fpm-notickets": ("h2o-fpm", {}, "rsa", False),
    "tls-caddy-fpm": ("caddy-fpm", {}, "ecdsa", True),
    "tls-jetty-fpm": ("jetty-fpm", {}, "ecdsa", True),
    "tls-jetty-fpm-rsa-notickets": ("jetty-fpm", {}, "rsa", False),
    "tls-varnish-apache": ("varnish-apache", {}, "ecdsa", True),
}


def certificates(kind: str) -> Certificates:
    tls = Path("/RUN/tls")
    return Certificates(tls, kind, tls / "ca.pem", tls / "ca.key", tls / "leaf.pem", tls / "leaf.key",
                        tls / "leaf-bundle.pem")


def context(case: str, kind: str = "ecdsa", tickets: bool = True) -> Context:
    ctx = Context(case, Path("/RUN"), Path("/RUN/docroot"), 8080, [0], "www-data",
                  {"php-fpm": 9000, "apache": 8081, "varnish-proxy": 8082})
    ctx.tls = tls_policy.TlsSite(8443, certificates(kind), tickets)
    return ctx


def servers(case: str):
    stack_id, knobs, kind, tickets = CASES[case]
    stack = STACKS[stack_id]
    return stack.servers(context(case, kind, tickets), stack.resolve_knobs(knobs))


@pytest.mark.parametrize("case", sorted(CASES))
def test_golden(case):
    for server in servers(case):
        for rel, text in server.files().items():
            golden = GOLDEN / case / Path(rel).name
            if os.environ.get("STACKBENCH_UPDATE_GOLDEN"):
                golden.parent.mkdir(parents=True, exist_ok=True)
                golden.write_text(text)
            assert golden.exists(), f"no golden file {golden}: run with STACKBENCH_UPDATE_GOLDEN=1"
            assert text == golden.read_text(), f"{rel} differs from {golden}"


def test_tls12_suites_are_ecdhe_with_aead_for_the_keys_type():
    for kind, auth in (("ecdsa", "ECDSA"), ("rsa", "RSA")):
        names = tls_policy.tls12_ciphers(kind)
        assert len(names) == 3
        assert all(n.startswith(f"ECDHE-{auth}-") for n in names)
        assert {n.split("-", 2)[2] for n in names} == {"AES128-GCM-SHA256", "AES256-GCM-SHA384", "CHACHA20-POLY1305"}
        iana = tls_policy.tls12_ciphers_iana(kind)
        assert [tls_policy.cipher_name(n) for n in names] == iana
        assert all(n.startswith(f"TLS_ECDHE_{auth}_WITH_") for n in iana)
    # TLS 1.3 suites as the engine's result (rustls) spells them.
    assert tls_policy.cipher_name("TLS_AES_128_GCM_SHA256") == "TLS13_AES_128_GCM_SHA256"
    assert tls_policy.cipher_name("TLS_CHACHA20_POLY1305_SHA256") == "TLS13_CHACHA20_POLY1305_SHA256"
    assert tls_policy.cipher_name("SOMETHING-ELSE") == "SOMETHING-ELSE"
    assert tls_policy.iana_group("prime256v1") == tls_policy.iana_group("P-256") == "secp256r1"
    assert tls_policy.iana_group("X25519") == "X25519"


@pytest.mark.skipif(not shutil.which("openssl"), reason="the openssl CLI")
def test_openssl_reads_the_cipher_string_as_exactly_the_policys_suites():
    for kind in ("ecdsa", "rsa"):
        string = ":".join(tls_policy.tls12_ciphers(kind))
        tls12 = subprocess.run(["openssl", "ciphers", "-tls1_2", "-s", string], capture_output=True, text=True,
                               check=True).stdout.strip().split(":")
        assert tls12 == tls_policy.tls12_ciphers(kind)
        # Without a version, the TLS 1.3 suites (not set by the string: the library's
        # default) come first.
        every = subprocess.run(["openssl", "ciphers", string], capture_output=True, text=True,
                               check=True).stdout.strip().split(":")
        assert every == [*tls_policy.TLS13_SUITES, *tls12]


def test_the_openssl_config_turns_tickets_off_only_when_asked():
    on = tls_policy.openssl_conf(tls_policy.TlsSite(1, certificates("ecdsa"), True))
    off = tls_policy.openssl_conf(tls_policy.TlsSite(1, certificates("rsa"), False))
    assert "SessionTicket" not in on and "Options = -SessionTicket" in off
    assert "Groups = X25519:prime256v1" in on and "ECDHE-RSA-AES128-GCM-SHA256" in off


def test_a_back_end_behind_a_terminating_front_stays_clear_text():
    apache, nginx = servers("tls-nginx-proxy-apache")
    assert "SSLEngine" not in apache.files()["apache/apache2.conf"]
    assert "mod_ssl" not in apache.files()["apache/apache2.conf"]
    assert "ssl http2;" in nginx.files()["nginx/nginx.conf"]


def test_prefork_is_asked_for_h2_and_loads_mod_http2():
    conf = servers("tls-apache-prefork-modphp")[0].files()["apache/apache2.conf"]
    assert "mod_http2.so" in conf and "Protocols h2 http/1.1" in conf


def test_varnish_gets_hitchs_connections_on_a_proxy_address():
    apache, varnish, hitch = servers("tls-varnish-apache")
    argv = varnish.start_argv()
    assert f"127.0.0.1:{hitch.backend_port},PROXY" in argv and "feature=+http2" in argv
    assert hitch.env()["OPENSSL_CONF"].endswith("hitch/openssl.cnf")
    # Without tls: no hitch, no second address.
    plain = Context("x", Path("/RUN"), Path("/RUN/docroot"), 8080, [0], None, {"apache": 8081})
    stack = STACKS["varnish-apache"]
    clear = stack.servers(plain, stack.resolve_knobs({}))
    assert [s.name for s in clear] == ["apache2", "varnishd"]
    assert not any(",PROXY" in a for a in clear[1].start_argv())


def test_every_packaged_front_serves_https_and_h2():
    for stack in STACKS.values():
        protocols = stack.protocols(stack.resolve_knobs({}))
        assert protocols <= set(PROTOCOLS)
        if stack.id in ("openlitespeed", "hhvm"):
            assert protocols == {"http/1.1"}
        else:
            assert protocols == set(PROTOCOLS), stack.id


def test_tls_options_are_checked():
    assert TlsOptions() == TlsOptions("ecdsa", True)
    with pytest.raises(UsageError, match="ecdsa, rsa"):
        TlsOptions(certificate="dsa")
    with pytest.raises(UsageError, match="true or false"):
        TlsOptions(tickets="yes")


@pytest.mark.skipif(not shutil.which("caddy"), reason="caddy adapts its own Caddyfile (apt-get install caddy)")
def test_caddy_without_tickets_runs_its_own_json_with_tickets_disabled():
    stack = STACKS["caddy-fpm"]
    ctx = context("caddy", "ecdsa", tickets=False)
    caddy = stack.servers(ctx, stack.resolve_knobs({}))[1]
    files = caddy.files()
    config = json.loads(files["caddy/caddy.json"])
    assert config["apps"]["tls"]["session_tickets"] == {"disabled": True}
    assert "caddy/Caddyfile" in files  # the source, stored with the cell too
    assert caddy.start_argv()[-2:] == ["--config", "/RUN/caddy/caddy.json"]
    # Nothing but HTTP/1.1 and HTTP/2 (no HTTP/3 on UDP).
    assert all(server["protocols"] == ["h1", "h2"] for server in config["apps"]["http"]["servers"].values())
