//! Hostile or broken servers (tests/common/hostile.rs): whatever a server does,
//! the engine ends within its duration plus its timeout, counts each failed
//! request in one clear error class, and keeps its memory under the bound the
//! README states ("Bounds"): the peak RSS of the engine process, from wait4(2).

mod common;

use std::time::Duration;

use common::hostile::{Hostile, HostileServer};
use common::{EngineRun, assert_valid, engine, u};
use serde_json::Value;

/// The process's own baseline (binary, runtime, statistics: ~4.5 MB measured)
/// with room for the allocator, plus per connection the most a reader may hold
/// while a head arrives in pieces (2 × 64 KB of capacity) and its state.
const BASE_BYTES: u64 = 16 << 20;
const PER_CONNECTION_BYTES: u64 = 160 << 10;
/// Process start and exit, on a machine shared with other work.
const SLACK: Duration = Duration::from_millis(1500);

const CONNECTIONS: u64 = 4;

/// Runs the engine for `duration_ms` with a `timeout_ms` against a server
/// behaving so, and checks what every run must: exit 0, a valid document, the
/// time and the memory bound.
fn against(behaviour: Hostile, duration_ms: u64, timeout_ms: u64) -> (EngineRun, Value) {
    let server = HostileServer::start(behaviour);
    let (c, d, t) = (CONNECTIONS.to_string(), format!("{duration_ms}ms"), format!("{timeout_ms}ms"));
    let run = engine(&["--json", "-c", &c, "-d", &d, "--timeout", &t, &server.url()]);
    assert_eq!(run.code, 0, "{behaviour:?}: {}", run.stderr);
    let doc = run.json();
    assert_valid(&doc);
    let limit = Duration::from_millis(duration_ms + timeout_ms) + SLACK;
    assert!(run.elapsed <= limit, "{behaviour:?}: took {:?}, more than {limit:?}", run.elapsed);
    eprintln!("{behaviour:?}: {:?}, peak RSS {} KB, errors {}", run.elapsed, run.peak_rss_bytes >> 10, doc["errors"]);
    let bound = BASE_BYTES + CONNECTIONS * PER_CONNECTION_BYTES;
    assert!(run.peak_rss_bytes <= bound, "{behaviour:?}: peak RSS {} over {bound}", run.peak_rss_bytes);
    (run, doc)
}

/// Every failed request is in `class`, and there were some.
fn failed_as(behaviour: Hostile, doc: &Value, class: &str) {
    let failed = u(doc, "/requests/failed");
    assert!(failed > 0, "{behaviour:?}: no failure in {doc:#}");
    assert_eq!(u(doc, &format!("/errors/{class}")), failed, "{behaviour:?}: {:#}", doc["errors"]);
}

/// Nothing completed; every failure in `class`.
fn only(behaviour: Hostile, duration_ms: u64, timeout_ms: u64, class: &str) -> Value {
    let (_, doc) = against(behaviour, duration_ms, timeout_ms);
    assert_eq!(u(&doc, "/requests/completed"), 0, "{behaviour:?}: {doc:#}");
    failed_as(behaviour, &doc, class);
    doc
}

on_both_loops!(an_endless_header_is_too_large);
fn an_endless_header_is_too_large() {
    only(Hostile::EndlessHeader, 1000, 2000, "too_large");
}

on_both_loops!(a_thousand_header_lines_are_too_large);
fn a_thousand_header_lines_are_too_large() {
    only(Hostile::ManyHeaders, 1000, 2000, "too_large");
}

on_both_loops!(a_body_longer_than_its_length_is_a_length_mismatch);
fn a_body_longer_than_its_length_is_a_length_mismatch() {
    // The excess in the same read: the response does not count as completed.
    only(Hostile::LongerBody, 1000, 2000, "length_mismatch");
}

on_both_loops!(excess_bytes_arriving_late_fail_the_next_request);
fn excess_bytes_arriving_late_fail_the_next_request() {
    // The response met its Content-Length and completed; the 10 bytes that came
    // after it are the start of the next one, which is then not HTTP: `parse`.
    // So requests alternate between completed and failed on each connection.
    let (_, doc) = against(Hostile::LongerBodyLate, 1000, 2000);
    failed_as(Hostile::LongerBodyLate, &doc, "parse");
    let (completed, failed) = (u(&doc, "/requests/completed"), u(&doc, "/requests/failed"));
    assert!(completed.abs_diff(failed) <= CONNECTIONS, "completed {completed}, failed {failed}");
}

on_both_loops!(a_body_shorter_than_its_length_is_a_length_mismatch_or_a_timeout);
fn a_body_shorter_than_its_length_is_a_length_mismatch_or_a_timeout() {
    only(Hostile::ShorterBodyThenClose, 1000, 2000, "length_mismatch");
    // The rest never comes and the connection stays open: a timeout.
    only(Hostile::ShorterBodyThenSilence, 2000, 500, "timeout");
}

on_both_loops!(an_endless_chunked_body_times_out_in_constant_memory);
fn an_endless_chunked_body_times_out_in_constant_memory() {
    let doc = only(Hostile::EndlessChunked, 2000, 500, "timeout");
    // The body is counted, not kept: far more was read than the memory bound.
    assert!(u(&doc, "/bytes/received") > 4 * (BASE_BYTES + CONNECTIONS * PER_CONNECTION_BYTES), "{:#}", doc["bytes"]);
}

on_both_loops!(chunk_bounds_are_too_large);
fn chunk_bounds_are_too_large() {
    only(Hostile::HugeChunkSize, 1000, 2000, "too_large");
    only(Hostile::EndlessChunkExtension, 1000, 2000, "too_large");
    only(Hostile::EndlessTrailers, 1000, 2000, "too_large");
}

on_both_loops!(endless_interim_responses_time_out);
fn endless_interim_responses_time_out() {
    only(Hostile::EndlessInterim, 2000, 500, "timeout");
}

on_both_loops!(a_server_trickling_a_byte_a_second_times_out);
fn a_server_trickling_a_byte_a_second_times_out() {
    // 3 s with a 2 s timeout: each connection's first request times out with 2
    // bytes read; the second is cut by the end of the run (in flight).
    let doc = only(Hostile::Trickle, 3000, 2000, "timeout");
    assert_eq!(u(&doc, "/errors/timeout"), CONNECTIONS);
    assert_eq!(u(&doc, "/requests/in_flight_at_end"), CONNECTIONS);
}

on_both_loops!(a_server_that_never_answers_times_out);
fn a_server_that_never_answers_times_out() {
    let doc = only(Hostile::Silent, 2000, 500, "timeout");
    // 0.5, 1.0, 1.5 s: three timeouts per connection, the fourth request in flight.
    assert_eq!(u(&doc, "/errors/timeout"), 3 * CONNECTIONS, "{doc:#}");
}

on_both_loops!(a_server_resetting_every_connection);
fn a_server_resetting_every_connection() {
    // Reset on accept: seen by the engine on its write, its read, or even before
    // its connect completed (ECONNRESET, not a refused connect): `reset` always.
    only(Hostile::ResetEveryConnection, 1000, 2000, "reset");
}

on_both_loops!(a_server_closing_every_connection_unanswered);
fn a_server_closing_every_connection_unanswered() {
    // EOF before any byte of the response, on a new connection (no retry).
    only(Hostile::CloseUnanswered, 1000, 2000, "read");
}
