//! The one conversion from the command line (`cli::Args`) to a `Config`: CLI
//! values become the engine's types, cross-field rules are checked, defaults
//! filled in, and the requests formatted once. Errors are usage errors (exit 2).

use std::path::PathBuf;
use std::time::Duration;

use super::{Config, DEFAULT_DURATION, DEFAULT_IO, Stage, VisitSetup};
use crate::cli::{self, Args};
use crate::error::Error;
use crate::journey::Journey;
use crate::net::{ConnectOptions, Endpoint};
use crate::protocol::Protocol;
use crate::protocol::fastcgi;
use crate::protocol::h2::request::{self as h2_request, H2Request};
use crate::protocol::http::request::{self, Header};
use crate::target::{self, Url};
use crate::tls::{HandshakeMode, TlsSetup};
use crate::uring::IoMode;
use crate::urls::{self, MixEntry, Shape, UrlSpec, UrlEntry};

impl Config {
    pub fn from_args(args: Args) -> Result<Config, Error> {
        let https = https_target(&args)?;
        let handshake = handshake_mode(&args, https)?;
        // resumed / full: a new connection per request, as --no-keepalive.
        let keepalive = !args.no_keepalive && handshake.is_none_or(|h| h == HandshakeMode::KeepAlive);
        let mut headers: Vec<Header> = args.headers.iter().map(header).collect();
        let mut visits = None;
        let (protocol, endpoint, urls, url_text, request_bytes) = if let Some(address) = &args.fastcgi {
            let script = fastcgi_target(&args)?;
            let endpoint = fastcgi_endpoint(address, args.allow_remote)?;
            let default = format!("http://localhost/{}", script.rsplit('/').next().unwrap_or_default());
            let url_text = args.url.clone().unwrap_or(default);
            let url = target::parse_url(&url_text)?;
            let params = fastcgi::request::params(&script, &args.method, &url, &headers);
            let bytes = fastcgi::request::build(&params, keepalive).into_boxed_slice();
            let entry = UrlEntry { path: url.path.clone(), weight: None, method: None };
            let urls = urls::Urls { server: url, server_text: url_text.clone(), entries: vec![entry], shape: Shape::Single };
            (Protocol::FastCgi, endpoint, urls, url_text, vec![bytes])
        } else {
            let mix: Vec<MixEntry> = args.mix.iter().map(mix_entry).collect();
            let mut urls = urls::resolve(&UrlSpec {
                positional: args.url.as_deref(),
                mix: &mix,
                page: args.page.as_deref(),
                assets: &args.assets,
                page_conns: args.page_conns,
            })?;
            if let Some(arg) = &args.journey {
                visits = Some(visit_setup(arg, &args, &mut urls, &mut headers, keepalive)?);
            }
            let endpoint = Endpoint::Tcp(target::resolve(&urls.server, args.allow_remote)?);
            let bytes = urls
                .entries
                .iter()
                .map(|e| {
                    let url = Url { path: e.path.clone(), ..urls.server.clone() };
                    request::build(e.method.unwrap_or(&args.method), &url, &headers, keepalive).into_boxed_slice()
                })
                .collect();
            (Protocol::Http, endpoint, urls.clone(), urls.server_text, bytes)
        };
        debug_assert!(protocol == Protocol::FastCgi || urls.server.https == https);
        let tls = match handshake {
            Some(mode) => Some(TlsSetup::new(
                &urls.server.host,
                args.cacert.as_deref(),
                args.pin_cert.as_deref(),
                mode,
                args.http2,
            )?),
            None => None,
        };
        let h2_requests: Vec<H2Request> = if args.http2 {
            http2_rules(&args, handshake)?;
            urls.entries
                .iter()
                .map(|e| {
                    let url = Url { path: e.path.clone(), ..urls.server.clone() };
                    h2_request::build(&args.method, &url, &headers, urls.entries.len() == 1)
                })
                .collect::<Result<_, _>>()
                .map_err(Error::Usage)?
        } else {
            if args.streams.is_some() {
                return Err(Error::Usage("--streams is the number of HTTP/2 streams per connection: add --http2".into()));
            }
            Vec::new()
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
        if args.keepalive_requests.is_some() && handshake.is_some_and(|h| h != HandshakeMode::KeepAlive) {
            return Err(Error::Usage(
                "--keepalive-requests limits kept-alive connections: it means nothing with --handshake resumed or full"
                    .into(),
            ));
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
        // TLS writes the handshake's last flight and then the request: with Nagle the
        // request would wait for the ACK of that flight (delayed ACK: up to 40 ms).
        let connect = ConnectOptions { nodelay: keepalive || https, rcvbuf: args.rcvbuf };
        if connect.rcvbuf.is_some() && matches!(endpoint, Endpoint::Unix(_)) {
            return Err(Error::Usage("--rcvbuf applies to TCP connections only".into()));
        }

        // Page mode over HTTP/2: every asset at once unless --streams says otherwise,
        // as a browser does (the server's SETTINGS_MAX_CONCURRENT_STREAMS still holds).
        let streams = args.streams.unwrap_or(match urls.shape {
            Shape::Page { .. } if args.http2 => (urls.entries.len().saturating_sub(1)).clamp(1, 1000) as u32,
            _ => 1,
        });
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
            discard_bodies: !args.read_bodies,
            tls,
            h2_requests,
            streams,
            io: match args.io {
                None => DEFAULT_IO,
                Some(cli::Io::Epoll) => IoMode::Epoll,
                Some(cli::Io::Uring) => IoMode::Uring,
            },
            visits,
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

/// Whether the target is https://, with the TLS options checked against it.
fn https_target(args: &Args) -> Result<bool, Error> {
    // The server is the positional URL, else the first full URL (urls.rs).
    let first_url = args.url.as_deref().or_else(|| {
        let mix = args.mix.iter().map(|m| m.target.as_str());
        mix.chain(args.page.as_deref()).chain(args.assets.iter().map(String::as_str)).find(|t| t.contains("://"))
    });
    let https = args.fastcgi.is_none()
        && first_url.is_some_and(|u| u.trim().get(..8).is_some_and(|s| s.eq_ignore_ascii_case("https://")));
    if args.fastcgi.is_some() && args.url.as_deref().is_some_and(|u| u.trim().to_ascii_lowercase().starts_with("https://")) {
        return Err(Error::Usage("--fastcgi talks FastCGI, not TLS: give an http:// URL (or none)".into()));
    }
    if !https {
        let given = [
            ("--cacert", args.cacert.is_some()),
            ("--pin-cert", args.pin_cert.is_some()),
            ("--http2", args.http2),
            ("--handshake", args.handshake.is_some()),
        ];
        if let Some((name, _)) = given.iter().find(|(_, on)| *on) {
            return Err(Error::Usage(format!("{name} applies to https:// targets only")));
        }
    }
    Ok(https)
}

/// The handshake mode of an https run (None for http): --handshake, or full with
/// --no-keepalive (a new connection per request that cannot resume), else keep-alive.
fn handshake_mode(args: &Args, https: bool) -> Result<Option<HandshakeMode>, Error> {
    if !https {
        return Ok(None);
    }
    Ok(Some(match (args.handshake, args.no_keepalive) {
        (Some(cli::Handshake::KeepAlive), true) => {
            return Err(Error::Usage(
                "--handshake keep-alive contradicts --no-keepalive (use --handshake full or resumed)".into(),
            ));
        }
        (Some(cli::Handshake::KeepAlive), false) | (None, false) => HandshakeMode::KeepAlive,
        (Some(cli::Handshake::Resumed), _) => HandshakeMode::Resumed,
        (Some(cli::Handshake::Full), _) | (None, true) => HandshakeMode::Full,
    }))
}

/// What HTTP/2 runs do not support (yet): each a one-line refusal, not a silent
/// HTTP/1.1 run.
fn http2_rules(args: &Args, handshake: Option<HandshakeMode>) -> Result<(), Error> {
    let refuse = |what: &str| Err(Error::Usage(format!("--http2 cannot be combined with {what}")));
    if handshake.is_some_and(|h| h != HandshakeMode::KeepAlive) {
        return refuse("--handshake resumed/full or --no-keepalive (HTTP/2 keeps its connections; use https without --http2)");
    }
    if args.keepalive_requests.is_some() {
        return refuse("--keepalive-requests (HTTP/1.1 only)");
    }
    Ok(())
}

/// `--journey`: the journey read against the server the URL names, which becomes the
/// run's URL table (every request a visit can make); `headers` gain the journey's.
fn visit_setup(arg: &str, args: &Args, urls: &mut urls::Urls, headers: &mut Vec<Header>, keepalive: bool)
               -> Result<VisitSetup, Error> {
    if args.http2 {
        return Err(Error::Usage("--journey runs over HTTP/1.1, clear or TLS: HTTP/2 visits are not built yet (drop --http2)".into()));
    }
    if !args.method.eq_ignore_ascii_case("GET") {
        return Err(Error::Usage("-m does not apply to --journey: its pages are GETs, its login a POST".into()));
    }
    if headers.iter().any(|h| h.name.eq_ignore_ascii_case("cookie")) {
        return Err(Error::Usage("-H Cookie cannot be combined with --journey: each visitor's Cookie is its jar's".into()));
    }
    if urls.server.path != "/" {
        return Err(Error::Usage(format!(
            "with --journey the URL '{}' only names the server: drop its path (the journey names the pages)",
            urls.server_text
        )));
    }
    let journey = Journey::from_arg(arg, &urls.server)?;
    headers.extend(journey.headers.iter().map(|(name, value)| Header { name: name.clone(), value: value.clone() }));
    urls.entries = journey
        .urls
        .iter()
        .map(|u| UrlEntry { path: u.path.clone(), weight: None, method: Some(u.method) })
        .collect();
    urls.shape = Shape::Visit { conns: args.page_conns };
    let heads = urls
        .entries
        .iter()
        .map(|e| {
            let url = Url { path: e.path.clone(), ..urls.server.clone() };
            request::head(e.method.unwrap_or("GET"), &url, headers, keepalive).into_boxed_slice()
        })
        .collect();
    // The name the server sees, which its cookies' Domain attributes are about.
    let cookie_host = match headers.iter().find(|h| h.name.eq_ignore_ascii_case("host")) {
        Some(h) => host_of(&h.value),
        None => urls.server.host.to_ascii_lowercase(),
    };
    Ok(VisitSetup { journey, heads, cookie_host, https: urls.server.https, server: urls.server.clone(), headers: headers.clone() })
}

/// The host name of a Host header's value (`name`, `name:port`, `[v6]:port`), lower case.
fn host_of(value: &str) -> String {
    let value = value.trim();
    let host = match value.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(v6),
        None => value.rsplit_once(':').map_or(value, |(h, port)| if port.bytes().all(|b| b.is_ascii_digit()) { h } else { value }),
    };
    host.to_ascii_lowercase()
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

    #[test]
    fn cookies_are_for_the_host_the_server_sees() {
        assert_eq!(host_of("Example.COM"), "example.com");
        assert_eq!(host_of("example.com:8080"), "example.com");
        assert_eq!(host_of("[::1]:8080"), "::1");
        assert_eq!(host_of("127.0.0.1"), "127.0.0.1");
    }

    #[test]
    fn a_journey_becomes_the_url_table() {
        let cfg = from_words(&["--journey", r#"{"steps": [{"page": "/", "assets": ["/a.css"]}]}"#,
                               "-H", "Host: site.test:81", "http://127.0.0.1:8080"]).unwrap();
        assert_eq!(cfg.shape, Shape::Visit { conns: 6 });
        let visits = cfg.visits.as_ref().unwrap();
        assert_eq!(visits.cookie_host, "site.test");
        assert_eq!(&*visits.heads[1], b"GET /a.css HTTP/1.1\r\nHost: site.test:81\r\n");
        assert_eq!(cfg.urls[1].method, Some("GET"));
        assert_eq!(cfg.request_bytes.len(), 2);
        for (words, refusal) in [
            (&["--http2", "--pin-cert", "x.pem", "https://127.0.0.1:1"][..], "HTTP/2 visits"),
            (&["-m", "POST", "http://127.0.0.1:1"][..], "-m does not apply"),
            (&["-H", "Cookie: a=1", "http://127.0.0.1:1"][..], "-H Cookie"),
            (&["http://127.0.0.1:1/x"][..], "only names the server"),
        ] {
            let mut all = vec!["--journey", r#"{"steps": [{"page": "/"}]}"#];
            all.extend_from_slice(words);
            let err = from_words(&all).expect_err(refusal).to_string();
            assert!(err.contains(refusal), "{err}");
        }
    }
}
