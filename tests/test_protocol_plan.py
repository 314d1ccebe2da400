"""Plans that ask for protocols: the `protocol` axis, the `tls` table and
`streams`, checked key by key; cells asked once per protocol and connection mode; the
engine's command line for a TLS cell (unit: no server)."""

from __future__ import annotations

import tomllib

import pytest

from stackbench.engine import LoadSpec
from stackbench.errors import PlanError
from stackbench.planning import plan as plan_mod, protocols

STACK = 'workloads = ["static-12b"]\n[[stacks]]\nid = "nginx-fpm"\n'


def parse(text: str) -> plan_mod.Plan:
    return plan_mod.parse(tomllib.loads(text), "test.toml")


def test_the_default_is_clear_http_1_1_and_cells_are_as_before():
    plan = parse('concurrency = [1, 16]\n' + STACK)
    assert plan.protocols.names == ("http/1.1",) and plan.protocols.tls is None and not plan.protocols.uses_tls
    cells = plan_mod.expand(plan)
    assert [(c.concurrency, c.keepalive, c.protocol, c.handshake) for c in cells] == [
        (1, True, "http/1.1", None), (1, False, "http/1.1", None), (16, True, "http/1.1", None),
        (16, False, "http/1.1", None)]


def test_tls_cells_take_a_handshake_mode_in_place_of_keep_alive_and_none_is_asked_twice():
    plan = parse('concurrency = [16]\nprotocol = ["http/1.1", "https", "h2"]\nstreams = 10\n'
                 'tls = { handshake = ["keep-alive", "resumed", "full"], certificate = "rsa" }\n' + STACK)
    cells = plan_mod.expand(plan)
    asked = [(c.protocol, c.handshake, c.keepalive) for c in cells]
    assert asked == [("http/1.1", None, True), ("http/1.1", None, False),
                     ("https", "keep-alive", True), ("https", "resumed", False), ("https", "full", False),
                     ("h2", "keep-alive", True)]  # HTTP/2 keeps its connections: keep-alive alone
    assert len(set(asked)) == len(asked)
    assert plan.protocols.tls == protocols.TlsPlan(("keep-alive", "resumed", "full"), "rsa", True)
    assert plan.protocols.streams == 10
    assert [c.mode() for c in cells[:5]] == ["keep-alive", "no keep-alive", "https keep-alive",
                                             "https resumed handshakes", "https full handshakes"]
    # Every question is its own comparison: protocols and handshakes too.
    with_base = parse('concurrency = [16]\nprotocol = ["http/1.1", "https"]\nbaseline = "nginx-fpm"\n'
                      + STACK + '[[stacks]]\nid = "h2o-fpm"\n')
    assert with_base.comparisons() == 3  # clear keep-alive on/off, https keep-alive


def test_http_is_read_as_http_1_1_and_the_default_handshake_is_keep_alive():
    plan = parse('protocol = ["http", "https"]\nkeepalive = [true]\nconcurrency = [4]\n' + STACK)
    assert plan.protocols.names == ("http/1.1", "https")
    assert [(c.protocol, c.handshake) for c in plan_mod.expand(plan)] == [("http/1.1", None), ("https", "keep-alive")]
    assert plan.protocols.tls == protocols.TlsPlan()


def test_a_walk_on_one_stack_is_one_mode_at_a_time():
    plan = parse('concurrency = [1, 16]\nramp = "up"\nprotocol = ["http/1.1", "https"]\nkeepalive = [true]\n' + STACK)
    cells = plan_mod.expand(plan)
    assert [(c.protocol, c.concurrency, c.step) for c in cells] == [
        ("http/1.1", 1, 0), ("http/1.1", 16, 1), ("https", 1, 0), ("https", 16, 1)]


@pytest.mark.parametrize("text,fragment", [
    ('protocol = ["http/1.1", "spdy"]\n', "unknown protocol 'spdy'; one of http/1.1, https, h2"),
    ('protocol = ["htps"]\n', "unknown protocol 'htps' (did you mean 'https'?)"),
    ('protocol = ["h3"]\n', "protocol 'h3': HTTP/3 (QUIC) is not measured yet"),
    ('protocol = []\n', "protocol must not be empty"),
    ('protocol = ["https", "https"]\n', "protocol 'https' is listed twice"),
    ('protocol = [2]\n', "protocol takes names such as \"https\", not 2"),
    ('tls = { handshake = ["full"] }\n', "a tls table is given but protocol asks for no TLS"),
    ('protocol = ["https"]\ntls = { handshake = ["fast"] }\n', "tls.handshake takes keep-alive, resumed, full, not 'fast'"),
    ('protocol = ["https"]\ntls = { handshake = [] }\n', "tls.handshake must not be empty"),
    ('protocol = ["https"]\ntls = { certificate = "dsa" }\n', "tls.certificate must be one of ecdsa, rsa, not 'dsa'"),
    ('protocol = ["https"]\ntls = { tickets = "yes" }\n', "tls.tickets takes true or false"),
    ('protocol = ["https"]\ntls = { handshakes = ["full"] }\n', "unknown key tls.'handshakes' (did you mean 'handshake'?)"),
    ('protocol = ["https"]\ntls = { handshake = ["resumed"], tickets = false }\n', "it needs tls.tickets = true"),
    ('protocol = ["https"]\ntls = "full"\n', "tls must be a table"),
    ('protocol = ["https"]\nstreams = 10\n', "streams is read only for HTTP/2: add \"h2\" to protocol"),
    ('protocol = ["h2"]\nstreams = 0\n', "streams must be a whole number from 1 to 1000, not 0"),
    ('protocol = ["https", "h2"]\ntls = { handshake = ["full"] }\n', "HTTP/2 keeps its connections"),
    ('protocol = ["h2"]\ntls = { handshake = ["keep-alive", "full"] }\n', "tls.handshake 'full' opens a connection"),
    ('protocol = ["https"]\nkeepalive = [false]\n', "keepalive is for clear-text cells and this plan has none"),
])
def test_every_protocol_key_is_checked_with_one_line(text, fragment):
    with pytest.raises(PlanError) as e:
        parse(text + STACK)
    assert fragment in e.value.message and "\n" not in e.value.message


def test_a_protocol_a_stack_cannot_serve_is_refused_naming_both():
    with pytest.raises(PlanError) as e:
        parse('protocol = ["http/1.1", "h2"]\n[[stacks]]\nid = "hhvm"\n')
    assert "stack 'hhvm' cannot serve protocol 'h2' (HTTP/2 over TLS); it serves http/1.1" in e.value.message


def test_h2_is_asked_of_prefork_its_fallback_being_a_result():
    plan = parse('protocol = ["h2"]\n[[stacks]]\nid = "apache-prefork-modphp"\n')
    assert {c.protocol for c in plan_mod.expand(plan)} == {"h2"}


def test_the_engine_is_told_tls_handshake_http2_and_streams():
    argv = LoadSpec(url="https://127.0.0.1:8443/", connections=4, keepalive=False, pin_cert="/r/leaf.pem",
                    handshake="full", http2=True, streams=10).argv("load")
    assert argv[-1] == "https://127.0.0.1:8443/"
    joined = " ".join(argv)
    assert "--handshake full" in joined and "--pin-cert /r/leaf.pem" in joined and "--http2" in joined
    assert "--streams 10" in joined and "--no-keepalive" not in argv  # the handshake mode is the switch over TLS
    clear = LoadSpec(url="http://127.0.0.1:8080/", connections=4, keepalive=False).argv("load")
    assert "--no-keepalive" in clear and not any(a.startswith(("--handshake", "--http2", "--pin", "--cacert"))
                                                  for a in clear)
