//! End-to-end tests of the load models beyond plain closed/open loop: who got
//! served and what was in flight at the end, header counting, keep-alive budget,
//! URL mixes, slow readers, page mode, the open loop's rate accuracy and the
//! requests it could not send.
//! Every run is bounded (by -n/-d, --timeout, and a 30 s kill in `engine`).

mod common;

use common::{TestServer, assert_valid, engine, engine_json, u, warning_codes, warning_params};

fn warnings(doc: &serde_json::Value) -> String {
    doc["warnings"].to_string()
}

on_both_loops!(clients_the_server_never_served_are_reported);
fn clients_the_server_never_served_are_reported() {
    // 2 of 6 connections are served; 4 wait in the accept queue for the whole run,
    // like prefork children all held by keep-alive connections.
    let server = TestServer::serving_only(2);
    let doc = engine_json(&["-c", "6", "-d", "1s", "--warmup", "200ms", "--timeout", "5s", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(server.accepts(), 2);
    assert!(u(&doc, "/requests/completed") > 100);
    assert_eq!(u(&doc, "/requests/failed"), 0);
    assert_eq!(u(&doc, "/connections_measured"), 6);
    assert_eq!(u(&doc, "/connections_without_response"), 4);
    // The 4 waiting ones (plus up to 2 under way on the served connections).
    let in_flight = u(&doc, "/requests/in_flight_at_end");
    assert!((4..=6).contains(&in_flight), "in flight {in_flight}");
    // Waiting since before the measured phase: older than the whole 1 s phase.
    let oldest = u(&doc, "/requests/in_flight_oldest_us");
    assert!((1_150_000..2_000_000).contains(&oldest), "oldest {oldest}");
    let w = warnings(&doc);
    assert!(w.contains("4 of 6 connections got no response during the measured phase"), "{w}");
    assert!(w.contains("still unanswered at the end"), "{w}");
    // The text output says so too.
    let server = TestServer::serving_only(1);
    let run = engine(&["-c", "3", "-d", "300ms", "--timeout", "5s", &server.url("/cl/12")]);
    assert!(run.stdout.contains("In flight at end:   "), "{}", run.stdout);
    assert!(run.stdout.contains("3 took part, 2 got no response"), "{}", run.stdout);
}

on_both_loops!(a_healthy_run_has_nothing_unserved);
fn a_healthy_run_has_nothing_unserved() {
    let server = TestServer::start();
    let doc = engine_json(&["-c", "4", "-d", "500ms", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/connections_measured"), 4);
    assert_eq!(u(&doc, "/connections_without_response"), 0);
    assert!(u(&doc, "/requests/in_flight_at_end") <= 4);
    assert!(!warnings(&doc).contains("unanswered"), "{}", warnings(&doc));
    // -n runs end when the last request ended: nothing can be in flight.
    let doc = engine_json(&["-c", "4", "-n", "100", &server.url("/cl/12")]);
    assert_eq!(u(&doc, "/requests/in_flight_at_end"), 0);
    assert!(doc["requests"]["in_flight_oldest_us"].is_null());
    // Stages carry no in-flight fields (they describe the whole run only).
    let doc = engine_json(&["--stages", "200ms:1,200ms:2", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert!(doc["stages"][0]["requests"].get("in_flight_at_end").is_none());
}

on_both_loops!(slow_requests_cut_off_by_the_end_are_in_flight);
fn slow_requests_cut_off_by_the_end_are_in_flight() {
    // Each request takes 300 ms; the run lasts 1 s: the last ones are cut off.
    let server = TestServer::start();
    let doc = engine_json(&["-c", "2", "-d", "1s", &server.url("/slow/300/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/connections_without_response"), 0);
    // Closed loop: each connection has exactly one request under way at the end,
    // younger than one request's duration.
    assert_eq!(u(&doc, "/requests/in_flight_at_end"), 2);
    assert!(u(&doc, "/requests/in_flight_oldest_us") < 350_000);
    assert!((4..=6).contains(&u(&doc, "/requests/completed")), "3 per connection when the machine keeps up");
}

on_both_loops!(header_values_are_counted);
fn header_values_are_counted() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "400", "-c", "4", "-t", "2", "--count-header", "X-Cache", "--count-header", "X-None",
        &server.url("/xcache/12")]);
    assert_valid(&doc);
    assert_eq!(doc["header_counts"]["X-Cache"], serde_json::json!({"HIT": 300, "MISS": 100}));
    assert_eq!(doc["header_counts"]["X-None"], serde_json::json!({"(none)": 400}));
    assert_eq!(doc["config"]["count_headers"], serde_json::json!(["X-Cache", "X-None"]));

    // Without keep-alive the values survive the connection's close.
    let server = TestServer::start();
    let doc = engine_json(&["-n", "40", "-c", "2", "--no-keepalive", "--count-header", "x-cache", &server.url("/xcache/1")]);
    assert_eq!(doc["header_counts"]["x-cache"], serde_json::json!({"HIT": 30, "MISS": 10}));

    // Distinct values are capped; the rest is "(other)".
    let doc = engine_json(&["-n", "100", "-c", "1", "--count-header", "x-value", &server.url("/distinct")]);
    let counts = doc["header_counts"]["x-value"].as_object().unwrap();
    assert_eq!(counts.len(), 33);
    assert_eq!(counts["(other)"], 68);

    // Without the option: an empty object.
    let doc = engine_json(&["-n", "10", "-c", "1", &server.url("/xcache/12")]);
    assert_eq!(doc["header_counts"], serde_json::json!({}));
}

on_both_loops!(keepalive_budget_reopens_connections);
fn keepalive_budget_reopens_connections() {
    let server = TestServer::start();
    // One connection, so the count is exact (two would share the 100 unevenly).
    let doc = engine_json(&["-n", "100", "-c", "1", "--keepalive-requests", "10", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/requests/completed"), 100);
    assert_eq!(u(&doc, "/connections_opened"), 10);
    assert_eq!(server.accepts(), 10);
    assert_eq!(u(&doc, "/config/keepalive_requests"), 10);
    let run = engine(&["-n", "1", "--no-keepalive", "--keepalive-requests", "5", &server.url("/cl/12")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

on_both_loops!(weighted_url_mix);
fn weighted_url_mix() {
    let server = TestServer::start();
    let base = server.url("");
    let doc = engine_json(&["-n", "4000", "-c", "4", "-t", "2", "--url", "/cl/10=3", "--url", &format!("{base}/cl/30"), &base]);
    assert_valid(&doc);
    let per_url = doc["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 2);
    assert_eq!((per_url[0]["path"].as_str(), per_url[0]["weight"].as_u64()), (Some("/cl/10"), Some(3)));
    assert_eq!(per_url[1]["weight"], 1);
    let a = per_url[0]["requests"]["completed"].as_u64().unwrap();
    let b = per_url[1]["requests"]["completed"].as_u64().unwrap();
    assert_eq!(a + b, 4000);
    assert!((2850..=3150).contains(&a), "weight 3 of 4 got {a} of 4000");
    assert_eq!(u(&doc, "/bytes/body_received"), a * 10 + b * 30, "each URL got its own response");
    assert_eq!(per_url[0]["latency_us"]["count"], a);
    // A single URL has no per-URL breakdown; mixes stay on one server.
    let doc = engine_json(&["-n", "10", "-c", "1", &server.url("/cl/12")]);
    assert_eq!(doc["per_url"], serde_json::json!([]));
    let run = engine(&["-n", "1", "--url", &server.url("/a"), "--url", "http://127.0.0.1:1/b"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn slow_reader_takes_as_long_as_its_rate() {
    // 50,000 bytes at 200,000 bytes/s: each response takes ~250 ms to read.
    let server = TestServer::start();
    let doc = engine_json(&["-n", "2", "-c", "1", "--read-rate", "200000", "--rcvbuf", "4096", &server.url("/cl/50000")]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/requests/completed"), u(&doc, "/bytes/body_received")), (2, 100_000));
    let min = u(&doc, "/latency_us/min");
    assert!((230_000..400_000).contains(&min), "latency min {min}");
    assert_eq!((u(&doc, "/config/read_rate"), u(&doc, "/config/rcvbuf")), (200_000, 4096));
    // Unlimited, the same responses take a few ms.
    let doc = engine_json(&["-n", "2", "-c", "1", &server.url("/cl/50000")]);
    assert!(u(&doc, "/latency_us/max") < 100_000);
}

#[test]
fn page_mode_fetches_assets_in_parallel() {
    // Three 100 ms assets: over 3 connections the page loads in ~100 ms more than
    // its own request; over 1 connection in ~300 ms more.
    let server = TestServer::start();
    let assets = "/slow/100/10,/slow/100/20,/slow/100/30";
    let doc = engine_json(&["-n", "4", "-c", "1", "--page", "/cl/100", "--assets", assets, "--page-conns", "3", &server.url("")]);
    assert_valid(&doc);
    assert_eq!(u(&doc, "/pages/completed"), 4);
    assert_eq!(u(&doc, "/pages/failed"), 0);
    assert_eq!(u(&doc, "/requests/completed"), 16);
    assert_eq!(server.requests(), 16);
    assert_eq!(u(&doc, "/connections_opened"), 3, "connections are kept between page views");
    let per_url = doc["per_url"].as_array().unwrap();
    assert_eq!(per_url.len(), 4);
    assert!(per_url.iter().all(|p| p["requests"]["completed"] == 4 && p["weight"].is_null()));
    let parallel = u(&doc, "/page_load_us/percentiles/50");
    assert!((95_000..250_000).contains(&parallel), "3 connections: p50 {parallel}");
    assert_eq!(u(&doc, "/config/page_conns"), 3);

    let doc = engine_json(&["-n", "2", "-c", "1", "--page", "/cl/100", "--assets", assets, "--page-conns", "1", &server.url("")]);
    let serial = u(&doc, "/page_load_us/min");
    assert!(serial >= 300_000, "1 connection: {serial}");

    // Outside page mode both are null; --rate is refused with --page.
    let doc = engine_json(&["-n", "1", "-c", "1", &server.url("/cl/1")]);
    assert!(doc["pages"].is_null() && doc["page_load_us"].is_null());
    let run = engine(&["-n", "1", "--rate", "10", "--page", "/", &server.url("")]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

#[test]
fn failed_page_fetches_no_assets() {
    let server = TestServer::start();
    let doc = engine_json(&["-n", "5", "-c", "1", "--page", "/badstatus", "--assets", "/cl/1,/cl/2", &server.url("")]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/pages/completed"), u(&doc, "/pages/failed")), (0, 5));
    assert_eq!(u(&doc, "/errors/parse"), 5);
    assert_eq!(server.requests(), 5);
    assert_eq!(u(&doc, "/page_load_us/count"), 0);
}

#[test]
fn open_loop_rate_is_within_one_percent() {
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "2000", "-d", "2s", "-c", "20", &server.url("/cl/12")]);
    assert_valid(&doc);
    let completed = u(&doc, "/requests/completed");
    assert!(completed.abs_diff(4000) <= 40, "completed {completed} of 2000/s × 2 s");
    // Every request due in the phase was sent: answered, or under way at the end.
    let sent = completed + u(&doc, "/requests/failed") + u(&doc, "/requests/in_flight_at_end");
    assert!((3995..=4000).contains(&sent), "sent {sent}");
}

/// The open loop's bookkeeping: `due` (from the schedule) = `not_sent` + the
/// measured requests sent, and each sent one is completed, failed or in flight at
/// the end. Without a warm-up every in-flight request is a measured one, so
/// `due = not_sent + completed + failed + in_flight_at_end` exactly.
fn assert_due_adds_up(doc: &serde_json::Value) -> (u64, u64) {
    let due = u(doc, "/requests/due");
    let not_sent = u(doc, "/requests/not_sent");
    let sent = u(doc, "/requests/completed") + u(doc, "/requests/failed") + u(doc, "/requests/in_flight_at_end");
    assert_eq!(not_sent + sent, due, "not_sent {not_sent} + sent {sent} (completed + failed + in flight) != due {due}");
    (due, not_sent)
}

#[test]
fn open_loop_counts_the_requests_it_could_not_send() {
    // 2 connections, 50 ms per response: ~40 requests/s can be sent of the 1000 asked.
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "1000", "-d", "1s", "-c", "2", &server.url("/slow/50/12")]);
    assert_valid(&doc);
    let (due, not_sent) = assert_due_adds_up(&doc);
    // Slots 0..999 are due at 0..999 ms; slot 1000 at the end itself is not inside.
    assert_eq!(due, 1000);
    assert!(not_sent > 800, "not sent {not_sent}");
    // After the first two, every slot waited ~50 ms for a connection.
    let sent = due - not_sent;
    let late = u(&doc, "/requests/sent_late");
    assert!(late + 2 >= sent && late <= sent, "{late} late of {sent} sent");
    let p = warning_params(&doc, "rate_not_reached");
    assert_eq!((p["due"].as_u64(), p["not_sent"].as_u64()), (Some(due), Some(not_sent)));
    let w = warnings(&doc);
    assert!(w.contains(&format!("{not_sent} of the 1000 requests due were never sent")), "{w}");

    // The text output shows them too.
    let run = engine(&["--rate", "1000", "-d", "300ms", "-c", "2", &server.url("/slow/50/12")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(run.stdout.contains("Due requests:       300 ("), "{}", run.stdout);
    assert!(run.stdout.contains(" never sent)"), "{}", run.stdout);
}

#[test]
fn open_loop_that_keeps_its_rate_sends_everything() {
    // Slot 199 is due at 995 ms: 5 ms of slack for a late timer before the end.
    let server = TestServer::start();
    let doc = engine_json(&["--rate", "200", "-d", "1s", "-c", "4", &server.url("/cl/12")]);
    assert_valid(&doc);
    let (due, not_sent) = assert_due_adds_up(&doc);
    assert_eq!((due, not_sent), (200, 0));
    assert!(u(&doc, "/requests/sent_late") < 20, "{doc:#}");
    assert!(!warning_codes(&doc).contains(&"rate_not_reached"));

    // -n: due is N, all of them sent and ended (nothing in flight), warm-up left out.
    let doc = engine_json(&["--rate", "1000", "-n", "300", "--warmup", "200ms", "-c", "8", "-t", "2",
        &server.url("/cl/12")]);
    assert_valid(&doc);
    assert_eq!((u(&doc, "/requests/due"), u(&doc, "/requests/not_sent")), (300, 0));
    assert_eq!(u(&doc, "/requests/completed"), 300);

    // Closed loop: null; stages do not carry them.
    let doc = engine_json(&["-n", "10", "-c", "1", &server.url("/cl/12")]);
    assert_valid(&doc);
    for field in ["due", "not_sent", "sent_late"] {
        assert!(doc["requests"][field].is_null(), "{field}: {doc:#}");
        assert!(doc["requests"].get(field).is_some(), "{field} is written");
    }
    let doc = engine_json(&["--rate", "100", "--stages", "200ms:1,200ms:2", &server.url("/cl/12")]);
    assert_valid(&doc);
    assert!(doc["stages"][0]["requests"].get("due").is_none());
    assert_eq!(u(&doc, "/requests/due"), 40);
}

// -- several engines as one: a shared start instant, mergeable histograms, clock probe --

fn now_unix_us() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_micros() as u64
}

on_both_loops!(start_at_waits_for_the_instant_and_reports_when_it_began);
fn start_at_waits_for_the_instant_and_reports_when_it_began() {
    let server = TestServer::start();
    let asked = now_unix_us() + 400_000;
    let run = engine(&["--json", "-c", "2", "-n", "20", "--start-at", &asked.to_string(), &server.url("/")]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    assert_valid(&doc);
    assert_eq!(u(&doc, "/start/asked_unix_us"), asked);
    let late = u(&doc, "/start/began_unix_us") - asked; // a u64: never early
    assert!(late < 5_000, "began {late} µs after the instant");
    assert!(run.elapsed.as_millis() >= 350, "did not wait: {:?}", run.elapsed);
    assert!(u(&doc, "/started_unix_us") >= asked);
}

on_both_loops!(without_start_at_the_result_has_no_start_and_no_buckets);
fn without_start_at_the_result_has_no_start_and_no_buckets() {
    let server = TestServer::start();
    let doc = engine_json(&["-c", "1", "-n", "5", &server.url("/")]);
    assert!(doc.get("start").is_none() && doc["latency_us"].get("histogram").is_none());
}

/// The engine's percentile rule over exported buckets: the smallest bucket whose
/// cumulative count reaches ceil(q × n), capped at the exact maximum.
fn nearest_rank(buckets: &[(u64, u64)], p: f64, max: u64) -> u64 {
    if p >= 100.0 {
        return max;
    }
    let total: u64 = buckets.iter().map(|b| b.1).sum();
    let want = ((p / 100.0 * total as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for &(value, count) in buckets {
        seen += count;
        if seen >= want {
            return value.min(max);
        }
    }
    unreachable!("the counts reach the total")
}

on_both_loops!(histogram_buckets_reproduce_every_percentile);
fn histogram_buckets_reproduce_every_percentile() {
    let server = TestServer::start();
    let doc = engine_json(&["-c", "4", "-n", "3000", "--histogram", &server.url("/")]);
    assert_valid(&doc);
    let lat = &doc["latency_us"];
    let buckets: Vec<(u64, u64)> = lat["histogram"]
        .as_array()
        .expect("buckets")
        .iter()
        .map(|b| (b[0].as_u64().unwrap(), b[1].as_u64().unwrap()))
        .collect();
    assert!(buckets.windows(2).all(|w| w[0].0 < w[1].0), "in value order");
    assert_eq!(buckets.iter().map(|b| b.1).sum::<u64>(), u(&doc, "/latency_us/count"));
    let max = u(&doc, "/latency_us/max");
    for (name, value) in lat["percentiles"].as_object().unwrap() {
        let p: f64 = name.parse().unwrap();
        assert_eq!(nearest_rank(&buckets, p, max), value.as_u64().unwrap(), "p{name}");
    }
}

#[test]
fn clock_probe_answers_each_line_with_the_wall_clock() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::{Command, Stdio};
    let mut child = Command::new(env!("CARGO_BIN_EXE_stackbench-load"))
        .arg("--clock")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start the clock probe");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    for _ in 0..3 {
        let before = now_unix_us();
        writeln!(stdin, "t").unwrap();
        let answer: u64 = lines.next().unwrap().unwrap().parse().unwrap();
        let after = now_unix_us();
        assert!(before <= answer && answer <= after, "{before} <= {answer} <= {after}");
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
    // With anything else it is a usage error, not a load.
    let run = engine(&["--clock", "-c", "2", "http://127.0.0.1:1/"]);
    assert_eq!(run.code, 2, "{}", run.stderr);
}

on_both_loops!(watch_stdin_stops_the_load_when_stdin_closes);
fn watch_stdin_stops_the_load_when_stdin_closes() {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let server = TestServer::start();
    let mut child = common::engine_command()
        .args(["--json", "-c", "2", "-d", "30s", "--watch-stdin", &server.url("/")])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the engine");
    std::thread::sleep(Duration::from_millis(500));
    let closed = Instant::now();
    drop(child.stdin.take()); // the lab, or its SSH connection, is gone
    let deadline = closed + Duration::from_secs(5);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(Instant::now() < deadline, "still loading 5 s after stdin closed");
        std::thread::sleep(Duration::from_millis(10));
    };
    assert_eq!(status.code(), Some(1));
    assert!(closed.elapsed() < Duration::from_secs(1), "took {:?}", closed.elapsed());
    assert!(server.requests() > 0, "it was loading before");
}
