//! A validated run configuration: the CLI's values after cross-field checks and
//! defaults, plus the pre-formatted request. Everything downstream trusts it.

use std::path::PathBuf;
use std::time::Duration;

use crate::cli::{Args, Stage};
use crate::error::Error;
use crate::fastcgi;
use crate::http::request;
use crate::net::{ConnectOptions, Endpoint};
use crate::slow_read::ReadRate;
use crate::target::{self, Url};
use crate::urls::{self, Shape, UrlArgs, UrlEntry};
use crate::wire::Protocol;

/// Used when neither `-d` nor `-n` (nor `--stages`) is given, like wrk.
pub const DEFAULT_DURATION: Duration = Duration::from_secs(10);

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
    /// What is requested: one URL, a weighted mix, or a page and its assets.
    pub urls: Vec<UrlEntry>,
    pub shape: Shape,
    /// One request per entry of `urls`, formatted once and sent as-is.
    pub request_bytes: Vec<Box<[u8]>>,
    pub count_headers: Vec<String>,
    pub keepalive_requests: Option<u32>,
    pub read_rate: Option<ReadRate>,
    pub connect: ConnectOptions,
}

impl Config {
    pub fn from_args(args: Args) -> Result<Config, Error> {
        let keepalive = !args.no_keepalive;
        let (protocol, endpoint, urls, url_text, request_bytes) = if let Some(address) = &args.fastcgi {
            let script = fastcgi_target(&args)?;
            let endpoint = fastcgi_endpoint(address, args.allow_remote)?;
            let default = format!("http://localhost/{}", script.rsplit('/').next().unwrap_or_default());
            let url_text = args.url.clone().unwrap_or(default);
            let url = target::parse_url(&url_text)?;
            let params = fastcgi::request::params(&script, &args.method, &url, &args.headers);
            let bytes = fastcgi::request::build(&params, keepalive).into_boxed_slice();
            let entry = UrlEntry { path: url.path.clone(), weight: None };
            let urls = urls::Urls { server: url, server_text: url_text.clone(), entries: vec![entry], shape: Shape::Single };
            (Protocol::FastCgi, endpoint, urls, url_text, vec![bytes])
        } else {
            let urls = urls::resolve(&UrlArgs {
                positional: args.url.as_deref(),
                mix: &args.mix,
                page: args.page.as_deref(),
                assets: &args.assets,
                page_conns: args.page_conns,
            })?;
            let endpoint = Endpoint::Tcp(target::resolve(&urls.server, args.allow_remote)?);
            let bytes = urls
                .entries
                .iter()
                .map(|e| {
                    let url = Url { path: e.path.clone(), ..urls.server.clone() };
                    request::build(&args.method, &url, &args.headers, keepalive).into_boxed_slice()
                })
                .collect();
            (Protocol::Http, endpoint, urls.clone(), urls.server_text, bytes)
        };
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
        if args.keepalive_requests.is_some() && !keepalive {
            return Err(Error::Usage(
                "--keepalive-requests limits kept-alive connections: it means nothing with --no-keepalive".into(),
            ));
        }
        if matches!(urls.shape, Shape::Page { .. }) && args.rate.is_some() {
            return Err(Error::Usage("page mode runs closed loop: --rate cannot be combined with --page".into()));
        }
        let mut count_headers: Vec<String> = Vec::new();
        for name in args.count_headers {
            if count_headers.iter().any(|n| n.eq_ignore_ascii_case(&name)) {
                return Err(Error::Usage(format!("--count-header {name} is given twice")));
            }
            count_headers.push(name);
        }
        let connect = ConnectOptions { nodelay: keepalive, rcvbuf: args.rcvbuf };
        if connect.rcvbuf.is_some() && matches!(endpoint, Endpoint::Unix(_)) {
            return Err(Error::Usage("--rcvbuf applies to TCP connections only".into()));
        }

        Ok(Config {
            url_text,
            endpoint,
            protocol,
            fastcgi: args.fastcgi.zip(args.script),
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
            urls: urls.entries,
            shape: urls.shape,
            request_bytes,
            count_headers,
            keepalive_requests: args.keepalive_requests,
            read_rate: args.read_rate.map(|bytes_per_s| ReadRate { bytes_per_s }),
            connect,
        })
    }

    /// Per-URL statistics are kept for a mix and in page mode.
    pub fn per_url(&self) -> bool {
        self.shape != Shape::Single
    }

    /// HEAD responses carry no body whatever their Content-Length says (RFC 9110 §9.3.2).
    pub fn is_head(&self) -> bool {
        self.method.eq_ignore_ascii_case("HEAD")
    }
}

/// FastCGI mode needs an absolute script path and excludes the HTTP-only modes.
fn fastcgi_target(args: &Args) -> Result<String, Error> {
    if !args.mix.is_empty() || args.page.is_some() {
        return Err(Error::Usage("--fastcgi runs one script: --url and --page are HTTP only".into()));
    }
    let script = args
        .script
        .clone()
        .ok_or_else(|| Error::Usage("--fastcgi needs --script /absolute/path/to/script.php".into()))?;
    if !script.starts_with('/') {
        return Err(Error::Usage(format!(
            "--script '{script}' must be an absolute path (PHP-FPM resolves SCRIPT_FILENAME as is)"
        )));
    }
    Ok(script)
}

/// `unix:/path/to.sock`, or `[tcp:]HOST:PORT` under the same loopback rule as URLs.
pub fn fastcgi_endpoint(address: &str, allow_remote: bool) -> Result<Endpoint, Error> {
    if let Some(path) = address.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(Error::Usage("--fastcgi unix: needs a socket path".into()));
        }
        return Ok(Endpoint::Unix(PathBuf::from(path)));
    }
    let hostport = address.strip_prefix("tcp:").unwrap_or(address);
    let url = target::parse_url(&format!("http://{hostport}/"))
        .map_err(|_| Error::Usage(format!("--fastcgi '{address}': use unix:/PATH or HOST:PORT")))?;
    if !hostport.contains(':') {
        return Err(Error::Usage(format!("--fastcgi '{address}' needs a port (HOST:PORT)")));
    }
    Ok(Endpoint::Tcp(target::resolve(&url, allow_remote)?))
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
    fn fastcgi_addresses() {
        assert_eq!(fastcgi_endpoint("unix:/run/php.sock", false).unwrap(), Endpoint::Unix("/run/php.sock".into()));
        assert!(matches!(fastcgi_endpoint("tcp:127.0.0.1:9000", false), Ok(Endpoint::Tcp(a)) if a.port() == 9000));
        assert!(matches!(fastcgi_endpoint("127.0.0.1:9000", false), Ok(Endpoint::Tcp(_))));
        assert!(matches!(fastcgi_endpoint("10.0.0.1:9000", false), Err(Error::Usage(_))));
        assert!(fastcgi_endpoint("127.0.0.1", false).is_err());
        assert!(fastcgi_endpoint("unix:", false).is_err());
    }

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
