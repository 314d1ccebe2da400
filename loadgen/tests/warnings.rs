//! End-to-end tests of the structured warnings: each kind of warning a run can
//! provoke against the test server comes with its code in `warning_codes`, at the
//! same index as its sentence, with the numbers of the document. Two kinds need
//! conditions a test cannot set up quickly and reliably (a saturated engine
//! thread, latencies over 60 s); report/warnings.rs tests all thirteen on
//! constructed inputs, and checks them against the schema's list.
//! Every run is bounded (by -n/-d, --timeout, and a 30 s kill in `engine`).

mod common;

use common::{TestServer, assert_valid, engine_json, u, warning_codes, warning_params};

/// The codes of a run, without `engine_saturated`: whether a short, fast run keeps
/// the engine thread 90 % busy depends on the machine, not on what is tested.
fn codes(doc: &serde_json::Value) -> Vec<&str> {
    warning_codes(doc).into_iter().filter(|&c| c != "engine_saturated").collect()
}

on_both_loops!(nobody_served_nothing_ended_and_requests_left_waiting);
fn nobody_served_nothing_ended_and_requests_left_waiting() {
    // Accepts no connection: every request waits in the accept queue all run.
    let server = TestServer::serving_only(0);
    let doc = engine_json(&["-c", "2", "-d", "300ms", "--timeout", "5s", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), ["no_response_all", "in_flight_old", "no_requests", "short_run"], "{doc:#}");
    assert_eq!(warning_params(&doc, "no_response_all")["connections"], 2);
    let old = warning_params(&doc, "in_flight_old");
    assert_eq!(old["count"], 2);
    assert_eq!((old["threshold_us"].as_u64(), old["slowest_us"].as_u64()), (Some(100_000), Some(0)));
    assert_eq!(old["oldest_us"].as_u64(), Some(u(&doc, "/requests/in_flight_oldest_us")));
    assert_eq!(warning_params(&doc, "no_requests"), &serde_json::json!({}));
    assert_eq!(warning_params(&doc, "short_run")["duration_us"].as_u64(), Some(u(&doc, "/duration_us")));
}

on_both_loops!(some_clients_unserved);
fn some_clients_unserved() {
    let server = TestServer::serving_only(1);
    let doc = engine_json(&["-c", "3", "-d", "300ms", "--timeout", "5s", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc)[0], "clients_unserved", "{doc:#}");
    let p = warning_params(&doc, "clients_unserved");
    assert_eq!((p["without_response"].as_u64(), p["connections"].as_u64()), (Some(2), Some(3)));
}

on_both_loops!(target_down_and_requests_failed);
fn target_down_and_requests_failed() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let doc = engine_json(&["-n", "10", "-c", "2", &format!("http://127.0.0.1:{port}/")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), ["no_response_all", "target_down", "requests_failed"], "{doc:#}");
    assert_eq!(warning_params(&doc, "no_response_all")["connections"], 2);
    assert_eq!(warning_params(&doc, "target_down")["connect_errors"], 10);
    let p = warning_params(&doc, "requests_failed");
    assert_eq!(p, &serde_json::json!({"share": 1.0, "failed": 10, "attempted": 10, "errors": {"connect": 10}}));
}

on_both_loops!(server_closing_after_every_response);
fn server_closing_after_every_response() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "200", "-c", "4", &server.url("/close/12")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), ["server_closed_keepalive"], "{doc:#}");
    let p = warning_params(&doc, "server_closed_keepalive");
    assert_eq!(p["connections_opened"].as_u64(), Some(u(&doc, "/connections_opened")));
    assert_eq!(p["responses"], 200);
}

on_both_loops!(non_2xx_responses);
fn non_2xx_responses() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "50", "-c", "2", &server.url("/status/404")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), ["non_2xx"], "{doc:#}");
    assert_eq!(warning_params(&doc, "non_2xx"), &serde_json::json!({"count": 50, "share": 1.0}));
}

#[test]
fn open_loop_too_few_connections_for_the_rate() {
    // One connection, a 50 ms server, 1000 requests/s asked: too few connections
    // for the timer (1000 × 2 ms = 2) and only ~20 requests/s sent.
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "1000", "-d", "500ms", "-c", "1", &server.url("/slow/50/12")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), ["rate_timer_resolution", "rate_not_reached", "short_run"], "{doc:#}");
    assert_eq!(
        warning_params(&doc, "rate_timer_resolution"),
        &serde_json::json!({"connections": 1, "rate": 1000.0, "min_connections": 2})
    );
    let p = warning_params(&doc, "rate_not_reached");
    assert_eq!((p["rate"].as_f64(), p["connections"].as_u64()), (Some(1000.0), Some(1)));
    let sent = p["sent_per_s"].as_f64().unwrap();
    assert!((5.0..100.0).contains(&sent), "sent {sent}/s");
}

on_both_loops!(a_clean_run_has_no_codes);
fn a_clean_run_has_no_codes() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "200", "-c", "2", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(codes(&doc), [] as [&str; 0], "{doc:#}");
}
