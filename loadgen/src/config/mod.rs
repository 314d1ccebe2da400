//! The run's configuration, in the engine's own types: what the command line
//! asked for after cross-field checks and defaults, plus the pre-formatted
//! requests. Everything downstream trusts it and nothing downstream sees the
//! command line: `from_cli.rs` is the one conversion from `cli::Args`, and only
//! it imports `cli`.
//!
//! Adding an engine option touches three places:
//! 1. `cli.rs`: a field of `Args` (and a value parser if the text needs one);
//! 2. here: a field of `Config` in domain terms (units in the name), filled in
//!    `from_cli.rs` together with any rule that involves other options;
//! 3. where it is used: the engine threads read `ctx.cfg` (client/context.rs),
//!    so a per-request option needs no plumbing in between.
//!
//! If the result should record it, add it to `report::ConfigDoc` and to the
//! schema (optional there: additive only).

mod from_cli;

#[cfg(test)]
pub use from_cli::from_words;

use std::time::Duration;

use crate::journey::Journey;
use crate::net::{ConnectOptions, Endpoint};
use crate::protocol::Protocol;
use crate::protocol::h2::request::H2Request;
use crate::protocol::http::request::Header;
use crate::tls::TlsSetup;
use crate::target::Url;
use crate::urls::{Shape, UrlEntry};
use crate::uring::IoMode;

/// Used when neither `-d` nor `-n` (nor `--stages`) is given, like wrk.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

/// The I/O path without `--io` (loadgen/README.md "I/O path": the faster one here).
pub const DEFAULT_IO: IoMode = IoMode::Epoll;

#[derive(Clone, Debug)]
pub struct Config {
    /// The URL as given (FastCGI: the one REQUEST_URI comes from).
    pub url_text: String,
    pub endpoint: Endpoint,
    pub protocol: Protocol,
    /// FastCGI mode: the --fastcgi address and --script, as given.
    pub fastcgi: Option<(String, String)>,
    pub method: String,
    /// Connections opened at most at once (the largest stage with --stages).
    pub connections: u32,
    pub threads: u32,
    /// Measured duration; None = run until `requests` are done.
    pub duration: Option<Duration>,
    pub requests: Option<u64>,
    pub warmup: Duration,
    pub keepalive: bool,
    pub timeout: Duration,
    pub rate: Option<f64>,
    /// Empty without --stages.
    pub stages: Vec<Stage>,
    pub json: bool,
    /// --progress: a JSON line a second on stderr while the load runs (progress.rs).
    pub progress: bool,
    /// --start-at: the wall-clock instant to start, µs since the Unix epoch.
    pub start_at_unix_us: Option<u64>,
    /// --histogram: the result carries the latency histograms' buckets.
    pub histogram: bool,
    /// What is requested: one URL, a weighted mix, or a page and its assets.
    pub urls: Vec<UrlEntry>,
    pub shape: Shape,
    /// One request per entry of `urls`, formatted once and sent as-is.
    pub request_bytes: Vec<Box<[u8]>>,
    pub count_headers: Vec<String>,
    pub keepalive_requests: Option<u32>,
    /// --read-rate: each connection reads at most this many bytes per second.
    pub read_bytes_per_s: Option<u64>,
    pub connect: ConnectOptions,
    /// Bodies are discarded in the kernel where they can be (clear-text TCP) unless
    /// --read-bodies: nothing in a measured run looks at them (client/exchange.rs).
    pub discard_bodies: bool,
    /// https: trust, handshake mode, ALPN (None for http:// and FastCGI).
    pub tls: Option<TlsSetup>,
    /// --http2: one request per entry of `urls`, as HTTP/2 parts (empty without).
    pub h2_requests: Vec<H2Request>,
    /// --http2: concurrent streams per connection (1 without --http2).
    pub streams: u32,
    /// --io: the I/O path asked for (run.rs falls back to epoll where io_uring
    /// cannot be set up; the threads get the one that runs).
    pub io: IoMode,
    /// --journey: what each visitor does (None without: the other modes).
    pub visits: Option<VisitSetup>,
}

/// A run of visits (`--journey`): the journey, and what a visit needs to write its
/// requests, whose Cookie header is the visitor's own (client/visit.rs).
#[derive(Clone, Debug)]
pub struct VisitSetup {
    pub journey: Journey,
    /// Per URL of the run (the journey's): its head without the empty line that ends
    /// it — request line, Host, Connection, -H and the journey's headers.
    pub heads: Vec<Box<[u8]>>,
    /// The host cookies are kept for: the Host header's name if -H gave one (what the
    /// server sees), else the URL's; lower case.
    pub cookie_host: String,
    pub https: bool,
    /// What a request to a path learnt at run time (a login's redirect) is made of.
    pub server: Url,
    pub headers: Vec<Header>,
}

/// One step of `--stages`: `connections` for `duration`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    pub duration: Duration,
    pub connections: u32,
}

impl Config {
    /// Per-URL statistics are kept for a mix, in page mode and for visits.
    pub fn per_url(&self) -> bool {
        self.shape != Shape::Single
    }

    /// --http2 was asked for (HTTP/2 where the server's ALPN picks it).
    pub fn http2(&self) -> bool {
        self.tls.as_ref().is_some_and(|t| t.http2)
    }

    /// HTTP/2 with more than one stream a connection: one read can carry several
    /// responses, which is where the direct loop's coalesced waits pay (client/pacer.rs).
    pub fn multiplexed(&self) -> bool {
        self.http2() && self.streams > 1
    }

    /// HEAD responses carry no body whatever their Content-Length says (RFC 9110 §9.3.2).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }

    /// Connections open at most at once: page mode and visits open up to --page-conns
    /// per visitor.
    pub fn sockets(&self) -> u64 {
        match self.shape {
            Shape::Page { conns } | Shape::Visit { conns } => u64::from(self.connections) * u64::from(conns),
            _ => u64::from(self.connections),
        }
    }
}

/// Splits `total` connections over `threads` as evenly as possible (thread k gets
/// one extra while k < remainder), the way wrk does.
pub fn share(total: u32, threads: u32, thread: u32) -> u32 {
    total / threads + u32::from(thread < total % threads)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_add_up() {
        for total in 0..50 {
            for threads in 1..8 {
                let sum: u32 = (0..threads).map(|k| share(total, threads, k)).sum();
                assert_eq!(sum, total);
            }
        }
    }
}
