//! The io_uring I/O path (`--io uring`) end to end: the result says which path
//! ran, counts match the server's, HTTPS and HTTP/2 ride on it, and a machine
//! where io_uring cannot be set up falls back to epoll with a warning.
//! (`STACKBENCH_TEST_IO=uring cargo test` runs every other engine test on it too.)

mod common;

use common::tls::{Options, TlsServer, certs};
use common::{TestServer, assert_valid, engine, engine_json, engine_with_env, u, warning_codes, warning_params};

#[test]
fn the_result_says_which_path_ran_and_counts_match_the_server() {
    for io in ["epoll", "uring"] {
        let server = TestServer::start();
        let doc = engine_json(&["--io", io, "-n", "2000", "-c", "16", "-t", "2", &server.url("/cl/12")]);
        assert_valid(&doc);
        assert_eq!((doc["io"].as_str(), doc["config"]["io"].as_str()), (Some(io), Some(io)));
        assert_eq!(u(&doc, "/requests/completed"), 2000, "{io}");
        assert_eq!(server.requests(), 2000, "{io}: the server saw exactly -n requests");
        assert_eq!(u(&doc, "/bytes/body_received"), 24_000);
        assert!(warning_codes(&doc).iter().all(|&c| c != "io_fallback"));
    }
}

#[test]
fn large_chunked_and_until_close_bodies_on_uring() {
    let server = TestServer::start();
    let doc = engine_json(&["--io", "uring", "-n", "40", "-c", "2", &server.url("/cl/300000")]);
    assert_eq!((u(&doc, "/bytes/body_received"), u(&doc, "/requests/failed")), (40 * 300_000, 0));
    let doc = engine_json(&["--io", "uring", "-n", "200", "-c", "4", &server.url("/chunked/1000/7")]);
    assert_eq!((u(&doc, "/bytes/body_received"), u(&doc, "/connections_opened")), (200_000, 4));
    let doc = engine_json(&["--io", "uring", "-n", "40", "-c", "2", &server.url("/untilclose/5000")]);
    assert_eq!((u(&doc, "/bytes/body_received"), u(&doc, "/connections_opened")), (40 * 5000, 40));
    // A kept-alive connection the server closed while idle: retried, no error.
    let doc = engine_json(&["--io", "uring", "-n", "200", "-c", "4", &server.url("/idleclose/12")]);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (200, 0), "{doc:#}");
}

#[test]
fn https_and_http2_ride_on_uring() {
    let server = TlsServer::start(Options::default());
    let ca = &certs().ca;
    let doc = engine_json(&["--io", "uring", "-n", "500", "-c", "4", "--cacert", ca, &server.url("/")]);
    assert_valid(&doc);
    assert_eq!((doc["io"].as_str(), doc["protocol"].as_str()), (Some("uring"), Some("http/1.1")));
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/tls/handshakes/full")), (500, 4), "{doc:#}");
    let doc = engine_json(&["--io", "uring", "-n", "2000", "-c", "2", "--http2", "--streams", "8", "--cacert", ca, &server.url("/")]);
    assert_valid(&doc);
    assert_eq!((doc["io"].as_str(), doc["protocol"].as_str()), (Some("uring"), Some("h2")));
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (2000, 0), "{doc:#}");
}

#[test]
fn a_closed_connections_last_send_never_reaches_the_next_one() {
    // Each handshake fails on the client's side, which sends an alert and closes:
    // the alert's send, still queued, named the fd by number, and the next
    // connection got that number — the server then read the old alert on the new
    // connection ("UnexpectedMessage"). Queued operations go out before the close.
    let server = TlsServer::start(Options::default());
    let other_ca = &certs().other_ca;
    let doc = engine_json(&["--io", "uring", "-n", "40", "-c", "2", "--timeout", "2s", "--cacert", other_ca, &server.url("/")]);
    assert_eq!(doc["error_details"], serde_json::json!({"tls_untrusted": {"unknown_issuer": 40}}), "{doc:#}");
}

#[test]
fn without_io_uring_the_run_falls_back_to_epoll_and_says_so() {
    let server = TestServer::start();
    // EPERM, as under kernel.io_uring_disabled = 2 or a seccomp filter.
    let hook = [("STACKBENCH_LOAD_URING_SETUP_ERRNO", "1")];
    let run = engine_with_env(&hook, &["--json", "--io", "uring", "-n", "300", "-c", "4", &server.url("/cl/12")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    assert_valid(&doc);
    assert_eq!((doc["io"].as_str(), doc["config"]["io"].as_str()), (Some("epoll"), Some("uring")));
    assert_eq!(u(&doc, "/requests/completed"), 300);
    assert_eq!(warning_codes(&doc)[0], "io_fallback", "{doc:#}");
    let params = warning_params(&doc, "io_fallback");
    assert_eq!((params["asked"].as_str(), params["used"].as_str()), (Some("uring"), Some("epoll")));
    assert!(params["reason"].as_str().unwrap().contains("os error 1"), "{params}");
    // The text output says it too; an epoll run never does.
    let text = engine_with_env(&hook, &["--io", "uring", "-n", "50", "-c", "1", &server.url("/cl/12")]);
    assert!(text.stdout.contains("--io uring was asked for, but io_uring is not available here"), "{}", text.stdout);
    let plain = engine_with_env(&hook, &["--io", "epoll", "-n", "50", "-c", "1", &server.url("/cl/12")]);
    assert!(!plain.stdout.contains("io_uring"), "{}", plain.stdout);
}

#[test]
fn more_connections_a_thread_than_the_ring_serves_run_on_epoll_and_say_so() {
    // 600 connections on one thread: over the io_uring path's 512 (its shared
    // receive buffers); two threads of 300 each stay on io_uring.
    let server = TestServer::start();
    let doc = engine_json(&["--io", "uring", "-n", "1200", "-c", "600", &server.url("/cl/12")]);
    assert_eq!((doc["io"].as_str(), doc["config"]["io"].as_str()), (Some("epoll"), Some("uring")));
    assert_eq!(u(&doc, "/requests/completed"), 1200);
    let params = warning_params(&doc, "io_fallback");
    assert!(params["reason"].as_str().unwrap().contains("at most 512 connections a thread"), "{params}");
    let doc = engine_json(&["--io", "uring", "-t", "2", "-n", "1200", "-c", "600", &server.url("/cl/12")]);
    assert_eq!(doc["io"].as_str(), Some("uring"));
    assert!(warning_codes(&doc).iter().all(|&c| c != "io_fallback"));
}

#[test]
fn io_takes_epoll_or_uring_only() {
    let run = engine(&["--io", "kqueue", "-n", "1", "http://127.0.0.1:9/"]);
    assert_eq!(run.code, 2);
    assert!(run.stderr.contains("use epoll or uring"), "{}", run.stderr);
}
