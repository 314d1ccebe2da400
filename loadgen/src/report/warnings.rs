//! Warnings with advice (as hyperfine does): things that make a result less
//! trustworthy than its numbers look.

use super::{PhaseDoc, SATURATION};
use crate::config::Config;
use crate::stats::clients::ClientStats;

/// Failed requests above this share of all requests get a warning.
const FAILED_SHARE: f64 = 0.01;
/// Open loop: achieved send rate below this share of the target gets a warning.
const RATE_SHARE: f64 = 0.95;
/// In-flight requests only matter when they are clearly older than any response in
/// the table: at the end of every run each connection has a request under way.
const IN_FLIGHT_MIN_AGE_US: u64 = 100_000;

pub fn collect(cfg: &Config, r: &PhaseDoc, busy: &[Option<f64>], clients: &ClientStats) -> Vec<String> {
    let mut out = Vec::new();
    if clients.without_response > 0 && clients.without_response == clients.measured {
        out.push(format!(
            "none of the {} connections got a response during the measured phase",
            clients.measured
        ));
    } else if clients.without_response > 0 {
        out.push(format!(
            "{} of {} connections got no response during the measured phase: the server served only \
             some clients (e.g. prefork children held by keep-alive); the latencies describe the served ones",
            clients.without_response, clients.measured
        ));
    }
    // An unanswered request older than the slowest answered one (by 2×, and at
    // least 100 ms) would have been the worst latency of the run: the table
    // leaves out its tail.
    let slowest = r.latency_us.max.unwrap_or(0);
    let threshold = slowest.saturating_mul(2).max(IN_FLIGHT_MIN_AGE_US);
    let old = clients.in_flight.count_above(threshold);
    if old > 0 {
        let oldest = clients.in_flight.summary().max.unwrap_or(0);
        out.push(format!(
            "{old} request(s) still unanswered at the end had waited longer than {:.0} ms (oldest {:.0} ms; \
             slowest completed response {:.0} ms): the latency figures leave them out",
            threshold as f64 / 1000.0,
            oldest as f64 / 1000.0,
            slowest as f64 / 1000.0
        ));
    }
    let c = &r.requests;
    let connect_errors: u64 = r.errors.iter().filter(|&(name, _)| *name == "connect").map(|(_, &n)| n).sum();
    let target_down = c.completed == 0 && connect_errors > 0;
    if target_down {
        // A busy engine is then only retrying refused connects: "add threads" would be
        // the wrong advice.
        out.push(format!(
            "no connection to the target succeeded ({connect_errors} connect errors): is a server listening there?"
        ));
    }
    for (k, b) in busy.iter().enumerate() {
        if let Some(b) = *b
            && b >= SATURATION
            && !target_down
        {
            out.push(format!(
                "engine thread {k} was busy {:.0}% of the time: the result may measure the load \
                 generator, not the server — add threads or cores",
                b * 100.0
            ));
        }
    }

    let attempted = c.completed + c.failed;
    if attempted == 0 {
        out.push("no request completed or failed in the measured phase".into());
    } else if c.failed as f64 > FAILED_SHARE * attempted as f64 {
        let classes: Vec<String> =
            r.errors.iter().filter(|&(_, &n)| n > 0).map(|(name, n)| format!("{name} {n}")).collect();
        out.push(format!(
            "{:.1}% of requests failed ({}): the throughput and latencies describe the requests that succeeded",
            100.0 * c.failed as f64 / attempted as f64,
            classes.join(", ")
        ));
    }
    // With keep-alive asked for, a server that closes after (almost) every response
    // (an HTTP/1.0 server, or keep-alive off in its config) turns the run into a
    // connect-per-request one: say so, it changes every figure.
    let budget_allows_reuse = cfg.keepalive_requests.is_none_or(|k| k > 2);
    if cfg.keepalive && budget_allows_reuse && c.completed >= 100 && r.connections_opened * 2 > c.completed {
        out.push(format!(
            "keep-alive was asked for, but {} connections were opened for {} responses: the server closed \
             the connection after most responses, so this measures a new connection per request",
            r.connections_opened, c.completed
        ));
    }
    if c.completed > 0 && c.non_2xx > 0 {
        out.push(format!(
            "{} responses ({:.1}%) were not 2xx: check the target serves what you meant to measure",
            c.non_2xx,
            100.0 * c.non_2xx as f64 / c.completed as f64
        ));
    }
    if r.latency_us.over_range > 0 {
        out.push(format!(
            "{} latencies were above the histogram's {} s range and were clamped to it",
            r.latency_us.over_range,
            r.latency_us.histogram_max_us / 1_000_000
        ));
    }
    // The engine's timers have 1 ms resolution: a connection waiting for its slot
    // wakes up to 1 ms late. With fewer than ~2 ms worth of connections, the next
    // slots fall due meanwhile and count that generator delay as latency.
    if let Some(rate) = cfg.rate
        && f64::from(cfg.connections) < rate * 0.002
    {
        out.push(format!(
            "{} connections for {rate} requests/s: with the engine's 1 ms timer resolution, \
             latency_us may include up to ~1 ms of generator delay — use at least {:.0} connections",
            cfg.connections,
            (rate * 0.002).ceil()
        ));
    }
    if let Some(rate) = cfg.rate
        && r.duration_us > 0
    {
        let sent_per_s = attempted as f64 / (r.duration_us as f64 / 1e6);
        if sent_per_s < RATE_SHARE * rate {
            out.push(format!(
                "only {sent_per_s:.0} of the {rate} requests/s asked for were sent: all {} connections \
                 were busy (latency_us includes that wait) — add connections to keep the loop open",
                cfg.connections
            ));
        }
    }
    if r.duration_us > 0 && r.duration_us < 1_000_000 && cfg.requests.is_none() {
        out.push("the measured phase lasted less than 1 s: results are noisy".into());
    }
    out
}
