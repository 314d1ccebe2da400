//! End-to-end tests: the real binary against the misbehaving test server.
//! Every run is bounded (by -n/-d, --timeout, and a 30 s kill in `engine`).

mod common;

use common::{TestServer, assert_valid, engine, engine_json, engine_under_ulimit, engine_with_env, schema, schema_errors, u};
use serde_json::json;

on_both_loops!(exact_request_count_and_schema);
fn exact_request_count_and_schema() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "1000", "-c", "8", "-t", "2", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 1000);
    assert_eq!(u(&doc, "/requests/ok_2xx"), 1000);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(server.requests(), 1000, "the server must see exactly -n requests");
    assert_eq!(u(&doc, "/bytes/body_received"), 12_000);
    assert_eq!(u(&doc, "/status_codes/200"), 1000);
    assert_eq!(u(&doc, "/latency_us/count"), 1000);
    assert_eq!(u(&doc, "/phases_us/connect/count"), 1000);
    assert_eq!(u(&doc, "/connections_opened"), 8);
    assert!(doc["latency_uncorrected_us"].is_null());
    assert_eq!(doc["stages"], serde_json::json!([]));
    assert_eq!(doc["config"]["duration_us"], serde_json::Value::Null);

    // The validator really checks: a broken copy must fail.
    let mut broken = doc.clone();
    broken["errors"].as_object_mut().unwrap().remove("parse");
    broken["latency_us"]["percentiles"]["50"] = serde_json::json!("fast");
    assert_eq!(schema_errors(&broken).len(), 2, "{:?}", schema_errors(&broken));
}

on_both_loops!(chunked_bodies_are_read_fully);
fn chunked_bodies_are_read_fully() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "200", "-c", "4", &server.url("/chunked/1000/7")]);
    assert_eq!(u(&doc, "/requests/completed"), 200);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(u(&doc, "/bytes/body_received"), 200_000);
    assert_eq!(u(&doc, "/connections_opened"), 4, "chunked responses keep the connection alive");
}

on_both_loops!(large_and_until_close_bodies);
fn large_and_until_close_bodies() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "40", "-c", "2", &server.url("/cl/300000")]);
    assert_eq!(u(&doc, "/bytes/body_received"), 40 * 300_000);
    assert_eq!(u(&doc, "/requests/failed"), 0);

    let doc = engine_json(&["-n", "40", "-c", "2", &server.url("/untilclose/5000")]);
    assert_eq!(u(&doc, "/requests/completed"), 40);
    assert_eq!(u(&doc, "/bytes/body_received"), 40 * 5000);
    assert_eq!(u(&doc, "/connections_opened"), 40);
}

on_both_loops!(bodies_discarded_in_the_kernel_count_as_bodies_read);
fn bodies_discarded_in_the_kernel_count_as_bodies_read() {
    // Large Content-Length and chunked bodies go by unseen (recv MSG_TRUNC) unless
    // --read-bodies: the same responses, the same body bytes, the same connections.
    let server = TestServer::start();
    for path in ["/cl/300000", "/chunked/300000/70000", "/chunked/20000/7"] {
        let discarded = engine_json(&["-n", "30", "-c", "2", &server.url(path)]);
        let read = engine_json(&["-n", "30", "-c", "2", "--read-bodies", &server.url(path)]);
        for doc in [&discarded, &read] {
            assert_eq!(u(doc, "/requests/completed"), 30, "{path}");
            assert_eq!(u(doc, "/requests/failed"), 0, "{path}");
            assert_eq!(u(doc, "/connections_opened"), 2, "{path}: kept alive");
        }
        let body = if path.starts_with("/cl") { 300_000 } else if path.ends_with("/7") { 20_000 } else { 300_000 };
        assert_eq!(u(&discarded, "/bytes/body_received"), 30 * body, "{path}");
        assert_eq!(u(&read, "/bytes/body_received"), 30 * body, "{path}");
    }
}

on_both_loops!(a_discarded_body_in_pieces_ends_with_its_last_piece_and_holds_nothing_back);
fn a_discarded_body_in_pieces_ends_with_its_last_piece_and_holds_nothing_back() {
    // A 300 KB body written in 4 pieces 5 ms apart, then a 12-byte response on the
    // same connection: the engine waits for the whole rest of the big body at once
    // (its receive low-water mark raised), then lowers the mark, so the small
    // response is read as soon as it comes — never held back to the timeout.
    let server = TestServer::start();
    let base = server.url("/");
    let doc = engine_json(&["-n", "40", "-c", "1", "--timeout", "2s", "--url", "/pieces/300000/4/5", "--url", "/cl/12", &base]);
    assert_eq!(u(&doc, "/requests/completed"), 40);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(u(&doc, "/connections_opened"), 1);
    let per_url = doc["per_url"].as_array().expect("per-URL rows");
    let small = per_url.iter().find(|r| r["path"] == "/cl/12").expect("the 12-byte URL");
    let big = per_url.iter().find(|r| r["path"] == "/pieces/300000/4/5").expect("the 300 KB URL");
    assert_eq!(u(big, "/requests/completed") * 300_000 + u(small, "/requests/completed") * 12, u(&doc, "/bytes/body_received"));
    assert!(u(big, "/latency_us/min") >= 20_000, "the big body takes its 4 pieces' 20 ms");
    assert!(u(small, "/latency_us/max") < 200_000, "a small response after a big one is not held back: {}", small["latency_us"]);
}

#[test]
fn closed_loop_http_runs_on_the_direct_loop_and_every_other_load_on_tasks() {
    // The direct loop (client/direct.rs) carries closed-loop HTTP/1.1 on clear TCP;
    // the document says which loop drove the run, and the same load forced onto the
    // task loop counts the same requests the server counted.
    let server = TestServer::start();
    let url = server.url("/cl/12");
    let loop_of = |doc: &serde_json::Value| doc["event_loop"].as_str().unwrap_or_default().to_string();
    // The default, whatever the suite's own STACKBENCH_LOAD_LOOP.
    let default = |args: &[&str]| {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let run = engine_with_env(&[("STACKBENCH_LOAD_LOOP", "direct")], &all);
        assert_eq!(run.code, 0, "{}", run.stderr);
        run.json()
    };
    let direct = default(&["-n", "500", "-c", "4", &url]);
    assert_eq!(loop_of(&direct), "direct");
    assert_eq!(u(&direct, "/requests/completed"), 500);
    for other in [&["--rate", "400", "-n", "50"][..], &["--stages", "200ms:1,200ms:2"][..], &["-n", "50", "--read-rate", "1000000"][..]] {
        let mut args = other.to_vec();
        args.extend(["-c", "2", url.as_str()]);
        assert_eq!(loop_of(&default(&args)), "tasks", "{other:?}");
    }
    let before = server.requests();
    let forced = engine_with_env(&[("STACKBENCH_LOAD_LOOP", "tasks")], &["--json", "-n", "500", "-c", "4", &url]);
    assert_eq!(forced.code, 0, "{}", forced.stderr);
    let forced = forced.json();
    assert_eq!(loop_of(&forced), "tasks");
    assert_eq!(u(&forced, "/requests/completed"), 500);
    assert_eq!(server.requests() - before, 500);
}

#[test]
fn coalesced_waits_are_asked_for_on_http1_say_how_often_and_count_what_the_server_counts() {
    // Coalesced waits (client/pacer.rs) pace HTTP/1.1 only with STACKBENCH_LOAD_WAIT=pace
    // (HTTP/2 with several streams a connection by default: tls.rs): the document says how many timed sleeps the
    // measured phase took and what they found (at most one event a connection a sleep:
    // epoll reports a socket once a call), and the requests are the server's count
    // either way.
    let server = TestServer::start();
    let url = server.url("/cl/12");
    for wait in ["", "pace", "block"] {
        let before = server.requests();
        let run = engine_with_env(&[("STACKBENCH_LOAD_WAIT", wait), ("STACKBENCH_LOAD_LOOP", "direct")],
                                  &["--json", "-d", "1s", "-c", "32", &url]);
        assert_eq!(run.code, 0, "{}", run.stderr);
        let doc = run.json();
        assert_valid(&doc);
        let paced = &doc["engine_cpu"]["paced"];
        if wait == "pace" {
            assert!(u(&doc, "/engine_cpu/paced/events_found") <= u(&doc, "/engine_cpu/paced/sleeps") * 32, "{paced}");
        } else {
            assert!(paced.is_null(), "{wait:?}: {paced}");
        }
        let done = u(&doc, "/requests/completed") + u(&doc, "/requests/failed");
        let in_flight = u(&doc, "/requests/in_flight_at_end");
        let served = server.requests() - before;
        assert!(served >= done && served <= done + in_flight + 32, "server {served}, engine {done} + {in_flight} in flight");
    }
}

on_both_loops!(a_server_end_right_behind_a_response_is_seen_before_the_next_request_waits);
fn a_server_end_right_behind_a_response_is_seen_before_the_next_request_waits() {
    // The server half-closes after each keep-alive response and keeps reading: the
    // next request on that connection would wait for nothing. The end is read first
    // and the request goes on a new connection (the one retry), never a timeout.
    let server = TestServer::start();
    let doc = engine_json(&["-n", "60", "-c", "3", "--timeout", "3s", &server.url("/halfclose/12")]);
    assert_eq!(u(&doc, "/requests/completed"), 60);
    assert_eq!(u(&doc, "/requests/failed"), 0, "{}", doc["errors"]);
    assert!(u(&doc, "/duration_us") < 3_000_000, "no request waited for its timeout");
}

on_both_loops!(no_keepalive_opens_one_connection_per_request);
fn no_keepalive_opens_one_connection_per_request() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "300", "-c", "4", "--no-keepalive", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 300);
    assert_eq!(u(&doc, "/connections_opened"), 300);
    assert_eq!(server.accepts(), 300);
    assert_eq!(server.requests(), 300);
    assert_eq!(doc["config"]["keepalive"], false);
    // Every request paid a connect.
    assert!(u(&doc, "/phases_us/connect/min") > 0);
}

on_both_loops!(server_closing_kept_connections_is_not_an_error);
fn server_closing_kept_connections_is_not_an_error() {
    let server = TestServer::start();
    // Announced with Connection: close.
    let doc = engine_json(&["-n", "200", "-c", "4", &server.url("/close/12")]);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (200, 0));
    assert_eq!(server.accepts(), 200);
    // ... and the result says keep-alive was not in effect (an HTTP/1.0-style server).
    assert!(doc["warnings"].to_string().contains("keep-alive was asked for, but 200 connections"), "{doc:#}");
    // A server that keeps connections open gets no such warning.
    let kept = TestServer::start();
    let doc = engine_json(&["-n", "200", "-c", "4", &kept.url("/")]);
    assert!(!doc["warnings"].to_string().contains("keep-alive was asked for"), "{doc:#}");
    // Silently closed between responses: detected on reuse, retried once.
    let server = TestServer::start();
    let doc = engine_json(&["-n", "200", "-c", "4", &server.url("/idleclose/12")]);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (200, 0), "{doc:#}");
    assert_eq!(server.requests(), 200);
}

fn errors_of(path: &str, class: &str) {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "20", "-c", "2", "--timeout", "3s", &server.url(path)]);
    assert_valid(&doc);
    assert_eq!(u(&doc, &format!("/errors/{class}")), 20, "{path}: {doc:#}");
    assert_eq!(u(&doc, "/requests/failed"), 20, "{path}: each failure in one class only");
    assert_eq!(u(&doc, "/requests/completed"), 0, "{path}");
    assert!(doc["latency_us"]["percentiles"]["99"].is_null());
    assert!(doc["phases_us"]["total"]["mean"].is_null());
    assert!(!doc["warnings"].as_array().unwrap().is_empty());
}

on_both_loops!(malformed_status_line_is_a_parse_error);
fn malformed_status_line_is_a_parse_error() {
    errors_of("/badstatus", "parse");
}

on_both_loops!(bogus_chunk_size_is_a_parse_error);
fn bogus_chunk_size_is_a_parse_error() {
    errors_of("/badchunk", "parse");
}

on_both_loops!(huge_head_is_too_large);
fn huge_head_is_too_large() {
    // 1,100 header lines, 60 KB: over the 100-line bound (README "Bounds").
    errors_of("/hugeheaders", "too_large");
}

on_both_loops!(short_body_is_a_length_mismatch);
fn short_body_is_a_length_mismatch() {
    errors_of("/shortbody", "length_mismatch");
}

on_both_loops!(eof_inside_a_chunk_is_a_length_mismatch);
fn eof_inside_a_chunk_is_a_length_mismatch() {
    errors_of("/eofmid", "length_mismatch");
}

on_both_loops!(reset_mid_body_is_a_reset);
fn reset_mid_body_is_a_reset() {
    errors_of("/rstmid", "reset");
}

on_both_loops!(timeouts_are_counted_and_bounded);
fn timeouts_are_counted_and_bounded() {
    let server = TestServer::start();
    let run = engine(&["--json", "-n", "4", "-c", "2", "--timeout", "300ms", &server.url("/stall")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    assert_valid(&doc);
    assert_eq!(u(&doc, "/errors/timeout"), 4);
    assert_eq!(u(&doc, "/requests/failed"), 4);
    assert!(run.elapsed.as_secs_f64() < 5.0, "took {:?}", run.elapsed);
}

on_both_loops!(connection_refused_is_a_connect_error);
fn connection_refused_is_a_connect_error() {
    // Bind then drop: a port that was free a moment ago and has no listener now.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let doc = engine_json(&["-n", "10", "-c", "2", &format!("http://127.0.0.1:{port}/")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/errors/connect"), 10);
    assert_eq!(u(&doc, "/requests/failed"), 10);
    assert_eq!(u(&doc, "/connections_opened"), 0, "a refused connect opened nothing");
    // The warning says the target is down, and gives no "add threads" advice.
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("no connection to the target succeeded"), "{warnings}");
    assert!(!warnings.contains("add threads"), "{warnings}");
}

on_both_loops!(non_2xx_are_complete_responses);
fn non_2xx_are_complete_responses() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "50", "-c", "2", &server.url("/status/404")]);
    assert_eq!(u(&doc, "/requests/completed"), 50);
    assert_eq!(u(&doc, "/requests/non_2xx"), 50);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(u(&doc, "/status_codes/404"), 50);
}

on_both_loops!(duration_warmup_and_timeline);
fn duration_warmup_and_timeline() {
    let server = TestServer::start();
    let doc = engine_json(&["-d", "1500ms", "--warmup", "300ms", "-c", "4", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/duration_us"), 1_500_000);
    assert_eq!(u(&doc, "/config/warmup_us"), 300_000);
    let timeline = doc["timeline"].as_array().unwrap();
    assert_eq!(timeline.len(), 2, "one entry per whole or partial second");
    let per_second: u64 = timeline.iter().map(|e| e["requests"].as_u64().unwrap()).sum();
    assert_eq!(per_second, u(&doc, "/requests/completed"));
    assert!(u(&doc, "/requests/completed") > 100);
    // Warm-up requests reached the server but were not counted.
    assert!(server.requests() > u(&doc, "/requests/completed"));
    assert!(doc["engine_cpu"]["max_thread_busy"].as_f64().is_some());
}

#[test]
fn open_loop_keeps_its_rate() {
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "200", "-d", "1s", "-c", "4", &server.url("/cl/12")]);
    assert_valid(&doc);
    let completed = u(&doc, "/requests/completed");
    assert!((180..=201).contains(&completed), "completed {completed}");
    assert!(doc["latency_uncorrected_us"].is_object());
    assert_eq!(doc["config"]["rate"], 200.0);
}

#[test]
fn open_loop_exact_count() {
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "2000", "-n", "500", "-c", "4", "-t", "2", &server.url("/cl/12")]);
    assert_eq!(u(&doc, "/requests/completed"), 500);
    assert_eq!(server.requests(), 500);
}

#[test]
fn open_loop_corrects_coordinated_omission() {
    // One connection, a 50 ms server, 100 requests/s asked: only ~20/s can be sent.
    // A closed-loop view says ~50 ms; from the intended times, latency keeps growing.
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "100", "-d", "1s", "-c", "1", &server.url("/slow/50/12")]);
    assert_valid(&doc);
    let p50_unc = u(&doc, "/latency_uncorrected_us/percentiles/50");
    let p99 = u(&doc, "/latency_us/percentiles/99");
    assert!((50_000..150_000).contains(&p50_unc), "uncorrected p50 {p50_unc}");
    assert!(p99 > 500_000, "corrected p99 {p99} must include the queueing delay");
    let warnings = doc["warnings"].to_string();
    assert!(warnings.contains("requests/s asked for were sent"), "{warnings}");
}

#[test]
fn open_loop_sees_a_freezing_server_as_users_would() {
    // The server freezes 500 ms of every 1000 ms. Users arriving at a constant rate
    // during a freeze wait until it ends (0..500 ms), the others not at all: about
    // p90 = 400 ms. A closed-loop view only sees the few requests stuck in flight.
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "1000", "-c", "50", "-d", "2s", &server.url("/freeze/1000/500")]);
    assert_valid(&doc);
    let p90 = u(&doc, "/latency_us/percentiles/90");
    let p90_unc = u(&doc, "/latency_uncorrected_us/percentiles/90");
    eprintln!("corrected {}\nuncorrected {}", doc["latency_us"]["percentiles"], doc["latency_uncorrected_us"]["percentiles"]);
    assert!((250_000..=600_000).contains(&p90), "corrected p90 {p90}");
    assert!(p90_unc < 200_000, "uncorrected p90 {p90_unc}");
    assert!(u(&doc, "/requests/completed") >= 1800);
}

#[test]
fn stages_report_each_step() {
    let server = TestServer::start();
    let doc = engine_json(&["--stages", "400ms:1,400ms:4,300ms:2", &server.url("/cl/12")]);
    assert_valid(&doc);
    let stages = doc["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 3);
    let sum: u64 = stages.iter().map(|s| s["requests"]["completed"].as_u64().unwrap()).sum();
    assert_eq!(sum, u(&doc, "/requests/completed"));
    assert_eq!(stages[1]["connections"], 4);
    assert_eq!(u(&doc, "/config/connections"), 4);
    assert_eq!(u(&doc, "/duration_us"), 1_100_000);
    assert!(stages.iter().all(|s| s["requests"]["completed"].as_u64().unwrap() > 0));
}

on_both_loops!(text_output_reads_like_ab);
fn text_output_reads_like_ab() {
    let server = TestServer::start();
    let run = engine(&["-n", "100", "-c", "2", &server.url("/cl/12")]);
    assert_eq!(run.code, 0);
    for needle in ["Requests per second", "Complete requests:  100", "Connection times (ms)", "99%", "Engine CPU"] {
        assert!(run.stdout.contains(needle), "missing {needle:?} in\n{}", run.stdout);
    }
}

#[test]
fn non_loopback_targets_are_refused() {
    for url in ["http://10.1.2.3/", "http://192.0.2.1:8080/", "http://example.com/"] {
        let run = engine(&["-n", "1", url]);
        assert_eq!(run.code, 2, "{url}");
        assert_eq!(run.stderr.trim().lines().count(), 1, "one line: {}", run.stderr);
        assert!(run.stderr.contains("--allow-remote"), "{}", run.stderr);
        assert!(run.stdout.is_empty());
    }
}

#[test]
fn bad_usage_exits_2_with_one_line() {
    for args in [
        &["https://127.0.0.1/"][..],
        &["-d", "ten", "http://127.0.0.1:1/"],
        &["-c", "1", "-t", "2", "http://127.0.0.1:1/"],
        &["--rate", "0", "http://127.0.0.1:1/"],
        &["--stages", "1s:2", "-d", "1s", "http://127.0.0.1:1/"],
        &["--bogus"],
    ] {
        let run = engine(args);
        assert_eq!(run.code, 2, "{args:?}: {}", run.stderr);
        assert_eq!(run.stderr.trim().lines().count(), 1, "{args:?}: {}", run.stderr);
    }
}

#[test]
fn too_few_file_descriptors_is_a_usage_error() {
    // Soft and hard limit 256: 1000 connections cannot be opened, so the run is
    // refused before it starts (no server needed: nothing connects).
    let run = engine_under_ulimit("-n 256", &["-c", "1000", "-d", "1s", "http://127.0.0.1:1/"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
    assert_eq!(run.stderr.trim().lines().count(), 1, "one line: {}", run.stderr);
    assert!(run.stderr.contains("-c 1000 needs about 1,0"), "{}", run.stderr);
    assert!(
        run.stderr.contains(" file descriptors; this process may open at most 256 (ulimit -n): lower -c or raise the limit"),
        "{}",
        run.stderr
    );
    assert!(run.stdout.is_empty());
}

on_both_loops!(the_soft_file_descriptor_limit_is_raised);
fn the_soft_file_descriptor_limit_is_raised() {
    // Soft limit 128, hard limit untouched: 300 connections held open at once (each
    // request takes 300 ms) need the engine to raise its soft limit; otherwise they
    // would fail to connect (EMFILE).
    let server = TestServer::start();
    let run = engine_under_ulimit("-S -n 128", &["--json", "-n", "300", "-c", "300", "--timeout", "20s",
        &server.url("/slow/300/1")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (300, 0), "{doc:#}");
    assert_eq!(u(&doc, "/connections_opened"), 300);
}

on_both_loops!(head_responses_have_no_body);
fn head_responses_have_no_body() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "50", "-c", "2", "-m", "HEAD", &server.url("/cl/1000")]);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/requests/failed")), (50, 0));
    assert_eq!(u(&doc, "/bytes/body_received"), 0);
    assert_eq!(u(&doc, "/connections_opened"), 2);
    assert_eq!(doc["config"]["method"], "HEAD");
}

// The schema validator the tests use (tests/common/schema.rs): each keyword it knows
// refuses what it should, and its written-out patterns agree with the schema's regexes.
#[test]
fn schema_validator_refuses_what_each_keyword_should() {
    let schema = json!({
        "$defs": {"n": {"type": "integer", "minimum": 0, "maximum": 9}},
        "type": "object",
        "required": ["a"],
        "properties": {"a": {"$ref": "#/$defs/n"}, "b": {"oneOf": [{"type": "null"}, {"type": "string"}]},
                       "c": {"type": "array", "items": {"enum": [1, 2]}, "minItems": 1, "maxItems": 2},
                       "d": {"const": "x"}},
        "patternProperties": {"^[1-5][0-9][0-9]$": {"type": "integer"}},
        "additionalProperties": false,
        "allOf": [{"if": {"required": ["d"], "properties": {"d": {"const": "x"}}}, "then": {"required": ["b"]}}]
    });
    assert_eq!(schema::errors(&schema, &json!({"a": 3, "b": null, "c": [1], "d": "x", "200": 5})), Vec::<String>::new());
    let bad = json!({"a": 10, "b": 1, "c": [3, 1, 2], "d": "y", "200": "ok", "600": 1});
    let found = schema::errors(&schema, &bad);
    assert_eq!(found.len(), 7, "{found:#?}"); // maximum, oneOf, enum, maxItems, const, type, additional
    assert_eq!(schema::errors(&schema, &json!({"d": "x"})).len(), 2, "a and (if d is x) b are required");
    assert_eq!(schema::errors(&schema, &json!({"a": 1.5})).len(), 1, "1.5 is not an integer");
    assert!(schema::errors(&schema, &json!({"a": 1.0})).is_empty(), "1.0 is");
    // numbers are equal by value, for const and enum too
    assert!(schema::errors(&json!({"const": 1, "items": {"enum": [2]}}), &json!(1.0)).is_empty());
    assert_eq!(schema::errors(&json!({"items": {"enum": [2]}}), &json!([2.0, 3])).len(), 1);
    // a bound the validator cannot read is the schema's error, never a silent pass
    assert!(std::panic::catch_unwind(|| schema::errors(&json!({"minimum": "0"}), &json!(1))).is_err());
}

#[test]
fn schema_validator_patterns_match_their_regexes() {
    let percentile = r"^[0-9]+(\.[0-9]+)?$";
    for (name, ok) in [("50", true), ("99.9", true), ("0", true), ("99.", false), (".9", false), ("a", false), ("", false), ("1.2.3", false)] {
        assert_eq!(schema::pattern_matches(percentile, name), ok, "{name}");
    }
    let status = r"^[1-5][0-9][0-9]$";
    for (name, ok) in [("200", true), ("599", true), ("600", false), ("099", false), ("20", false), ("2000", false), ("2x0", false)] {
        assert_eq!(schema::pattern_matches(status, name), ok, "{name}");
    }
}

// The other half of scripts/schema-parity.py: this validator's verdict on every
// document in $SCHEMA_PARITY_DIR, written beside them for the script to compare with
// Python's jsonschema (`--ignored`: it needs the script's documents).
#[test]
#[ignore]
fn schema_verdicts_of_a_directory() {
    let dir = std::path::PathBuf::from(std::env::var("SCHEMA_PARITY_DIR").expect("SCHEMA_PARITY_DIR"));
    let mut verdicts = serde_json::Map::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("doc-") {
            continue;
        }
        let doc: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        verdicts.insert(name, json!(schema_errors(&doc).is_empty()));
    }
    std::fs::write(dir.join("verdicts-rust.json"), serde_json::Value::Object(verdicts).to_string()).unwrap();
}
