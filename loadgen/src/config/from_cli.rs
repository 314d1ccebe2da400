//! The one conversion from the command line (`cli::Args`) to a `Config`: CLI
//! values become the engine's types, cross-field rules are checked, defaults
//! filled in, and the requests formatted once. Errors are usage errors (exit 2).

use std::path::PathBuf;
use std::time::Duration;

use super::{Config, DEFAULT_DURATION, Stage};
use crate::cli::{self, Args};
use crate::error::Error;
use crate::net::{ConnectOptions, Endpoint};
use crate::protocol::Protocol;
use crate::protocol::fastcgi;
use crate::protocol::http::request::{self, Header};
use crate::target::{self, Url};
use crate::urls::{self, MixEntry, Shape, UrlSpec, UrlEntry};

impl Config {
    pub fn from_args(args: Args) -> Result<Config, Error> {
        let keepalive = !args.no_keepalive;
        let headers: Vec<Header> = args.headers.iter().map(header).collect();
        let (protocol, endpoint, urls, url_text, request_bytes) = if let Some(address) = &args.fastcgi {
            let script = fastcgi_target(&args)?;
            let endpoint = fastcgi_endpoint(address, args.allow_remote)?;
            let default = format!("http://localhost/{}", script.rsplit('/').next().unwrap_or_default());
            let url_text = args.url.clone().unwrap_or(default);
            let url = target::parse_url(&url_text)?;
            let params = fastcgi::request::params(&script, &args.method, &url, &headers);
            let bytes = fastcgi::request::build(&params, keepalive).into_boxed_slice();
            let entry = UrlEntry { path: url.path.clone(), weight: None };
            let urls = urls::Urls { server: url, server_text: url_text.clone(), entries: vec![entry], shape: Shape::Single };
            (Protocol::FastCgi, endpoint, urls, url_text, vec![bytes])
        } else {
            let mix: Vec<MixEntry> = args.mix.iter().map(mix_entry).collect();
            let urls = urls::resolve(&UrlSpec {
                positional: args.url.as_deref(),
                mix: &mix,
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
                    request::build(&args.method, &url, &headers, keepalive).into_boxed_slice()
                })
                .collect();
            (Protocol::Http, endpoint, urls.clone(), urls.server_text, bytes)
        };
        let stages: Vec<Stage> = args.stages.map(|p| p.0.iter().map(stage).collect()).unwrap_or_default();

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
            progress: args.progress,
            start_at_unix_us: args.start_at,
            histogram: args.histogram,
            urls: urls.entries,
            shape: urls.shape,
            request_bytes,
            count_headers,
            keepalive_requests: args.keepalive_requests,
            read_bytes_per_s: args.read_rate,
            connect,
        })
    }
}

/// A Config as the command line `words` (without the program name) would build it.
#[cfg(test)]
pub fn from_words(words: &[&str]) -> Result<Config, Error> {
    use clap::Parser;
    Config::from_args(Args::parse_from(std::iter::once("stackbench-load").chain(words.iter().copied())))
}

// The command line's value types, in the engine's terms.

fn header(h: &cli::Header) -> Header {
    Header { name: h.name.clone(), value: h.value.clone() }
}

fn mix_entry(e: &cli::MixEntry) -> MixEntry {
    MixEntry { target: e.target.clone(), weight: e.weight }
}

fn stage(s: &cli::Stage) -> Stage {
    Stage { duration: s.duration, connections: s.connections }
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
fn fastcgi_endpoint(address: &str, allow_remote: bool) -> Result<Endpoint, Error> {
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
}
