//! A validated run configuration: the CLI's values after cross-field checks and
//! defaults, plus the pre-formatted request. Everything downstream trusts it.

use std::net::SocketAddr;
use std::time::Duration;

use crate::cli::{Args, Stage};
use crate::error::Error;
use crate::http::request;
use crate::target;

/// Used when neither `-d` nor `-n` (nor `--stages`) is given, like wrk.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct Config {
    pub url_text: String,
    pub addr: SocketAddr,
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
    /// The request, formatted once and sent as-is on every connection.
    pub request: Vec<u8>,
}

impl Config {
    pub fn from_args(args: Args) -> Result<Config, Error> {
        let url = target::parse_url(&args.url)?;
        let addr = target::resolve(&url, args.allow_remote)?;
        let stages = args.stages.map(|p| p.0).unwrap_or_default();

        let (connections, duration) = if stages.is_empty() {
            if args.threads > args.connections {
                return Err(Error::Usage(format!(
                    "connections (-c {}) must be at least threads (-t {}): a thread without connections does nothing",
                    args.connections, args.threads
                )));
            }
            let duration = match (args.duration, args.requests) {
                (None, None) => Some(DEFAULT_DURATION),
                (d, _) => d,
            };
            (args.connections, duration)
        } else {
            if args.duration.is_some() || args.requests.is_some() {
                return Err(Error::Usage(
                    "--stages sets the duration itself: do not combine it with -d or -n".into(),
                ));
            }
            let max = stages.iter().map(|s| s.connections).max().unwrap_or(1);
            let total: Duration = stages.iter().map(|s| s.duration).sum();
            (max, Some(total))
        };
        if duration.is_some_and(|d| d.is_zero()) {
            return Err(Error::Usage("the duration (-d) must be above 0".into()));
        }
        if args.timeout.is_zero() {
            return Err(Error::Usage("the timeout must be above 0".into()));
        }

        let keepalive = !args.no_keepalive;
        let request = request::build(&args.method, &url, &args.headers, keepalive);
        Ok(Config {
            url_text: args.url,
            addr,
            method: args.method,
            connections,
            threads: args.threads,
            duration,
            requests: args.requests,
            warmup: args.warmup,
            keepalive,
            timeout: args.timeout,
            rate: args.rate,
            stages,
            json: args.json,
            request,
        })
    }

    /// HEAD responses carry no body whatever their Content-Length says (RFC 9110 §9.3.2).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
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
