//! The result document's types (schema/result-v1.schema.json), serialised as is.
//! Fields added after the first release of schema 1 are optional in the schema
//! (additive only); the engine always writes them.

use std::collections::BTreeMap;

use serde::Serialize;

use super::warnings::Warning;
use crate::stats::histogram::{Latency, Summary};
use crate::stats::timeline::TimelineEntry;

#[derive(Serialize, Debug)]
pub struct StartDoc {
    pub asked_unix_us: u64,
    pub began_unix_us: u64,
}

#[derive(Serialize, Debug)]
pub struct Document {
    pub schema_version: u32,
    pub engine: Engine,
    pub config: ConfigDoc,
    pub started_unix_us: u64,
    /// --start-at: the instant asked and the one the engine began at (its own clock).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start: Option<StartDoc>,
    #[serde(flatten)]
    pub result: PhaseDoc,
    /// What was spoken: "http/1.1", "h2", "mixed" (both: an --http2 run some of
    /// whose connections the server gave HTTP/1.1), or "fastcgi".
    pub protocol: &'static str,
    /// The I/O path the connections ran on: "epoll" or "uring" (config.io is the
    /// one asked for; they differ after a fallback, which a warning explains).
    pub io: &'static str,
    /// How the connections were driven: "direct" (one epoll loop a thread, closed-loop
    /// HTTP/1.1 on clear TCP) or "tasks" (a task a connection: every other run).
    pub event_loop: &'static str,
    /// https: handshakes and what they negotiated; null for http and FastCGI.
    pub tls: Option<TlsDoc>,
    /// Failed requests of the classes that carry a detail (TLS alert, certificate
    /// problem, HTTP/2 error code): class → detail → requests.
    pub error_details: BTreeMap<&'static str, BTreeMap<String, u64>>,
    /// Client connections that took part in the measured phase.
    pub connections_measured: u64,
    /// Of those, the ones that got no complete response during it.
    pub connections_without_response: u64,
    /// --count-header: header name → value → responses.
    pub header_counts: BTreeMap<String, BTreeMap<String, u64>>,
    /// URL mix and page mode: one entry per URL; empty otherwise.
    pub per_url: Vec<UrlDoc>,
    /// Page mode, and visits (every page view of the journey, its login aside).
    pub pages: Option<PagesDoc>,
    pub page_load_us: Option<Latency>,
    /// Visits (`--journey`) only, null otherwise: how many, their pages and requests.
    pub visits: Option<VisitsDoc>,
    /// Visits only: complete visits' durations, from the intended start (think times
    /// included), on a 1 h histogram.
    pub visit_duration_us: Option<Latency>,
    /// Visits only (empty otherwise): the login, then each page of the journey.
    pub visit_pages: Vec<VisitPageDoc>,
    pub timeline: Vec<TimelineEntry>,
    pub stages: Vec<StageDoc>,
    pub engine_cpu: EngineCpu,
    /// For people: one sentence per warning.
    pub warnings: Vec<String>,
    /// For programs: the same warnings, same order, as a code and its numbers.
    pub warning_codes: Vec<Warning>,
}

#[derive(Serialize, Debug)]
pub struct Engine {
    pub name: &'static str,
    pub version: &'static str,
}

#[derive(Serialize, Debug)]
pub struct ConfigDoc {
    pub url: String,
    pub method: String,
    pub connections: u32,
    pub threads: u32,
    pub duration_us: Option<u64>,
    pub requests: Option<u64>,
    pub warmup_us: u64,
    pub keepalive: bool,
    pub timeout_us: u64,
    pub rate: Option<f64>,
    pub keepalive_requests: Option<u32>,
    pub read_rate: Option<u64>,
    pub read_bodies: bool,
    pub rcvbuf: Option<u32>,
    pub count_headers: Vec<String>,
    pub fastcgi: Option<FastCgiDoc>,
    pub page_conns: Option<u32>,
    /// https only (null for http).
    pub tls: Option<TlsConfigDoc>,
    /// --io as asked (or its default): "epoll" or "uring".
    pub io: &'static str,
    /// --journey as given, its login form's values replaced by "*"; null without.
    pub journey: Option<serde_json::Value>,
}

#[derive(Serialize, Debug)]
pub struct TlsConfigDoc {
    /// "cacert" (chain verified against --cacert) or "pin" (--pin-cert).
    pub trust: &'static str,
    /// "keep-alive", "resumed" or "full".
    pub handshake: &'static str,
    pub http2: bool,
    /// Concurrent streams per connection (HTTP/2).
    pub streams: u32,
}

/// The handshakes of the connections measured requests opened.
#[derive(Serialize, Debug)]
pub struct TlsDoc {
    pub handshakes: Handshakes,
    /// TCP connect time per new connection.
    pub connect_us: Latency,
    /// TLS handshake time per new connection (ClientHello → handshake complete).
    pub handshake_us: Latency,
    pub negotiated: Vec<NegotiatedDoc>,
}

#[derive(Serialize, Debug)]
pub struct Handshakes {
    pub full: u64,
    pub resumed: u64,
}

#[derive(Serialize, Debug)]
pub struct NegotiatedDoc {
    pub alpn: Option<&'static str>,
    pub version: Option<String>,
    pub cipher: Option<String>,
    pub group: Option<String>,
    pub connections: u64,
}

#[derive(Serialize, Debug)]
pub struct FastCgiDoc {
    pub address: String,
    pub script: String,
}

/// The fields shared by the whole run and each stage.
#[derive(Serialize, Debug)]
pub struct PhaseDoc {
    pub requests: Counts,
    pub errors: BTreeMap<&'static str, u64>,
    pub status_codes: BTreeMap<u16, u64>,
    pub bytes: Bytes,
    pub connections_opened: u64,
    pub duration_us: u64,
    pub requests_per_s: Option<f64>,
    pub bytes_per_s: Option<f64>,
    pub latency_us: Latency,
    pub latency_uncorrected_us: Option<Latency>,
    pub phases_us: Phases,
}

#[derive(Serialize, Debug)]
pub struct StageDoc {
    pub index: usize,
    pub connections: u32,
    pub rate: Option<f64>,
    #[serde(flatten)]
    pub result: PhaseDoc,
}

#[derive(Serialize, Debug)]
pub struct Counts {
    pub completed: u64,
    pub ok_2xx: u64,
    pub non_2xx: u64,
    pub failed: u64,
    /// Whole run only (absent in stages).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_at_end: Option<u64>,
    /// Whole run only; inner None = nothing in flight.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_flight_oldest_us: Option<Option<u64>>,
    /// Whole run only; inner None = closed loop. Open loop: measured slots due in
    /// the measured phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub due: Option<Option<u64>>,
    /// Whole run only; inner None = closed loop. Of `due`, never sent: no
    /// connection was free before the measured phase ended.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub not_sent: Option<Option<u64>>,
    /// Whole run only; inner None = closed loop. Measured requests sent more than
    /// 1 ms after they were due.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sent_late: Option<Option<u64>>,
}

#[derive(Serialize, Debug)]
pub struct Bytes {
    pub sent: u64,
    pub received: u64,
    pub body_received: u64,
}

#[derive(Serialize, Debug)]
pub struct Phases {
    pub connect: Summary,
    pub waiting: Summary,
    pub processing: Summary,
    pub total: Summary,
}

#[derive(Serialize, Debug)]
pub struct EngineCpu {
    pub user_us: u64,
    pub system_us: u64,
    pub max_thread_busy: Option<f64>,
    pub saturated: bool,
    /// Only when the direct loop paces (client/pacer.rs: multiplexed HTTP/2 by default,
    /// every direct loop with STACKBENCH_LOAD_WAIT=pace): how often it slept on a timer
    /// instead of blocking on its sockets, in the measured phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub paced: Option<PacedDoc>,
}

#[derive(Serialize, Debug)]
pub struct PacedDoc {
    pub sleeps: u64,
    /// Socket events waiting when those sleeps ended.
    pub events_found: u64,
}

#[derive(Serialize, Debug)]
pub struct UrlDoc {
    pub path: String,
    /// Visits only: GET, or POST for a login's form (the same path may be both).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub method: Option<&'static str>,
    pub weight: Option<u32>,
    pub requests: UrlCounts,
    pub latency_us: Latency,
}

#[derive(Serialize, Debug)]
pub struct UrlCounts {
    pub completed: u64,
    pub ok_2xx: u64,
    pub non_2xx: u64,
    pub failed: u64,
}

#[derive(Serialize, Debug)]
pub struct PagesDoc {
    pub completed: u64,
    pub failed: u64,
    pub per_s: Option<f64>,
}

/// Visits: the schema's `visits`. Counted if due (begun, closed loop) in the measured phase.
#[derive(Serialize, Debug, Default, Clone)]
pub struct VisitsDoc {
    /// Every step completed (any status).
    pub completed: u64,
    /// A request failed: the visitor left.
    pub failed: u64,
    /// Still going when the measured phase ended.
    pub in_flight_at_end: u64,
    /// completed / duration.
    pub per_s: Option<f64>,
    /// Page views and requests of the completed visits (the login's requests included).
    pub pages: u64,
    pub requests: u64,
    pub pages_per_visit: Option<f64>,
    pub requests_per_visit: Option<f64>,
    /// Open loop (null in closed loop): visits due in the measured phase, those that
    /// never began (every visitor busy), and those begun more than 1 ms late.
    pub due: Option<u64>,
    pub not_started: Option<u64>,
    pub started_late: Option<u64>,
}

/// One row of `visit_pages`: the login, or a page of the journey (every view of it).
#[derive(Serialize, Debug)]
pub struct VisitPageDoc {
    /// The name the journey gave it, else its path.
    pub name: String,
    /// The page's path (the login: the form's POST target).
    pub path: String,
    pub login: bool,
    /// Views whose every request completed (any status), and those where one failed.
    pub completed: u64,
    pub failed: u64,
    pub per_s: Option<f64>,
    /// Complete views: first request's start → last byte (the login: its redirects'
    /// included).
    pub load_us: Latency,
}
