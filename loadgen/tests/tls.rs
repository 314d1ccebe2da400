//! https and HTTP/2: the real binary against the TLS test server
//! (tests/common/tls.rs), whose own counters say what the server saw —
//! handshakes full and resumed, requests, streams in flight.

mod common;

use common::tls::{self, Options, TlsServer};
use common::{assert_valid, engine, engine_json, engine_with_env, u};

fn ca() -> &'static str {
    &tls::certs().ca
}

on_both_loops!(https_keepalive_one_full_handshake_per_connection);
fn https_keepalive_one_full_handshake_per_connection() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "500", "-c", "4", "-t", "2", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 500);
    assert_eq!(u(&doc, "/bytes/body_received"), 500 * 12);
    assert_eq!(doc["protocol"], "http/1.1");
    assert_eq!(u(&doc, "/tls/handshakes/full"), 4);
    assert_eq!(u(&doc, "/tls/handshakes/resumed"), 0);
    assert_eq!(u(&doc, "/tls/handshake_us/count"), 4);
    assert_eq!(u(&doc, "/tls/connect_us/count"), 4);
    let negotiated = doc["tls"]["negotiated"].as_array().unwrap();
    assert_eq!(negotiated.len(), 1, "{negotiated:?}");
    assert_eq!(negotiated[0]["alpn"], "http/1.1");
    assert_eq!(negotiated[0]["version"], "TLSv1.3");
    assert_eq!(negotiated[0]["group"], "X25519");
    assert!(negotiated[0]["cipher"].as_str().unwrap().starts_with("TLS13_"));
    assert_eq!(u(&doc, "/tls/negotiated/0/connections"), 4);
    assert_eq!(doc["config"]["tls"]["handshake"], "keep-alive");
    assert_eq!(doc["config"]["tls"]["trust"], "cacert");
    assert_eq!(doc["error_details"], serde_json::json!({}));
    assert_eq!(u(&doc, "/errors/tls_handshake"), 0);
    assert!(doc["errors"].get("h2_goaway").is_none(), "HTTP/2 classes only with --http2");
    // The server's side: 4 connections, 4 full handshakes, every request.
    assert_eq!(server.get(|c| &c.full), 4);
    assert_eq!(server.get(|c| &c.resumed), 0);
    assert_eq!(server.get(|c| &c.requests), 500);
}

on_both_loops!(handshake_full_never_resumes);
fn handshake_full_never_resumes() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "200", "-c", "2", "--handshake", "full", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 200);
    assert_eq!(u(&doc, "/connections_opened"), 200);
    assert_eq!(u(&doc, "/tls/handshakes/full"), 200);
    assert_eq!(u(&doc, "/tls/handshakes/resumed"), 0);
    // The server issued tickets every time; none was ever presented.
    assert_eq!(server.get(|c| &c.resumed), 0);
    assert_eq!(server.get(|c| &c.full), 200);
    assert_eq!(doc["config"]["keepalive"], false);
}

on_both_loops!(handshake_resumed_resumes_all_but_the_first_of_each_thread);
fn handshake_resumed_resumes_all_but_the_first_of_each_thread() {
    let server = TlsServer::start(Options::default());
    // One connection per thread: only its very first handshake is full.
    let doc = engine_json(&["-n", "200", "-c", "2", "-t", "2", "--handshake", "resumed", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 200);
    assert_eq!(u(&doc, "/connections_opened"), 200);
    assert_eq!(server.get(|c| &c.full), 2);
    assert_eq!(server.get(|c| &c.resumed), 198);
    assert_eq!(u(&doc, "/tls/handshakes/full"), 2);
    assert_eq!(u(&doc, "/tls/handshakes/resumed"), 198);
    assert_eq!(doc["config"]["tls"]["handshake"], "resumed");
}

on_both_loops!(no_keepalive_over_https_means_full_handshakes);
fn no_keepalive_over_https_means_full_handshakes() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "50", "-c", "1", "--no-keepalive", "--pin-cert", &tls::certs().leaf, &server.url("/")]);
    assert_eq!(u(&doc, "/requests/completed"), 50);
    assert_eq!(doc["config"]["tls"]["handshake"], "full");
    assert_eq!(doc["config"]["tls"]["trust"], "pin");
    assert_eq!(server.get(|c| &c.resumed), 0);
    assert_eq!(server.get(|c| &c.full), 50);
}

/// Runs 20 requests that must all fail, and returns (errors, error_details).
fn failing(args: &[&str]) -> (serde_json::Value, serde_json::Value) {
    let mut all = vec!["-n", "20", "-c", "2", "--timeout", "2s"];
    all.extend_from_slice(args);
    let doc = engine_json(&all);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/failed"), 20, "{doc:#}");
    (doc["errors"].clone(), doc["error_details"].clone())
}

on_both_loops!(untrusted_certificates_are_their_own_class);
fn untrusted_certificates_are_their_own_class() {
    let certs = tls::certs();
    let right = TlsServer::start(Options::default());
    let (errors, details) = failing(&["--cacert", &certs.other_ca, &right.url("/")]);
    assert_eq!(u(&errors, "/tls_untrusted"), 20);
    assert_eq!(details, serde_json::json!({"tls_untrusted": {"unknown_issuer": 20}}));

    let (_, details) = failing(&["--pin-cert", &certs.wrong_host, &right.url("/")]);
    assert_eq!(details, serde_json::json!({"tls_untrusted": {"pin_mismatch": 20}}));

    let wrong = TlsServer::start(Options { cert: certs.wrong_host.clone(), ..Options::default() });
    let (_, details) = failing(&["--cacert", ca(), &wrong.url("/")]);
    assert_eq!(details, serde_json::json!({"tls_untrusted": {"wrong_host": 20}}));
    // A pin is the leaf's bytes: the name does not matter.
    let doc = engine_json(&["-n", "10", "-c", "1", "--pin-cert", &certs.wrong_host, &wrong.url("/")]);
    assert_eq!(u(&doc, "/requests/completed"), 10);

    let expired = TlsServer::start(Options { cert: certs.expired.clone(), ..Options::default() });
    let (_, details) = failing(&["--cacert", ca(), &expired.url("/")]);
    assert_eq!(details, serde_json::json!({"tls_untrusted": {"expired": 20}}));
}

on_both_loops!(a_pin_still_checks_the_handshake_signature);
fn a_pin_still_checks_the_handshake_signature() {
    // The server presents the pinned leaf but signs with another key: a copy of
    // a public certificate must not pass for the server.
    let certs = tls::certs();
    let forged_dir = certs.dir.join("forged");
    std::fs::create_dir_all(&forged_dir).unwrap();
    let out = std::process::Command::new("openssl")
        .args(["ecparam", "-name", "prime256v1", "-genkey", "-noout", "-out"])
        .arg(forged_dir.join("other.key"))
        .output()
        .unwrap();
    assert!(out.status.success());
    let server = tls::TlsServer::start_with_key(Options::default(), &forged_dir.join("other.key"));
    let (_, details) = failing(&["--pin-cert", &certs.leaf, &server.url("/")]);
    assert_eq!(details, serde_json::json!({"tls_untrusted": {"bad_signature": 20}}));
}

on_both_loops!(handshake_failures_are_classified_never_hang);
fn handshake_failures_are_classified_never_hang() {
    // Clear text on the TLS port: an HTTP/1.1 server answering a ClientHello with
    // a 400, as nginx does.
    let plain = tls::answers_clear_text();
    let url = format!("https://127.0.0.1:{}/", plain.port());
    let (_, details) = failing(&["--cacert", ca(), &url]);
    assert_eq!(details, serde_json::json!({"tls_handshake": {"invalid_message": 20}}));

    // Killed mid-handshake: the connection closes after the ClientHello.
    let addr = tls::closes_mid_handshake();
    let (errors, _) = failing(&["--cacert", ca(), &format!("https://127.0.0.1:{}/", addr.port())]);
    assert_eq!(u(&errors, "/tls_handshake") + u(&errors, "/reset"), 20, "{errors}");

    // A TLS alert: no ALPN protocol in common.
    let odd = TlsServer::start(Options { alpn: vec![b"spdy/1"], ..Options::default() });
    let (_, details) = failing(&["--cacert", ca(), &odd.url("/")]);
    assert_eq!(details, serde_json::json!({"tls_handshake": {"NoApplicationProtocol": 20}}));

    // A server that never answers the ClientHello: a timeout, within the bound.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://127.0.0.1:{}/", silent.local_addr().unwrap().port());
    let run = engine(&["--json", "-d", "1s", "-c", "2", "--timeout", "300ms", "--cacert", ca(), &url]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.elapsed.as_secs_f64() < 3.0, "{:?}", run.elapsed);
    let doc = run.json();
    assert!(u(&doc, "/errors/timeout") > 0, "{doc:#}");
    drop(silent);
}

#[test]
fn bad_tls_input_is_one_line_and_exit_2() {
    let certs = tls::certs();
    let cases: [&[&str]; 8] = [
        &["https://127.0.0.1:1/"],
        &["--cacert", "/nonexistent.pem", "https://127.0.0.1:1/"],
        &["--cacert", &certs.leaf_key, "https://127.0.0.1:1/"],
        &["--cacert", ca(), "http://127.0.0.1:1/"],
        &["--http2", "http://127.0.0.1:1/"],
        &["--cacert", ca(), "--streams", "4", "https://127.0.0.1:1/"],
        &["--cacert", ca(), "--handshake", "keep-alive", "--no-keepalive", "https://127.0.0.1:1/"],
        &["--cacert", ca(), "--handshake", "sometimes", "https://127.0.0.1:1/"],
    ];
    for args in cases {
        let run = engine(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{args:?}: {}", run.stderr);
        assert!(run.stdout.is_empty());
    }
    for refused in ["--handshake full", "--keepalive-requests 5"] {
        let mut args: Vec<&str> = vec!["--cacert", ca(), "--http2"];
        args.extend(refused.split(' '));
        args.push("https://127.0.0.1:1/");
        let run = engine(&args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert!(run.stderr.contains("--http2 cannot be combined"), "{}", run.stderr);
    }
}

on_both_loops!(http2_streams_share_a_connection);
fn http2_streams_share_a_connection() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "2000", "-c", "2", "--http2", "--streams", "8", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 2000);
    assert_eq!(u(&doc, "/bytes/body_received"), 2000 * 12);
    assert!(u(&doc, "/bytes/received") > 2000 * 12, "frames are counted too");
    assert!(u(&doc, "/bytes/sent") > 0);
    assert_eq!(doc["protocol"], "h2");
    assert_eq!(u(&doc, "/connections_opened"), 2);
    assert_eq!(doc["tls"]["negotiated"][0]["alpn"], "h2");
    assert_eq!(doc["config"]["tls"]["streams"], 8);
    assert_eq!(u(&doc, "/errors/h2_goaway"), 0);
    assert_eq!(server.get(|c| &c.h2_connections), 2);
    assert_eq!(server.get(|c| &c.requests), 2000);
    // Each stream slot is a client of the closed loop.
    assert_eq!(u(&doc, "/connections_measured"), 16);

    // Streams really run at once: 8 slow requests on one connection overlap.
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "64", "-c", "1", "--http2", "--streams", "8", "--cacert", ca(), &server.url("/slow/20")]);
    assert_eq!(u(&doc, "/requests/completed"), 64);
    assert_eq!(server.get(|c| &c.max_in_flight), 8);
    assert_eq!(server.get(|c| &c.h2_connections), 1);
}

on_both_loops!(http2_falls_back_to_http11_when_the_server_picks_it);
fn http2_falls_back_to_http11_when_the_server_picks_it() {
    let server = TlsServer::start(Options { alpn: vec![b"http/1.1"], ..Options::default() });
    let doc = engine_json(&["-n", "300", "-c", "2", "--http2", "--streams", "4", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 300);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(doc["protocol"], "http/1.1");
    assert_eq!(doc["tls"]["negotiated"][0]["alpn"], "http/1.1");
    // Still one connection per -c: its stream slots take turns on it.
    assert_eq!(u(&doc, "/connections_opened"), 2);
    assert_eq!(server.get(|c| &c.h2_connections), 0);
    assert_eq!(server.get(|c| &c.requests), 300);
}

on_both_loops!(http2_graceful_goaway_reconnects_without_errors);
fn http2_graceful_goaway_reconnects_without_errors() {
    let server = TlsServer::start(Options { goaway_after: Some(100), ..Options::default() });
    let doc = engine_json(&["-n", "1000", "-c", "2", "--http2", "--streams", "10", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 1000);
    assert_eq!(u(&doc, "/requests/failed"), 0, "{doc:#}");
    assert!(u(&doc, "/connections_opened") >= 10, "{doc:#}");
}

on_both_loops!(http2_resets_and_goaways_by_error_code);
fn http2_resets_and_goaways_by_error_code() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "20", "-c", "1", "--http2", "--streams", "2", "--cacert", ca(), &server.url("/rst")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/errors/h2_rst_stream"), 20);
    assert_eq!(doc["error_details"], serde_json::json!({"h2_rst_stream": {"REFUSED_STREAM": 20}}));

    let doc = engine_json(&["-n", "10", "-c", "1", "--http2", "--cacert", ca(), &server.url("/goaway")]);
    assert_valid(&doc);
    // The GOAWAY's code reaches the engine through h2's connection driver. When the
    // server closes at once after it, h2 may fail writing its own answer first
    // (EPIPE) and end on that I/O error, the code lost: then it is a read error
    // (README "HTTP/2", a known limit). This test server closes at once.
    let goaways = u(&doc, "/errors/h2_goaway");
    assert_eq!(goaways + u(&doc, "/errors/read"), 10, "{doc:#}");
    if goaways > 0 {
        assert_eq!(doc["error_details"], serde_json::json!({"h2_goaway": {"ENHANCE_YOUR_CALM": goaways}}));
    }
}

#[test]
fn http2_page_mode_one_connection_per_visitor() {
    let server = TlsServer::start(Options::default());
    let args = ["-n", "30", "-c", "3", "--http2", "--page", "/", "--assets", "/a,/b,/c,/d", "--cacert", ca()];
    let mut all = args.to_vec();
    let url = server.url("");
    all.push(&url);
    let doc = engine_json(&all);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/pages/completed"), 30);
    assert_eq!(u(&doc, "/requests/completed"), 150);
    assert_eq!(u(&doc, "/connections_opened"), 3);
    assert_eq!(server.get(|c| &c.h2_connections), 3);
    assert_eq!(doc["protocol"], "h2");
}

#[test]
fn http2_page_mode_falling_back_opens_a_browsers_connections() {
    // A server that picks HTTP/1.1 (Apache prefork): each visitor gets up to its
    // --page-conns HTTP/1.1 connections, as a browser without HTTP/2 opens — not one
    // connection its dozen streams would queue on (every lane served, none starved).
    let server = TlsServer::start(Options { alpn: vec![b"http/1.1"], ..Options::default() });
    let assets = "/a,/b,/c,/d,/e,/f,/g,/h,/i,/j,/k";
    let args = ["-n", "30", "-c", "2", "--http2", "--page", "/", "--assets", assets, "--page-conns", "6", "--cacert", ca()];
    let mut all = args.to_vec();
    let url = server.url("");
    all.push(&url);
    let doc = engine_json(&all);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/pages/completed"), 30);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(doc["protocol"], "http/1.1");
    let opened = u(&doc, "/connections_opened");
    assert!((3..=12).contains(&opened), "{opened} connections for 2 visitors of 6");
    assert_eq!(server.get(|c| &c.h2_connections), 0);
}

#[test]
fn http2_open_loop_and_stages() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["--rate", "500", "-d", "1s", "-c", "2", "--streams", "4", "--http2", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    let completed = u(&doc, "/requests/completed");
    assert!((450..=500).contains(&completed), "{completed}");
    assert_eq!(u(&doc, "/requests/not_sent"), 0);

    let doc = engine_json(&["--stages", "500ms:1,500ms:2", "--streams", "2", "--http2", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(doc["stages"].as_array().unwrap().len(), 2);
    assert!(u(&doc, "/stages/1/requests/completed") > 0);
    assert_eq!(u(&doc, "/requests/failed"), 0);
}

on_both_loops!(text_report_names_the_handshakes);
fn text_report_names_the_handshakes() {
    let server = TlsServer::start(Options::default());
    let run = engine(&["-n", "20", "-c", "1", "--http2", "--cacert", ca(), &server.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("TLS handshakes:     1 full, 0 resumed"), "{}", run.stdout);
    assert!(run.stdout.contains("h2 TLSv1.3"), "{}", run.stdout);
    assert!(run.stdout.contains("Protocol spoken:    h2"), "{}", run.stdout);
    // One stream a connection: every response its own read, so no coalesced waits
    // (client/pacer.rs); several streams a connection pace, and the report says so.
    // Only the direct loop paces.
    let asked = std::env::var("STACKBENCH_LOAD_WAIT").unwrap_or_default();
    let direct = common::loops::current() == "direct";
    assert_eq!(run.stdout.contains("Coalesced waits"), direct && asked == "pace", "{}", run.stdout);
    if direct && asked != "block" {
        let run = engine(&["-n", "200", "-c", "2", "--http2", "--streams", "4", "--cacert", ca(), &server.url("/")]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        assert!(run.stdout.contains("Coalesced waits: "), "{}", run.stdout);
    }
}

#[test]
fn slow_readers_over_tls() {
    // 100 KB at 200 KB/s: about half a second per response, whatever TLS buffers.
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "2", "-c", "1", "--read-rate", "200000", "--cacert", ca(), &server.url("/bytes/100000")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 2);
    assert_eq!(u(&doc, "/bytes/body_received"), 200_000);
    let p50 = u(&doc, "/latency_us/percentiles/50");
    assert!((400_000..1_500_000).contains(&p50), "{p50}");

    // HTTP/2: DATA frames consumed (and the window given back) at the same pace.
    let doc = engine_json(&["-n", "2", "-c", "1", "--http2", "--read-rate", "200000", "--cacert", ca(), &server.url("/bytes/100000")]);
    assert_valid(&doc);
    assert_eq!(doc["protocol"], "h2");
    assert_eq!(u(&doc, "/bytes/body_received"), 200_000);
    let p50 = u(&doc, "/latency_us/percentiles/50");
    assert!((400_000..1_500_000).contains(&p50), "{p50}");
}

on_both_loops!(count_header_over_http2_and_its_fallback);
fn count_header_over_http2_and_its_fallback() {
    let server = TlsServer::start(Options::default());
    let doc = engine_json(&["-n", "200", "-c", "2", "--http2", "--streams", "4", "--count-header", "X-Served-By", "--cacert", ca(), &server.url("/")]);
    assert_valid(&doc);
    assert_eq!(doc["header_counts"], serde_json::json!({"X-Served-By": {"h2": 200}}));
    let old = TlsServer::start(Options { alpn: vec![b"http/1.1"], ..Options::default() });
    let doc = engine_json(&["-n", "100", "-c", "2", "--http2", "--streams", "4", "--count-header", "X-Served-By", "--cacert", ca(), &old.url("/")]);
    assert_eq!(doc["header_counts"], serde_json::json!({"X-Served-By": {"h1": 100}}));
}

on_both_loops!(http2_url_mix_warmup_and_status_codes);
fn http2_url_mix_warmup_and_status_codes() {
    let server = TlsServer::start(Options::default());
    let (ok, missing) = (server.url("/"), server.url("/404"));
    let doc = engine_json(&[
        "-d", "1s", "--warmup", "300ms", "-c", "2", "--http2", "--streams", "4", "--cacert", ca(),
        "--url", &format!("{ok}=3"), "--url", &format!("{missing}=1"),
    ]);
    assert_valid(&doc);
    assert_eq!(doc["protocol"], "h2");
    let completed = u(&doc, "/requests/completed");
    assert_eq!(u(&doc, "/status_codes/200") + u(&doc, "/status_codes/404"), completed);
    assert_eq!(u(&doc, "/requests/non_2xx"), u(&doc, "/status_codes/404"));
    let per_url = doc["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 2);
    assert_eq!(u(&per_url[1], "/requests/non_2xx"), u(&per_url[1], "/requests/completed"));
    assert!(u(&per_url[0], "/requests/completed") > 2 * u(&per_url[1], "/requests/completed"));
    // The warm-up's requests reached the server but not the result.
    assert!(server.get(|c| &c.requests) > completed + 100, "{} vs {completed}", server.get(|c| &c.requests));
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 1);
    assert_eq!(u(&timeline[0], "/requests"), completed);
}

#[test]
fn https_runs_on_the_direct_loop_with_the_task_loops_counts() {
    // client/direct.rs carries https/1.1 (rustls's records, direct_tls.rs) and
    // HTTP/2 (direct_h2.rs). Same load on either loop: the same requests, bytes and
    // handshakes, by the engine's count and the server's.
    let server = TlsServer::start(Options::default());
    let on = |lp: &str, args: &[&str]| {
        let mut all = vec!["--json", "--cacert", ca()];
        all.extend_from_slice(args);
        let run = engine_with_env(&[("STACKBENCH_LOAD_LOOP", lp)], &all);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()
    };
    let big = server.url("/bytes/300000");
    for lp in ["direct", "tasks"] {
        let before = (server.get(|c| &c.requests), server.get(|c| &c.full), server.get(|c| &c.resumed));
        let kept = on(lp, &["-n", "300", "-c", "3", &server.url("/")]);
        assert_eq!(kept["event_loop"], lp);
        assert_eq!(u(&kept, "/requests/completed"), 300);
        assert_eq!(u(&kept, "/bytes/body_received"), 300 * 12);
        assert_eq!(u(&kept, "/tls/handshakes/full"), 3);
        let large = on(lp, &["-n", "20", "-c", "2", &big]);
        assert_eq!(u(&large, "/bytes/body_received"), 20 * 300_000, "{lp}");
        let resumed = on(lp, &["-n", "100", "-c", "1", "--handshake", "resumed", &server.url("/")]);
        assert_eq!(resumed["event_loop"], lp);
        assert_eq!(u(&resumed, "/requests/completed"), 100);
        assert_eq!((u(&resumed, "/tls/handshakes/full"), u(&resumed, "/tls/handshakes/resumed")), (1, 99), "{lp}");
        assert_eq!(u(&resumed, "/connections_opened"), 100);
        let after = (server.get(|c| &c.requests), server.get(|c| &c.full), server.get(|c| &c.resumed));
        assert_eq!((after.0 - before.0, after.1 - before.1, after.2 - before.2), (420, 3 + 2 + 1, 99), "{lp}");
    }
    // HTTP/2 (direct_h2.rs): streams on shared connections, the same counts.
    for lp in ["direct", "tasks"] {
        let before = server.get(|c| &c.requests);
        let h2 = on(lp, &["-n", "600", "-c", "2", "--http2", "--streams", "6", &server.url("/")]);
        assert_eq!(h2["event_loop"], lp);
        assert_eq!(h2["protocol"], "h2");
        assert_eq!(u(&h2, "/requests/completed"), 600);
        assert_eq!(u(&h2, "/bytes/body_received"), 600 * 12);
        assert_eq!(u(&h2, "/connections_opened"), 2, "{lp}");
        assert_eq!(server.get(|c| &c.requests) - before, 600);
        // The direct HTTP/2 loop paces by default with several streams a connection
        // (client/pacer.rs) and says so.
        let paces = lp == "direct" && std::env::var("STACKBENCH_LOAD_WAIT").as_deref() != Ok("block");
        assert_eq!(h2["engine_cpu"]["paced"].is_object(), paces, "{lp}: {}", h2["engine_cpu"]);
        let big = on(lp, &["-n", "30", "-c", "1", "--http2", "--streams", "3", &big]);
        assert_eq!(u(&big, "/bytes/body_received"), 30 * 300_000, "{lp}");
    }
}

on_both_loops!(http2_a_goaway_does_not_hold_new_requests_behind_a_slow_stream);
fn http2_a_goaway_does_not_hold_new_requests_behind_a_slow_stream() {
    // nginx after keepalive_requests: GOAWAY (NO_ERROR) while a slow response is in
    // flight. New requests go on a new connection at once (as the h2 crate reconnects),
    // not after the slow stream ends; the slow one finishes on the old connection.
    let server = TlsServer::start(Options { goaway_after: Some(30), ..Options::default() });
    let (fast, slow) = (server.url("/"), server.url("/slow/700"));
    let doc = engine_json(&[
        "-d", "2s", "-c", "1", "--http2", "--streams", "4", "--timeout", "5s", "--cacert", ca(),
        "--url", &format!("{fast}=30"), "--url", &format!("{slow}=1"),
    ]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/failed"), 0, "{doc:#}");
    let per_url = doc["per_url"].as_array().unwrap();
    assert!(u(&per_url[1], "/requests/completed") >= 1, "a slow one came back");
    assert!(u(&doc, "/connections_opened") >= 3, "{doc:#}");
    // Held behind a slow stream, a fast request would wait ~700 ms.
    let fast_max = u(&per_url[0], "/latency_us/max");
    assert!(fast_max < 350_000, "a fast request waited {fast_max} µs");
}

#[test]
fn visits_over_https_each_a_new_visitor_with_its_handshake() {
    // Visits run on the task loop. Each visit is a new visitor: its own connection, so
    // its own full handshake (one connection: the page, then its one asset on it).
    let server = TlsServer::start(Options::default());
    let journey = r#"{"steps": [{"page": "/", "assets": ["/bytes/100"]}, {"page": "/404"}]}"#;
    let doc = engine_json(&["-n", "6", "-c", "2", "--journey", journey, "--cacert", ca(), &server.url("")]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/visits/completed"), u(&doc, "/visits/requests")), (6, 18));
    assert_eq!(u(&doc, "/tls/handshakes/full"), 6);
    assert_eq!(server.get(|c| &c.full), 6);
    assert_eq!(server.get(|c| &c.requests), 18);
    assert_eq!(u(&doc, "/status_codes/404"), 6, "a page with any status is a page view");
}
