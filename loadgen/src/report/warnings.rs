//! Warnings with advice (as hyperfine does): things that make a result less
//! trustworthy than its numbers look.
//!
//! Each warning is a value first: the document carries its sentence in
//! `warnings` and, at the same index, its code and numbers in `warning_codes`,
//! so a program can tell warnings apart, or word its own, without parsing text.
//! A new kind of warning is a new variant here, its sentence in `Display`, and
//! its code in the schema's enum (schema/result-v1.schema.json) and the README.

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;

use super::{PhaseDoc, SATURATION, VisitsDoc};
use crate::config::Config;
use crate::stats::clients::ClientStats;

/// Failed requests above this share of all requests get a warning.
const FAILED_SHARE: f64 = 0.01;
/// Open loop: achieved send rate below this share of the target gets a warning.
const RATE_SHARE: f64 = 0.95;
/// In-flight requests only matter when they are clearly older than any response in
/// the table: at the end of every run each connection has a request under way.
const IN_FLIGHT_MIN_AGE_US: u64 = 100_000;

/// One warning: serialised as `{"code": "<variant in snake_case>", "params": {...}}`.
/// Fractions are 0..1; durations are integer µs unless the name says otherwise.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "code", content = "params", rename_all = "snake_case")]
pub enum Warning {
    /// Not one of the connections got a response during the measured phase.
    NoResponseAll { connections: u64 },
    /// Some connections got no response during the measured phase.
    ClientsUnserved { without_response: u64, connections: u64 },
    /// Requests still unanswered at the end were older than the slowest response.
    InFlightOld { count: u64, threshold_us: u64, oldest_us: u64, slowest_us: u64 },
    /// Nothing completed and connects failed.
    TargetDown { connect_errors: u64 },
    /// An engine thread was busy at least `SATURATION` of the measured phase.
    EngineSaturated { thread: usize, busy: f64 },
    /// Nothing completed or failed in the measured phase.
    NoRequests {},
    /// More than `FAILED_SHARE` of the requests failed; `errors`: class → count.
    RequestsFailed { share: f64, failed: u64, attempted: u64, errors: BTreeMap<&'static str, u64> },
    /// Keep-alive asked for, but the server closed after most responses.
    ServerClosedKeepalive { connections_opened: u64, responses: u64 },
    /// Complete responses with a status outside 2xx.
    #[serde(rename = "non_2xx")]
    Non2xx {
        count: u64,
        share: f64,
        /// The sentence's denominator; not a parameter (share says it).
        #[serde(skip)]
        completed: u64,
    },
    /// Latencies above the histogram's range, clamped to it.
    LatencyOverRange { count: u64, range_s: u64 },
    /// Open loop with fewer connections than the 1 ms timer resolution needs.
    RateTimerResolution { connections: u32, rate: f64, min_connections: u64 },
    /// Open loop that sent less than `RATE_SHARE` of the asked rate; `due` and
    /// `not_sent` as in `requests`. Visits (`of`: "visits"): the rate is of visits
    /// begun, `due` and `not_sent` the visits' (`visits.due`, `visits.not_started`),
    /// `connections` the visitor slots.
    RateNotReached {
        sent_per_s: f64,
        rate: f64,
        connections: u32,
        due: u64,
        not_sent: u64,
        #[serde(skip_serializing_if = "Option::is_none")]
        of: Option<&'static str>,
    },
    /// A measured phase under 1 s (runs ended by `-n` are exempt).
    ShortRun { duration_us: u64 },
    /// `--io uring` asked for, but io_uring could not be set up here: the run used
    /// `used` (epoll); `reason` is the sentence saying why (errno, sysctl).
    IoFallback { asked: &'static str, used: &'static str, reason: String },
}

impl fmt::Display for Warning {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::NoResponseAll { connections } => {
                write!(f, "none of the {connections} connections got a response during the measured phase")
            }
            Warning::ClientsUnserved { without_response, connections } => write!(
                f,
                "{without_response} of {connections} connections got no response during the measured phase: the \
                 server served only some clients (e.g. prefork children held by keep-alive); the latencies describe \
                 the served ones"
            ),
            Warning::InFlightOld { count, threshold_us, oldest_us, slowest_us } => write!(
                f,
                "{count} request(s) still unanswered at the end had waited longer than {:.0} ms (oldest {:.0} ms; \
                 slowest completed response {:.0} ms): the latency figures leave them out",
                *threshold_us as f64 / 1000.0,
                *oldest_us as f64 / 1000.0,
                *slowest_us as f64 / 1000.0
            ),
            Warning::TargetDown { connect_errors } => write!(
                f,
                "no connection to the target succeeded ({connect_errors} connect errors): is a server listening there?"
            ),
            Warning::EngineSaturated { thread, busy } => write!(
                f,
                "engine thread {thread} was busy {:.0}% of the time: the result may measure the load generator, not \
                 the server — add threads or cores",
                busy * 100.0
            ),
            Warning::NoRequests {} => f.write_str("no request completed or failed in the measured phase"),
            Warning::RequestsFailed { failed, attempted, errors, .. } => {
                let classes: Vec<String> = errors.iter().map(|(name, n)| format!("{name} {n}")).collect();
                write!(
                    f,
                    "{:.1}% of requests failed ({}): the throughput and latencies describe the requests that succeeded",
                    100.0 * *failed as f64 / *attempted as f64,
                    classes.join(", ")
                )
            }
            Warning::ServerClosedKeepalive { connections_opened, responses } => write!(
                f,
                "keep-alive was asked for, but {connections_opened} connections were opened for {responses} \
                 responses: the server closed the connection after most responses, so this measures a new \
                 connection per request"
            ),
            Warning::Non2xx { count, completed, .. } => write!(
                f,
                "{count} responses ({:.1}%) were not 2xx: check the target serves what you meant to measure",
                100.0 * *count as f64 / *completed as f64
            ),
            Warning::LatencyOverRange { count, range_s } => {
                write!(f, "{count} latencies were above the histogram's {range_s} s range and were clamped to it")
            }
            Warning::RateTimerResolution { connections, rate, min_connections } => write!(
                f,
                "{connections} connections for {rate} requests/s: with the engine's 1 ms timer resolution, \
                 latency_us may include up to ~1 ms of generator delay — use at least {min_connections} connections"
            ),
            Warning::RateNotReached { sent_per_s, rate, connections, due, not_sent, of: None } => write!(
                f,
                "only {sent_per_s:.0} of the {rate} requests/s asked for were sent: all {connections} connections \
                 were busy (latency_us includes that wait); {not_sent} of the {due} requests due were never sent — \
                 add connections to keep the loop open"
            ),
            Warning::RateNotReached { sent_per_s, rate, connections, due, not_sent, of: Some(_) } => write!(
                f,
                "only {sent_per_s:.1} of the {rate} visits/s asked for were begun: all {connections} visitors were \
                 busy (the visits' durations include that wait); {not_sent} of the {due} visits due never began — \
                 add visitors (-c) to keep the loop open"
            ),
            Warning::ShortRun { .. } => f.write_str("the measured phase lasted less than 1 s: results are noisy"),
            Warning::IoFallback { reason, .. } => write!(f, "--io uring was asked for, but {reason}"),
        }
    }
}

/// The run's warnings; `visits`: a run of visits' figures (its open loop is of visits).
pub fn collect(cfg: &Config, r: &PhaseDoc, visits: Option<&VisitsDoc>, busy: &[Option<f64>], clients: &ClientStats)
               -> Vec<Warning> {
    let mut out = Vec::new();
    if clients.without_response > 0 && clients.without_response == clients.measured {
        out.push(Warning::NoResponseAll { connections: clients.measured });
    } else if clients.without_response > 0 {
        let (without_response, connections) = (clients.without_response, clients.measured);
        out.push(Warning::ClientsUnserved { without_response, connections });
    }
    // An unanswered request older than the slowest answered one (by 2×, and at
    // least 100 ms) would have been the worst latency of the run: the table
    // leaves out its tail.
    let slowest = r.latency_us.max.unwrap_or(0);
    let threshold = slowest.saturating_mul(2).max(IN_FLIGHT_MIN_AGE_US);
    let old = clients.in_flight.count_above(threshold);
    if old > 0 {
        let oldest = clients.in_flight.summary().max.unwrap_or(0);
        out.push(Warning::InFlightOld { count: old, threshold_us: threshold, oldest_us: oldest, slowest_us: slowest });
    }
    let c = &r.requests;
    let connect_errors: u64 = r.errors.iter().filter(|&(name, _)| *name == "connect").map(|(_, &n)| n).sum();
    let target_down = c.completed == 0 && connect_errors > 0;
    if target_down {
        // A busy engine is then only retrying refused connects: "add threads" would be
        // the wrong advice.
        out.push(Warning::TargetDown { connect_errors });
    }
    for (k, b) in busy.iter().enumerate() {
        if let Some(b) = *b
            && b >= SATURATION
            && !target_down
        {
            out.push(Warning::EngineSaturated { thread: k, busy: b });
        }
    }

    let attempted = c.completed + c.failed;
    if attempted == 0 {
        out.push(Warning::NoRequests {});
    } else if c.failed as f64 > FAILED_SHARE * attempted as f64 {
        out.push(Warning::RequestsFailed {
            share: c.failed as f64 / attempted as f64,
            failed: c.failed,
            attempted,
            errors: r.errors.iter().filter(|&(_, &n)| n > 0).map(|(&name, &n)| (name, n)).collect(),
        });
    }
    // With keep-alive asked for, a server that closes after (almost) every response
    // (an HTTP/1.0 server, or keep-alive off in its config) turns the run into a
    // connect-per-request one: say so, it changes every figure.
    // (Visits open connections of their own by design: each visitor is a new browser.)
    let budget_allows_reuse = cfg.keepalive_requests.is_none_or(|k| k > 2);
    if cfg.keepalive && budget_allows_reuse && visits.is_none() && c.completed >= 100
        && r.connections_opened * 2 > c.completed
    {
        out.push(Warning::ServerClosedKeepalive { connections_opened: r.connections_opened, responses: c.completed });
    }
    if c.completed > 0 && c.non_2xx > 0 {
        out.push(Warning::Non2xx {
            count: c.non_2xx,
            share: c.non_2xx as f64 / c.completed as f64,
            completed: c.completed,
        });
    }
    if r.latency_us.over_range > 0 {
        out.push(Warning::LatencyOverRange {
            count: r.latency_us.over_range,
            range_s: r.latency_us.histogram_max_us / 1_000_000,
        });
    }
    // The engine's timers have 1 ms resolution: a connection waiting for its slot
    // wakes up to 1 ms late. With fewer than ~2 ms worth of connections, the next
    // slots fall due meanwhile and count that generator delay as latency.
    // (A visit lasts seconds: a timer's millisecond is nothing to its arrival.)
    if let Some(rate) = cfg.rate
        && visits.is_none()
        && f64::from(cfg.connections) < rate * 0.002
    {
        out.push(Warning::RateTimerResolution {
            connections: cfg.connections,
            rate,
            min_connections: (rate * 0.002).ceil() as u64,
        });
    }
    if let Some(rate) = cfg.rate
        && r.duration_us > 0
    {
        // Always present for the whole run of an open loop (report/mod.rs).
        let (sent, due, not_sent, of) = match visits {
            Some(v) => {
                let (due, not_started) = (v.due.unwrap_or(0), v.not_started.unwrap_or(0));
                (due.saturating_sub(not_started), due, not_started, Some("visits"))
            }
            None => (attempted, c.due.flatten().unwrap_or(0), c.not_sent.flatten().unwrap_or(0), None),
        };
        let sent_per_s = sent as f64 / (r.duration_us as f64 / 1e6);
        if sent_per_s < RATE_SHARE * rate {
            out.push(Warning::RateNotReached { sent_per_s, rate, connections: cfg.connections, due, not_sent, of });
        }
    }
    if r.duration_us > 0 && r.duration_us < 1_000_000 && cfg.requests.is_none() {
        out.push(Warning::ShortRun { duration_us: r.duration_us });
    }
    out
}


#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::{Value, json};

    use super::*;
    use crate::stats::PhaseStats;

    /// A clean run: 1 s, 1000 responses, 4 connections, all served.
    fn setup() -> (Config, PhaseDoc, Vec<Option<f64>>, ClientStats) {
        let cfg = crate::config::from_words(&["-c", "4", "http://127.0.0.1:1/"]).expect("valid arguments");
        let classes = super::super::Classes::of(&cfg);
        let mut r = super::super::phase_doc(&PhaseStats::new(false), Duration::from_secs(1), classes, false);
        r.requests.completed = 1000;
        r.requests.ok_2xx = 1000;
        r.connections_opened = 4;
        r.latency_us.max = Some(2_000);
        let clients = ClientStats { measured: 4, ..ClientStats::default() };
        (cfg, r, vec![Some(0.5)], clients)
    }

    fn codes(w: &[Warning]) -> Vec<Value> {
        w.iter().map(|w| serde_json::to_value(w).unwrap()).collect()
    }

    /// The one warning of a scenario, as JSON, after checking it is alone.
    fn only(cfg: &Config, r: &PhaseDoc, busy: &[Option<f64>], clients: &ClientStats) -> Value {
        let w = collect(cfg, r, None, busy, clients);
        assert_eq!(w.len(), 1, "{w:?}");
        codes(&w).remove(0)
    }

    #[test]
    fn a_clean_run_has_no_warning() {
        let (cfg, r, busy, clients) = setup();
        assert_eq!(collect(&cfg, &r, None, &busy, &clients), []);
    }

    #[test]
    fn each_kind_has_its_code_and_numbers() {
        let mut seen = Vec::new();
        let mut check = |doc: Value, expected: Value| {
            assert_eq!(doc, expected);
            seen.push(doc["code"].as_str().unwrap().to_string());
        };

        let (cfg, r, busy, mut clients) = setup();
        clients.without_response = 4;
        check(only(&cfg, &r, &busy, &clients), json!({"code": "no_response_all", "params": {"connections": 4}}));
        clients.without_response = 3;
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "clients_unserved", "params": {"without_response": 3, "connections": 4}}),
        );

        let (cfg, r, busy, mut clients) = setup();
        clients.in_flight.record(500_000);
        clients.in_flight.record(50);
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "in_flight_old", "params":
                {"count": 1, "threshold_us": 100_000, "oldest_us": 500_000, "slowest_us": 2_000}}),
        );

        let (cfg, mut r, _, clients) = setup();
        r.requests.completed = 0;
        r.requests.failed = 7;
        r.errors.insert("connect", 7);
        // A saturated engine only retrying refused connects gets no "add threads" advice.
        let w = codes(&collect(&cfg, &r, None, &[Some(0.99)], &clients));
        check(w[0].clone(), json!({"code": "target_down", "params": {"connect_errors": 7}}));
        assert_eq!(w[1]["code"], "requests_failed");
        assert_eq!(w.len(), 2, "{w:?}");

        let (cfg, r, _, clients) = setup();
        check(
            only(&cfg, &r, &[None, Some(0.25), Some(0.95)], &clients),
            json!({"code": "engine_saturated", "params": {"thread": 2, "busy": 0.95}}),
        );

        let (cfg, mut r, busy, clients) = setup();
        r.requests.completed = 0;
        check(only(&cfg, &r, &busy, &clients), json!({"code": "no_requests", "params": {}}));

        let (cfg, mut r, busy, clients) = setup();
        r.requests.completed = 960;
        r.requests.failed = 40;
        r.errors.insert("timeout", 30);
        r.errors.insert("reset", 10);
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "requests_failed", "params":
                {"share": 0.04, "failed": 40, "attempted": 1000, "errors": {"reset": 10, "timeout": 30}}}),
        );

        let (cfg, mut r, busy, clients) = setup();
        r.connections_opened = 1000;
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "server_closed_keepalive", "params": {"connections_opened": 1000, "responses": 1000}}),
        );

        let (cfg, mut r, busy, clients) = setup();
        r.requests.non_2xx = 250;
        check(only(&cfg, &r, &busy, &clients), json!({"code": "non_2xx", "params": {"count": 250, "share": 0.25}}));

        let (cfg, mut r, busy, clients) = setup();
        r.latency_us.over_range = 3;
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "latency_over_range", "params": {"count": 3, "range_s": 60}}),
        );

        let (mut cfg, mut r, busy, clients) = setup();
        cfg.rate = Some(3000.0);
        r.requests.completed = 3000;
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "rate_timer_resolution", "params":
                {"connections": 4, "rate": 3000.0, "min_connections": 6}}),
        );
        cfg.rate = Some(1500.0);
        r.requests.completed = 1000;
        r.requests.due = Some(Some(1500));
        r.requests.not_sent = Some(Some(496));
        let w = collect(&cfg, &r, None, &busy, &clients);
        assert_eq!(
            w[0].to_string(),
            "only 1000 of the 1500 requests/s asked for were sent: all 4 connections were busy (latency_us \
             includes that wait); 496 of the 1500 requests due were never sent — add connections to keep the loop \
             open"
        );
        check(
            only(&cfg, &r, &busy, &clients),
            json!({"code": "rate_not_reached", "params":
                {"sent_per_s": 1000.0, "rate": 1500.0, "connections": 4, "due": 1500, "not_sent": 496}}),
        );

        // Visits: the open loop is of visits; each visit's own connections and long
        // arrivals warn of neither keep-alive nor the timer.
        let (mut cfg, mut r, busy, clients) = setup();
        cfg.rate = Some(3000.0);
        r.connections_opened = 1000;
        let visits = VisitsDoc { due: Some(40), not_started: Some(32), ..VisitsDoc::default() };
        let w = collect(&cfg, &r, Some(&visits), &busy, &clients);
        assert_eq!(codes(&w), [json!({"code": "rate_not_reached", "params":
            {"sent_per_s": 8.0, "rate": 3000.0, "connections": 4, "due": 40, "not_sent": 32, "of": "visits"}})]);
        assert_eq!(
            w[0].to_string(),
            "only 8.0 of the 3000 visits/s asked for were begun: all 4 visitors were busy (the visits' durations \
             include that wait); 32 of the 40 visits due never began — add visitors (-c) to keep the loop open"
        );

        let (cfg, mut r, busy, clients) = setup();
        r.duration_us = 400_000;
        check(only(&cfg, &r, &busy, &clients), json!({"code": "short_run", "params": {"duration_us": 400_000}}));

        // Not from collect(): the run itself knows (report/mod.rs puts it first).
        let reason = "io_uring is not available here (Operation not permitted (os error 1)): the run used epoll";
        let fallback = Warning::IoFallback { asked: "uring", used: "epoll", reason: reason.into() };
        assert_eq!(fallback.to_string(), format!("--io uring was asked for, but {reason}"));
        check(
            serde_json::to_value(&fallback).unwrap(),
            json!({"code": "io_fallback", "params": {"asked": "uring", "used": "epoll", "reason": reason}}),
        );

        // Every code the schema lists is produced above, and nothing else.
        let schema: Value = serde_json::from_str(include_str!("../../schema/result-v1.schema.json")).unwrap();
        let listed = schema.pointer("/$defs/warning_code/properties/code/enum").expect("the schema lists the codes");
        let mut listed: Vec<String> = serde_json::from_value(listed.clone()).unwrap();
        listed.sort();
        seen.sort();
        assert_eq!(seen, listed);
    }

    #[test]
    fn sentences_keep_their_wording() {
        let (cfg, mut r, busy, clients) = setup();
        r.requests.completed = 960;
        r.requests.non_2xx = 96;
        r.requests.failed = 40;
        r.errors.insert("timeout", 30);
        r.errors.insert("reset", 10);
        let text: Vec<String> = collect(&cfg, &r, None, &busy, &clients).iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "4.0% of requests failed (reset 10, timeout 30): the throughput and latencies describe the \
                 requests that succeeded",
                "96 responses (10.0%) were not 2xx: check the target serves what you meant to measure",
            ]
        );
    }
}
