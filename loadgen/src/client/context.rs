//! What every connection of one engine thread shares: the run's configuration
//! (one `Arc` for all threads, read-only), this thread's schedule, URL picker and
//! statistics, and the read buffer. Built once per thread; the connections hold
//! an `Rc` to it. Imports nothing from its siblings: everything else in
//! `client/` depends on it, never the other way round.

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use rustls::pki_types::ServerName;
use tokio_rustls::TlsConnector;

use crate::config::Config;
use crate::protocol::http::head_memo::HeadMemo;
use crate::schedule::{Plan, Scheduler};
use crate::stats::live::LiveCounters;
use crate::stats::{self, ThreadStats};
use crate::urls::{Picker, Shape};

/// Read buffer of a thread (64 KB: big bodies in few reads).
pub const SCRATCH_BYTES: usize = 64 * 1024;

/// The response headers a visit reads (client/visit.rs), watched after --count-header's:
/// `Set-Cookie` at `count_headers.len()`, `Location` after it.
pub const VISIT_HEADERS: [&str; 2] = ["Set-Cookie", "Location"];

pub struct ThreadContext {
    /// The run's configuration, as validated (config/mod.rs).
    pub cfg: Arc<Config>,
    /// This engine thread's number (0..threads).
    pub thread: u32,
    pub scheduler: Scheduler,
    pub picker: Picker,
    pub stats: RefCell<ThreadStats>,
    /// --progress: this thread's live counters, read by the reporter (None without).
    pub live: Option<Arc<LiveCounters>>,
    /// Counting starts.
    pub measure_start: Instant,
    /// Counting and load stop; None = until the `-n` budget is used up.
    pub run_end: Option<Instant>,
    /// The method is HEAD (responses carry no body), decided once.
    pub head_request: bool,
    /// --count-header names, then VISIT_HEADERS for visits (empty: nothing captured),
    /// shared by every reader.
    pub watch: Rc<[String]>,
    /// The last response head any connection of the thread parsed (HTTP/1.1):
    /// the same head again is recalled, not parsed (protocol/http/head_memo.rs).
    pub head_memo: Rc<HeadMemo>,
    /// Read buffer for all connections of the thread, borrowed only inside a
    /// synchronous poll (client/exchange.rs).
    pub scratch: RefCell<Box<[u8]>>,
    /// https: this thread's connectors (None for http and FastCGI).
    pub tls: Option<ThreadTls>,
    /// Requests of this thread that ended (answered or failed), measured or not: the
    /// rate the direct loop's pacer reads (pacer.rs).
    pub ended: Cell<u64>,
}

/// An engine thread's TLS connectors: its own session store when resuming
/// (tls.rs), so threads never share sessions.
pub struct ThreadTls {
    /// What the run offers: ALPN h2 + http/1.1 with --http2, else http/1.1.
    pub connector: TlsConnector,
    /// ALPN http/1.1 alone: the connections of an HTTP/2 run whose server chose
    /// HTTP/1.1 (client/h2.rs), so a reconnect cannot switch protocol under them.
    pub http11: TlsConnector,
    pub name: ServerName<'static>,
}

impl ThreadContext {
    pub fn new(cfg: Arc<Config>, plan: Arc<Plan>, thread: u32, live: Option<Arc<LiveCounters>>) -> ThreadContext {
        let shape = stats::Shape {
            stages: plan.stages.len(),
            open_loop: plan.rate.is_some(),
            urls: if cfg.per_url() { cfg.urls.len() } else { 0 },
            headers: cfg.count_headers.len(),
            pages: matches!(cfg.shape, Shape::Page { .. } | Shape::Visit { .. }),
            visit_rows: cfg.visits.as_ref().map(|v| v.journey.rows().len()),
        };
        // Visits read Set-Cookie and Location from every response: watched after the
        // --count-header names, which are counted (by their index) and these not.
        let mut watch = cfg.count_headers.clone();
        if cfg.visits.is_some() {
            watch.extend(VISIT_HEADERS.iter().map(|h| h.to_string()));
        }
        ThreadContext {
            thread,
            measure_start: plan.measure_start,
            run_end: plan.run_end,
            stats: RefCell::new(ThreadStats::new(shape, plan.measure_start)),
            live,
            picker: Picker::new(&cfg.urls, thread),
            scheduler: Scheduler::new(plan, thread),
            head_request: cfg.is_head(),
            watch: Rc::from(watch),
            head_memo: Rc::default(),
            scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
            tls: cfg.tls.as_ref().map(|t| ThreadTls {
                connector: t.connector(t.http2),
                http11: t.connector(false),
                name: t.server_name.clone(),
            }),
            ended: Cell::new(0),
            cfg,
        }
    }
}
