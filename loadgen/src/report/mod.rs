//! The result document (schema/result-v1.schema.json) built from measurements,
//! and its two renderings: JSON for the lab, text for people.

pub mod document;
pub mod json;
pub mod text;
pub mod warnings;

use std::collections::BTreeMap;
use std::time::Duration;

pub use document::*;

use crate::config::Config;
use crate::protocol::Protocol;
use crate::run::Measured;
use crate::stats::tls::{ErrorDetails, TlsStats};
use crate::stats::visits::VisitStats;
use crate::stats::{Detail, ErrorClass, PhaseStats};
use crate::tls;
use crate::urls::Shape;
use warnings::Warning;

pub const SCHEMA_VERSION: u32 = 1;

/// An engine thread at or above this share of its core probably limited the result.
pub const SATURATION: f64 = 0.9;

fn micros(d: Duration) -> u64 {
    d.as_micros() as u64
}

fn per_second(count: u64, duration: Duration) -> Option<f64> {
    (!duration.is_zero()).then(|| count as f64 / duration.as_secs_f64())
}

/// Which error classes a run's documents carry: the FastCGI, TLS and HTTP/2 ones
/// only in runs that can have them, so older documents keep their keys.
#[derive(Clone, Copy)]
struct Classes {
    fastcgi: bool,
    tls: bool,
    h2: bool,
}

impl Classes {
    fn of(cfg: &Config) -> Classes {
        Classes { fastcgi: cfg.protocol == Protocol::FastCgi, tls: cfg.tls.is_some(), h2: cfg.http2() }
    }

    fn has(self, c: ErrorClass) -> bool {
        match c {
            ErrorClass::Rejected => self.fastcgi,
            ErrorClass::TlsHandshake | ErrorClass::TlsUntrusted => self.tls,
            ErrorClass::H2Goaway | ErrorClass::H2RstStream => self.h2,
            _ => true,
        }
    }
}

fn detail_name(d: Detail) -> String {
    match d {
        Detail::Text(t) => t.to_string(),
        Detail::Alert(code) => tls::alert_name(code),
        Detail::H2(code) => format!("{:?}", h2::Reason::from(code)),
    }
}

fn details_doc(d: &ErrorDetails) -> BTreeMap<&'static str, BTreeMap<String, u64>> {
    let mut out: BTreeMap<&'static str, BTreeMap<String, u64>> = BTreeMap::new();
    for &(class, detail, n) in &d.0 {
        *out.entry(class.name()).or_default().entry(detail_name(detail)).or_default() += n;
    }
    out
}

fn tls_doc(t: &TlsStats) -> TlsDoc {
    TlsDoc {
        handshakes: Handshakes { full: t.full, resumed: t.resumed },
        connect_us: t.connect.latency_doc(false),
        handshake_us: t.handshake.latency_doc(false),
        negotiated: t
            .negotiated
            .iter()
            .map(|(n, connections)| NegotiatedDoc {
                alpn: n.alpn.name(),
                version: n.version_name(),
                cipher: n.cipher_name(),
                group: n.group_name(),
                connections: *connections,
            })
            .collect(),
    }
}

/// What was spoken, from the measured requests (what was offered if none).
fn protocol_name(cfg: &Config, spoken: [u64; 2]) -> &'static str {
    match (cfg.protocol, spoken) {
        (Protocol::FastCgi, _) => "fastcgi",
        (_, [0, 0]) if cfg.http2() => "h2",
        (_, [_, 0]) => "http/1.1",
        (_, [0, _]) => "h2",
        _ => "mixed",
    }
}

fn phase_doc(p: &PhaseStats, duration: Duration, classes: Classes, buckets: bool) -> PhaseDoc {
    PhaseDoc {
        requests: Counts {
            completed: p.completed,
            ok_2xx: p.ok_2xx,
            non_2xx: p.non_2xx,
            failed: p.failed(),
            in_flight_at_end: None,
            in_flight_oldest_us: None,
            due: None,
            not_sent: None,
            sent_late: None,
        },
        // `rejected` exists only in FastCGI mode, the TLS classes only for https, the
        // HTTP/2 ones only with --http2: so older documents keep their classes.
        errors: ErrorClass::ALL
            .iter()
            .filter(|&&c| classes.has(c))
            .map(|&c| (c.name(), p.errors.get(c)))
            .collect(),
        status_codes: p
            .status
            .iter()
            .enumerate()
            .filter(|&(_, &n)| n > 0)
            .map(|(code, &n)| (code as u16, n))
            .collect(),
        bytes: Bytes { sent: p.transfer.sent, received: p.transfer.received, body_received: p.transfer.body },
        connections_opened: p.transfer.connections_opened,
        duration_us: micros(duration),
        requests_per_s: per_second(p.completed, duration),
        bytes_per_s: per_second(p.transfer.received, duration),
        latency_us: p.latency.latency_doc(buckets),
        latency_uncorrected_us: p.uncorrected.as_ref().map(|h| h.latency_doc(buckets)),
        phases_us: Phases {
            connect: p.connect.summary(),
            waiting: p.waiting.summary(),
            processing: p.processing.summary(),
            total: p.total().summary(),
        },
    }
}

fn visits_doc(v: &VisitStats, m: &Measured) -> VisitsDoc {
    let per_visit = |n: u64| (v.completed > 0).then(|| n as f64 / v.completed as f64);
    // Open loop: every visit due in the phase was begun by a visitor slot or not (the
    // schedule's slots are visits here).
    let sends = m.stats.sends;
    VisitsDoc {
        completed: v.completed,
        failed: v.failed,
        in_flight_at_end: v.in_flight_at_end,
        per_s: per_second(v.completed, m.duration),
        pages: v.pages,
        requests: v.requests,
        pages_per_visit: per_visit(v.pages),
        requests_per_visit: per_visit(v.requests),
        due: m.due,
        not_started: m.due.map(|due| due.saturating_sub(sends.sent)),
        started_late: m.due.map(|_| sends.late),
    }
}

fn visit_pages_doc(cfg: &Config, m: &Measured) -> Vec<VisitPageDoc> {
    let (Some(setup), Some(v)) = (&cfg.visits, &m.stats.visits) else { return Vec::new() };
    setup
        .journey
        .rows()
        .into_iter()
        .zip(&v.rows)
        .map(|(row, s)| VisitPageDoc {
            name: row.name,
            path: row.path,
            login: row.login,
            completed: s.completed,
            failed: s.failed,
            per_s: per_second(s.completed, m.duration),
            load_us: s.load.latency_doc(cfg.histogram),
        })
        .collect()
}

pub fn build(cfg: &Config, m: &Measured) -> Document {
    let whole = m.stats.whole_run();
    let max_busy = m.busy.iter().flatten().copied().fold(None, |acc: Option<f64>, b| Some(acc.map_or(b, |a| a.max(b))));
    let saturated = max_busy.is_some_and(|b| b >= SATURATION);
    let stages = cfg
        .stages
        .iter()
        .zip(&m.stats.stages)
        .zip(&m.stage_durations)
        .enumerate()
        .map(|(index, ((stage, stats), &duration))| StageDoc {
            index,
            connections: stage.connections,
            rate: cfg.rate,
            result: phase_doc(stats, duration, Classes::of(cfg), false),
        })
        .collect();
    let timeline_seconds = m.duration.as_micros().div_ceil(1_000_000) as usize;
    let mut result = phase_doc(&whole, m.duration, Classes::of(cfg), cfg.histogram);
    let clients = &m.stats.clients;
    let in_flight = clients.in_flight.summary();
    result.requests.in_flight_at_end = Some(in_flight.count);
    result.requests.in_flight_oldest_us = Some(in_flight.max);
    // Open loop: every measured slot due in the phase was handed to a connection
    // (sent) or not; the schedule counts the first exactly, the threads the second.
    let sends = m.stats.sends;
    debug_assert!(m.due.is_none_or(|due| sends.sent <= due), "sent {} of {:?} due", sends.sent, m.due);
    result.requests.due = Some(m.due);
    result.requests.not_sent = Some(m.due.map(|due| due.saturating_sub(sends.sent)));
    result.requests.sent_late = Some(m.due.map(|_| sends.late));
    let per_url = m
        .stats
        .urls
        .iter()
        .zip(&cfg.urls)
        .map(|(u, entry)| UrlDoc {
            path: entry.path.clone(),
            method: entry.method,
            weight: entry.weight,
            requests: UrlCounts { completed: u.completed, ok_2xx: u.ok_2xx, non_2xx: u.non_2xx, failed: u.failed },
            latency_us: u.latency.latency_doc(cfg.histogram),
        })
        .collect();
    let pages = m.stats.pages.as_ref();
    let visits = m.stats.visits.as_ref().map(|v| visits_doc(v, m));
    if visits.is_some() {
        // The schedule is of visits: their due counts are in `visits`.
        (result.requests.due, result.requests.not_sent, result.requests.sent_late) = (Some(None), Some(None), Some(None));
    }
    let mut warnings = warnings::collect(cfg, &result, visits.as_ref(), &m.busy, clients);
    if let Some(reason) = &m.io_fallback {
        warnings.insert(0, Warning::IoFallback { asked: cfg.io.name(), used: m.io.name(), reason: reason.clone() });
    }
    let warning_sentences = warnings.iter().map(ToString::to_string).collect();
    Document {
        schema_version: SCHEMA_VERSION,
        engine: Engine { name: "stackbench-load", version: env!("CARGO_PKG_VERSION") },
        config: ConfigDoc {
            url: cfg.url_text.clone(),
            method: cfg.method.clone(),
            connections: cfg.connections,
            threads: cfg.threads,
            duration_us: cfg.duration.map(micros),
            requests: cfg.requests,
            warmup_us: micros(cfg.warmup),
            keepalive: cfg.keepalive,
            timeout_us: micros(cfg.timeout).max(1),
            rate: cfg.rate,
            keepalive_requests: cfg.keepalive_requests,
            read_rate: cfg.read_bytes_per_s,
            read_bodies: !cfg.discard_bodies,
            rcvbuf: cfg.connect.rcvbuf,
            count_headers: cfg.count_headers.clone(),
            fastcgi: cfg.fastcgi.as_ref().map(|(address, script)| FastCgiDoc {
                address: address.clone(),
                script: script.clone(),
            }),
            page_conns: match cfg.shape {
                Shape::Page { conns } | Shape::Visit { conns } => Some(conns),
                _ => None,
            },
            tls: cfg.tls.as_ref().map(|t| TlsConfigDoc {
                trust: t.trust,
                handshake: t.handshake.name(),
                http2: t.http2,
                streams: cfg.streams,
            }),
            io: cfg.io.name(),
            journey: cfg.visits.as_ref().map(|v| v.journey.recorded.clone()),
        },
        started_unix_us: m.started_unix_us,
        start: cfg.start_at_unix_us.map(|asked| StartDoc { asked_unix_us: asked, began_unix_us: m.began_unix_us }),
        result,
        protocol: protocol_name(cfg, m.stats.spoken),
        io: m.io.name(),
        event_loop: m.event_loop.name(),
        tls: cfg.tls.as_ref().map(|_| tls_doc(&m.stats.tls)),
        error_details: details_doc(&m.stats.details),
        connections_measured: clients.measured,
        connections_without_response: clients.without_response,
        header_counts: m.stats.headers.to_map(&cfg.count_headers),
        per_url,
        pages: pages.map(|p| PagesDoc {
            completed: p.completed,
            failed: p.failed,
            per_s: per_second(p.completed, m.duration),
        }),
        page_load_us: pages.map(|p| p.load.latency_doc(cfg.histogram)),
        visits,
        visit_duration_us: m.stats.visits.as_ref().map(|v| v.duration.latency_doc(cfg.histogram)),
        visit_pages: visit_pages_doc(cfg, m),
        timeline: m.stats.timeline.entries(timeline_seconds),
        stages,
        engine_cpu: EngineCpu {
            user_us: m.cpu.user_us,
            system_us: m.cpu.system_us,
            max_thread_busy: max_busy,
            saturated,
            paced: m.stats.waits.map(|w| PacedDoc { sleeps: w.sleeps, events_found: w.found }),
        },
        warnings: warning_sentences,
        warning_codes: warnings,
    }
}
