"""Protocols in the store (unit on :memory:): a TLS cell's protocol, handshake
mode, streams, the stack's read-back and the engine's TLS figures go in and come back
typed; the columns SQL readers see are filled; errors of the new classes count."""

from __future__ import annotations

from stackbench.engine import EngineResult
from stackbench.engine.result import Negotiated
from stackbench.store import Store

from test_store import engine_doc, record

NEGOTIATED = {"alpn": "h2", "version": "TLSv1.3", "cipher": "TLS13_AES_128_GCM_SHA256", "group": "X25519"}


def tls_doc() -> dict:
    summary = {"count": 40, "min": 300, "mean": 700.0, "max": 2100, "percentiles": {"50": 650, "99": 2000}}
    return engine_doc() | {
        "protocol": "h2",
        "tls": {"handshakes": {"full": 16, "resumed": 0}, "connect_us": summary | {"percentiles": {"50": 40, "99": 80}},
                "handshake_us": summary,
                "negotiated": [{"alpn": "http/1.1", **{k: v for k, v in NEGOTIATED.items() if k != "alpn"},
                                "connections": 2}, {**NEGOTIATED, "connections": 14}]},
        "errors": {"connect": 0, "timeout": 0, "reset": 0, "read": 0, "write": 0, "parse": 0, "length_mismatch": 0,
                   "tls_handshake": 1, "tls_untrusted": 0, "h2_goaway": 2, "h2_rst_stream": 3},
        "error_details": {"h2_rst_stream": {"REFUSED_STREAM": 3}, "tls_handshake": {"HandshakeFailure": 1},
                          "h2_goaway": {"ENHANCE_YOUR_CALM": 2}}}


def test_a_tls_cell_goes_in_and_comes_back_typed():
    store = Store(":memory:")
    run_id = store.begin_run("p", "p.toml", {}, {}, {})
    store.record_cell(run_id, record(0, protocol="h2", handshake="keep-alive", streams=10,
                                     negotiated=Negotiated.from_dict(NEGOTIATED),
                                     engine=EngineResult.from_doc(tls_doc())))
    store.record_cell(run_id, record(1))
    tls_cell, clear = store.cells(run_id)
    assert (tls_cell.protocol, tls_cell.handshake, tls_cell.streams) == ("h2", "keep-alive", 10)
    assert tls_cell.negotiated == Negotiated("h2", "TLSv1.3", "TLS13_AES_128_GCM_SHA256", "X25519", 0)
    e = tls_cell.engine
    assert e.protocol == "h2" and (e.tls.full, e.tls.resumed, e.tls.handshakes) == (16, 0, 16)
    assert e.tls.negotiated[0] == Negotiated("h2", "TLSv1.3", "TLS13_AES_128_GCM_SHA256", "X25519", 14)  # most first
    assert (e.tls.handshake.p50_us, e.tls.handshake.p99_us, e.tls.connect.p99_us) == (650, 2000, 80)
    assert (e.errors.tls_handshake, e.errors.h2_goaway, e.errors.h2_rst_stream, e.errors.total) == (1, 2, 3, 6)
    assert e.errors.details["h2_rst_stream"] == {"REFUSED_STREAM": 3}
    assert e.errors.details["tls_handshake"] == {"HandshakeFailure": 1}
    assert (clear.protocol, clear.handshake, clear.streams, clear.negotiated, clear.engine.tls) == \
        ("http/1.1", None, None, None, None)
    rows = store.db.execute("SELECT protocol, handshake, streams, protocol_spoken, tls_full, tls_resumed, "
                            "handshake_p50_us, handshake_p99_us FROM cells ORDER BY seq").fetchall()
    assert [tuple(r) for r in rows] == [("h2", "keep-alive", 10, "h2", 16, 0, 650, 2000),
                                        ("http/1.1", None, None, None, None, None, None, None)]
