//! 10,000 kept-alive connections closed by the server at once (a restart, a
//! crashed front): the engine raises its own open-file limit for them, retries
//! each request that found its connection closed on a new one, ends on time and
//! stays within its memory bound. Its own test binary: the server holds 10,000
//! sockets of the test process.

mod common;

use std::sync::Mutex;
use std::time::Duration;

use common::mass::MassServer;
use common::{assert_valid, engine_under_ulimit, u};

const CONNECTIONS: u64 = 10_000;
/// README "Bounds": ~2 KB of state per connection and at most 4 KB of buffers
/// kept between responses, plus the process's baseline; measured ~30 MB here.
const MEMORY_BOUND_BYTES: u64 = 100 << 20;

/// One at a time: the server holds 10,000 sockets of this process.
static ONE_SERVER: Mutex<()> = Mutex::new(());

on_both_loops!(ten_thousand_connections_closed_at_once);
fn ten_thousand_connections_closed_at_once() {
    let _one = ONE_SERVER.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    // Each response after 1 s: the first round of 10,000 ends ~1 s in; the server
    // then shuts every connection down at once, while the engine's second requests
    // wait on them.
    let server = MassServer::start(Duration::from_secs(1), CONNECTIONS);
    let c = CONNECTIONS.to_string();
    // Soft limit 1,024 as in a login shell: the engine must raise it itself.
    let run = engine_under_ulimit("-S -n 1024", &["--json", "-c", &c, "-d", "4s", "--timeout", "5s", &server.url()]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    let doc = run.json();
    assert_valid(&doc);
    eprintln!(
        "closed at once {}, accepted {}, {:#} {:#}, peak RSS {} MB, {:?}",
        server.closed_at_once(),
        server.accepted(),
        doc["requests"],
        doc["errors"],
        run.peak_rss_bytes >> 20,
        run.elapsed
    );
    assert_eq!(server.closed_at_once(), CONNECTIONS, "all 10,000 were open when the server closed them");
    // Measured 4 s, cut at the end: no wait for the timeout.
    assert!(run.elapsed < Duration::from_secs(4) + Duration::from_millis(2500), "took {:?}", run.elapsed);
    assert!(run.peak_rss_bytes <= MEMORY_BOUND_BYTES, "peak RSS {}", run.peak_rss_bytes);
    // A request that found its kept-alive connection closed before any byte of its
    // response was retried on a new one, not counted as failed: the first round
    // and the retried second round all completed.
    assert_eq!(u(&doc, "/requests/failed"), 0, "{:#}", doc["errors"]);
    assert!(u(&doc, "/requests/completed") >= 2 * CONNECTIONS, "{:#}", doc["requests"]);
    assert!(u(&doc, "/connections_opened") >= 2 * CONNECTIONS);
    assert!(server.accepted() >= 2 * CONNECTIONS);
}
