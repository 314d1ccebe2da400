//! What the engine counts, per thread, and how threads are merged. Pure data: no
//! I/O, no clocks, no formatting (the report reads these; it never measures).

pub mod clients;
pub mod header_counts;
pub mod histogram;
pub mod live;
pub mod pages;
pub mod per_url;
pub mod timeline;
pub mod tls;
pub mod visits;

use std::time::Instant;

use clients::ClientStats;
use header_counts::HeaderCounts;
use histogram::LatencyHist;
use pages::PageStats;
use per_url::UrlStats;
use timeline::Timeline;
use tls::{ErrorDetails, TlsStats};
use visits::VisitStats;

use crate::tls::Handshake;

/// Error classes of the result schema. A failed request counts in exactly one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    /// TCP connect failed (refused, unreachable, out of ports...).
    Connect,
    /// No full response within --timeout (connect + send + receive).
    Timeout,
    /// The peer reset the connection (ECONNRESET, EPIPE, ECONNABORTED).
    Reset,
    /// Other read error, or the connection closed before or inside the head.
    Read,
    /// Other write error.
    Write,
    /// Malformed response: status line, headers, chunk framing, a 101 upgrade.
    Parse,
    /// The body did not match its framing: the connection closed before the length
    /// announced (Content-Length or chunk size), or bytes came after the end.
    LengthMismatch,
    /// A part of the response over one of the engine's bounds (head > 64 KB, > 100
    /// header lines, chunk-size line > 4 KB, chunk size ≥ 2^60, trailers > 64 KB):
    /// what the engine refuses to buffer or believe, not necessarily malformed.
    TooLarge,
    /// FastCGI only: the application refused the request (END_REQUEST with a
    /// protocol status other than REQUEST_COMPLETE, e.g. FCGI_OVERLOADED).
    Rejected,
    /// https only: the TLS handshake failed (an alert, a server that answered
    /// clear text, a close mid-handshake); the detail says which.
    TlsHandshake,
    /// https only: the server's certificate was not accepted (chain, name, dates,
    /// or not the pinned one); the detail says which.
    TlsUntrusted,
    /// HTTP/2 only: the server sent GOAWAY with an error code (a graceful
    /// NO_ERROR GOAWAY only makes the engine reconnect).
    H2Goaway,
    /// HTTP/2 only: the server reset the stream (RST_STREAM); detail = its code.
    H2RstStream,
}

/// Why a request of a detailed class failed (`error_details` in the result).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Detail {
    Text(&'static str),
    /// A TLS alert's code (tls::alert_name).
    Alert(u8),
    /// An HTTP/2 error code (RFC 9113 §7).
    H2(u32),
}

impl ErrorClass {
    pub const ALL: [ErrorClass; 13] = [
        ErrorClass::Connect,
        ErrorClass::Timeout,
        ErrorClass::Reset,
        ErrorClass::Read,
        ErrorClass::Write,
        ErrorClass::Parse,
        ErrorClass::LengthMismatch,
        ErrorClass::TooLarge,
        ErrorClass::Rejected,
        ErrorClass::TlsHandshake,
        ErrorClass::TlsUntrusted,
        ErrorClass::H2Goaway,
        ErrorClass::H2RstStream,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Connect => "connect",
            ErrorClass::Timeout => "timeout",
            ErrorClass::Reset => "reset",
            ErrorClass::Read => "read",
            ErrorClass::Write => "write",
            ErrorClass::Parse => "parse",
            ErrorClass::LengthMismatch => "length_mismatch",
            ErrorClass::TooLarge => "too_large",
            ErrorClass::Rejected => "rejected",
            ErrorClass::TlsHandshake => "tls_handshake",
            ErrorClass::TlsUntrusted => "tls_untrusted",
            ErrorClass::H2Goaway => "h2_goaway",
            ErrorClass::H2RstStream => "h2_rst_stream",
        }
    }
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ErrorCounts(pub [u64; ErrorClass::ALL.len()]);

impl ErrorCounts {
    pub fn add(&mut self, class: ErrorClass) {
        self.0[class as usize] += 1;
    }
    pub fn get(&self, class: ErrorClass) -> u64 {
        self.0[class as usize]
    }
    pub fn total(&self) -> u64 {
        self.0.iter().sum()
    }
    fn merge(&mut self, other: &ErrorCounts) {
        for (a, b) in self.0.iter_mut().zip(other.0) {
            *a += b;
        }
    }
}

/// Timings of one complete response, in µs (see the schema's phases_us).
#[derive(Clone, Copy, Debug, Default)]
pub struct Sample {
    pub status: u16,
    /// From the intended send time (open loop) or the actual one (closed loop).
    pub latency_us: u64,
    /// From the actual send time; equals latency_us in closed loop.
    pub uncorrected_us: u64,
    /// 0 on a reused connection.
    pub connect_us: u64,
    /// Request written -> first response byte.
    pub waiting_us: u64,
    /// Connect done -> last byte.
    pub processing_us: u64,
}

impl Sample {
    /// A completed exchange's timings, the same for HTTP/1.1 and HTTP/2: latency from
    /// the intended send time (open loop) or the actual one, waiting from the request
    /// written to the first byte, processing from the connection ready to the last byte.
    #[allow(clippy::too_many_arguments)]
    pub fn timed(status: u16, intended: Option<Instant>, start: Instant, end: Instant, connect_us: u64,
                 written: Instant, first_byte: Instant, connected_at: Instant) -> Sample {
        let us = |d: std::time::Duration| d.as_micros() as u64;
        Sample {
            status,
            latency_us: us(end - intended.unwrap_or(start)),
            uncorrected_us: us(end - start),
            connect_us,
            waiting_us: us(first_byte.saturating_duration_since(written)),
            processing_us: us(end - connected_at),
        }
    }

    #[inline]
    pub fn is_2xx(&self) -> bool {
        (200..300).contains(&self.status)
    }
}

/// Bytes moved by one request, counted whether it succeeded or not, and what
/// its connection did (https: the handshake, if this request opened it).
#[derive(Clone, Copy, Debug, Default)]
pub struct Transfer {
    pub sent: u64,
    pub received: u64,
    pub body: u64,
    pub connections_opened: u64,
    /// The TLS handshake of the connection this request opened.
    pub handshake: Option<Handshake>,
    /// Why it failed, for the classes that carry a detail.
    pub detail: Option<Detail>,
    /// Spoken over HTTP/2 (else HTTP/1.1 or FastCGI).
    pub h2: bool,
}

/// Counters of one stage (or of the whole run without --stages).
#[derive(Clone, Debug)]
pub struct PhaseStats {
    pub completed: u64,
    pub ok_2xx: u64,
    pub non_2xx: u64,
    pub errors: ErrorCounts,
    /// Index = status code; 100..=599 only (anything else is a parse error).
    pub status: Box<[u64; 600]>,
    pub transfer: Transfer,
    pub latency: LatencyHist,
    /// Open loop only.
    pub uncorrected: Option<LatencyHist>,
    pub connect: LatencyHist,
    pub waiting: LatencyHist,
    pub processing: LatencyHist,
}

impl PhaseStats {
    pub fn new(open_loop: bool) -> Self {
        PhaseStats {
            completed: 0,
            ok_2xx: 0,
            non_2xx: 0,
            errors: ErrorCounts::default(),
            status: Box::new([0; 600]),
            transfer: Transfer::default(),
            latency: LatencyHist::new(),
            uncorrected: open_loop.then(LatencyHist::new),
            connect: LatencyHist::new(),
            waiting: LatencyHist::new(),
            processing: LatencyHist::new(),
        }
    }

    #[inline]
    fn record_ok(&mut self, s: &Sample) {
        self.completed += 1;
        if s.is_2xx() {
            self.ok_2xx += 1;
        } else {
            self.non_2xx += 1;
        }
        if let Some(slot) = self.status.get_mut(usize::from(s.status)) {
            *slot += 1;
        }
        self.latency.record(s.latency_us);
        if let Some(h) = &mut self.uncorrected {
            h.record(s.uncorrected_us);
        }
        self.connect.record(s.connect_us);
        self.waiting.record(s.waiting_us);
        self.processing.record(s.processing_us);
    }

    #[inline]
    fn add_transfer(&mut self, t: &Transfer) {
        self.transfer.sent += t.sent;
        self.transfer.received += t.received;
        self.transfer.body += t.body;
        self.transfer.connections_opened += t.connections_opened;
    }

    pub fn failed(&self) -> u64 {
        self.errors.total()
    }

    /// ab's "Total" row: connect start -> last byte, i.e. from the actual send.
    pub fn total(&self) -> &LatencyHist {
        self.uncorrected.as_ref().unwrap_or(&self.latency)
    }

    pub fn merge(&mut self, other: &PhaseStats) {
        self.completed += other.completed;
        self.ok_2xx += other.ok_2xx;
        self.non_2xx += other.non_2xx;
        self.errors.merge(&other.errors);
        for (a, b) in self.status.iter_mut().zip(other.status.iter()) {
            *a += b;
        }
        self.add_transfer(&other.transfer);
        self.latency.merge(&other.latency);
        if let (Some(a), Some(b)) = (&mut self.uncorrected, &other.uncorrected) {
            a.merge(b);
        }
        self.connect.merge(&other.connect);
        self.waiting.merge(&other.waiting);
        self.processing.merge(&other.processing);
    }
}

/// Open loop: what became of one thread's measured slots (zeros in closed loop).
/// With the run's due count (schedule.rs) this gives the requests never sent:
/// `due - sent`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sends {
    /// Measured slots handed to a connection, i.e. sent (connect or write begun).
    pub sent: u64,
    /// Of those, the ones that waited for a free connection: already more than
    /// 1 ms past due when a connection took them.
    pub late: u64,
}

impl Sends {
    fn merge(&mut self, other: &Sends) {
        self.sent += other.sent;
        self.late += other.late;
    }
}

/// Coalesced waits of the direct loop in the measured phase (client/pacer.rs): `None`
/// when the run does not pace.
#[derive(Clone, Copy, Debug, Default)]
pub struct Waits {
    /// Timed sleeps taken instead of blocking on the sockets.
    pub sleeps: u64,
    /// The socket events those sleeps found waiting when they ended.
    pub found: u64,
}

impl Waits {
    fn merge(&mut self, other: &Waits) {
        self.sleeps += other.sleeps;
        self.found += other.found;
    }
}

/// What one engine thread measured.
#[derive(Debug)]
pub struct ThreadStats {
    /// One per stage; exactly one without --stages.
    pub stages: Vec<PhaseStats>,
    pub timeline: Timeline,
    /// When the last measured request of this thread ended (completed or failed).
    pub last_event: Option<Instant>,
    /// Who got served, and what was still in flight at the end.
    pub clients: ClientStats,
    /// One per URL with a URL mix or page mode; empty otherwise (nothing recorded).
    pub urls: Vec<UrlStats>,
    /// --count-header tallies (no tables without the option).
    pub headers: HeaderCounts,
    /// Page mode, and visits (every page view of the journey).
    pub pages: Option<PageStats>,
    /// Visits only (`--journey`).
    pub visits: Option<VisitStats>,
    /// Open loop: measured slots sent, and sent late (filled in from the schedule
    /// when the thread ends).
    pub sends: Sends,
    /// https: handshakes of the connections measured requests opened.
    pub tls: TlsStats,
    /// Failed measured requests by class and detail (classes that carry one).
    pub details: ErrorDetails,
    /// Measured requests spoken over [HTTP/1.1 or FastCGI, HTTP/2].
    pub spoken: [u64; 2],
    /// Only when the direct loop paces (client/pacer.rs) and the measured phase began.
    pub waits: Option<Waits>,
    measure_start: Instant,
}

/// Which optional statistics a run keeps.
#[derive(Clone, Copy, Debug, Default)]
pub struct Shape {
    pub stages: usize,
    pub open_loop: bool,
    /// Number of URLs tracked separately (0 = none).
    pub urls: usize,
    /// Number of --count-header names.
    pub headers: usize,
    pub pages: bool,
    /// Visits: the journey's rows (its login and pages); None without --journey.
    pub visit_rows: Option<usize>,
}

/// How one measured request ended.
#[derive(Clone, Copy, Debug)]
pub enum Outcome {
    Completed(Sample),
    Failed(ErrorClass),
}

impl ThreadStats {
    pub fn new(shape: Shape, measure_start: Instant) -> Self {
        ThreadStats {
            stages: (0..shape.stages.max(1)).map(|_| PhaseStats::new(shape.open_loop)).collect(),
            timeline: Timeline::default(),
            last_event: None,
            clients: ClientStats::default(),
            urls: (0..shape.urls).map(|_| UrlStats::default()).collect(),
            headers: HeaderCounts::new(shape.headers),
            pages: shape.pages.then(PageStats::default),
            visits: shape.visit_rows.map(VisitStats::new),
            sends: Sends::default(),
            tls: TlsStats::default(),
            details: ErrorDetails::default(),
            spoken: [0; 2],
            waits: None,
            measure_start,
        }
    }

    /// Records one measured request to URL `url` that ended at `end`.
    #[inline]
    pub fn record(&mut self, stage: usize, url: usize, outcome: &Outcome, transfer: &Transfer, end: Instant) {
        if let Some(u) = self.urls.get_mut(url) {
            u.record(outcome);
        }
        let t_s = end.saturating_duration_since(self.measure_start).as_secs() as usize;
        if let Some(h) = &transfer.handshake {
            self.tls.record(h);
        }
        self.spoken[usize::from(transfer.h2)] += 1;
        let phase = &mut self.stages[stage];
        phase.add_transfer(transfer);
        match outcome {
            Outcome::Completed(s) => {
                phase.record_ok(s);
                self.timeline.record_ok(t_s, s.latency_us);
            }
            Outcome::Failed(class) => {
                phase.errors.add(*class);
                if let Some(d) = transfer.detail {
                    self.details.add(*class, d);
                }
                self.timeline.record_error(t_s);
            }
        }
        self.last_event = Some(self.last_event.map_or(end, |t| t.max(end)));
    }

    pub fn merge(&mut self, other: &ThreadStats) {
        for (a, b) in self.stages.iter_mut().zip(&other.stages) {
            a.merge(b);
        }
        self.timeline.merge(&other.timeline);
        self.clients.merge(&other.clients);
        for (a, b) in self.urls.iter_mut().zip(&other.urls) {
            a.merge(b);
        }
        self.headers.merge(&other.headers);
        if let (Some(a), Some(b)) = (&mut self.pages, &other.pages) {
            a.merge(b);
        }
        if let (Some(a), Some(b)) = (&mut self.visits, &other.visits) {
            a.merge(b);
        }
        self.sends.merge(&other.sends);
        self.tls.merge(&other.tls);
        self.details.merge(&other.details);
        self.spoken[0] += other.spoken[0];
        self.spoken[1] += other.spoken[1];
        self.waits = match (self.waits, other.waits) {
            (Some(mut a), Some(b)) => {
                a.merge(&b);
                Some(a)
            }
            (a, b) => a.or(b),
        };
        self.last_event = match (self.last_event, other.last_event) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        };
    }

    /// All stages added up: the whole run.
    pub fn whole_run(&self) -> PhaseStats {
        let mut total = self.stages[0].clone();
        for s in &self.stages[1..] {
            total.merge(s);
        }
        total
    }
}
