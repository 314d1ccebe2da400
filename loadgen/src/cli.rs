//! Command-line surface: what the user types, parsed into plain values of this
//! module's own types (std and clap only). `config/from_cli.rs` turns them into
//! the engine's `Config`, with the cross-field rules (e.g. `-c >= -t`); nothing
//! else reads them.

use std::time::Duration;

use clap::Parser;

#[derive(Parser, Debug)]
#[command(
    name = "stackbench-load",
    version,
    about = "HTTP/1.1 and HTTP/2 load generator of stackbench (closed and open loop, HdrHistogram latencies)",
    after_help = "Durations: 250us, 500ms, 10s, 2m, 1h (a bare number is seconds).\n\
                  Exit status: 0 ran (even with failed requests), 1 fatal error, 2 bad usage."
)]
pub struct Args {
    /// Target URL: http://HOST[:PORT][/PATH], or https://... with --cacert or --pin-cert. With --url or --page it only
    /// names the server; with --fastcgi it sets REQUEST_URI and HTTP_HOST (nothing is sent to it)
    pub url: Option<String>,

    /// Concurrent connections, spread over the threads
    #[arg(short = 'c', long, default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub connections: u32,

    /// Engine threads, each with its own single-threaded event loop
    #[arg(short = 't', long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: u32,

    /// Measured duration (default 10s when neither -d nor -n is given)
    #[arg(short = 'd', long, value_parser = parse_duration)]
    pub duration: Option<Duration>,

    /// Exact number of measured requests across all connections
    #[arg(short = 'n', long, value_parser = clap::value_parser!(u64).range(1..))]
    pub requests: Option<u64>,

    /// Load that runs before measuring and is not counted
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    pub warmup: Duration,

    /// New TCP connection per request, with `Connection: close` (like ab without -k)
    #[arg(long)]
    pub no_keepalive: bool,

    /// Per-request timeout (connect + send + full response)
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    pub timeout: Duration,

    /// Extra request header, "Name: value" (repeatable)
    #[arg(short = 'H', long = "header", value_name = "NAME: VALUE", value_parser = parse_header)]
    pub headers: Vec<Header>,

    /// Request method
    #[arg(short = 'm', long, default_value = "GET", value_parser = parse_method)]
    pub method: String,

    /// Open loop: fixed arrival rate in requests/s across all connections
    #[arg(long, value_parser = parse_rate)]
    pub rate: Option<f64>,

    /// Print the result as one JSON document (schema/result-v1.schema.json) on stdout
    #[arg(long)]
    pub json: bool,

    /// While running, write one JSON line a second on stderr: the phase, elapsed
    /// seconds, completed / failed / non-2xx requests so far and the last second's rate
    #[arg(long)]
    pub progress: bool,

    /// Allow targets that are not loopback addresses
    #[arg(long)]
    pub allow_remote: bool,

    /// Start at this wall-clock time (µs since the Unix epoch), not at once: several
    /// engines, on one host or many, given the same instant start together
    #[arg(long, value_name = "UNIX_US")]
    pub start_at: Option<u64>,

    /// Add each latency distribution's HdrHistogram buckets to the JSON result
    /// ([[value_us, count], ...]), so results of several engines merge exactly
    #[arg(long)]
    pub histogram: bool,

    /// Exit at once when stdin closes: a lab running engines over SSH keeps it open, so
    /// a lab, a Ctrl-C or a connection that dies takes the remote engine with it
    #[arg(long)]
    pub watch_stdin: bool,

    /// Clock probe, no load: answer each line read on stdin with this host's wall clock
    /// in µs since the Unix epoch (how a lab measures a remote client's clock offset)
    #[arg(long, exclusive = true)]
    pub clock: bool,

    /// Concurrency steps, DURATION:CONNECTIONS,...  e.g. 10s:1,10s:100,5s:10
    #[arg(long, value_parser = parse_stages)]
    pub stages: Option<StagePlan>,

    /// Weighted URL mix on one server: PATH or full URL, optional =WEIGHT (default 1), repeatable
    #[arg(long = "url", value_name = "PATH[=WEIGHT]", value_parser = parse_mix_entry)]
    pub mix: Vec<MixEntry>,

    /// Count the values of this response header, e.g. X-Cache (repeatable)
    #[arg(long = "count-header", value_name = "NAME", value_parser = parse_header_name)]
    pub count_headers: Vec<String>,

    /// Close a kept-alive connection after N requests and open a new one
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub keepalive_requests: Option<u32>,

    /// Slow reader: read each connection's responses at most this fast
    #[arg(long, value_name = "BYTES_PER_S", value_parser = clap::value_parser!(u64).range(1..))]
    pub read_rate: Option<u64>,

    /// Copy every body byte into the engine, as wrk does, instead of letting the kernel
    /// discard the bodies of clear-text responses (for comparisons of the engine itself)
    #[arg(long)]
    pub read_bodies: bool,

    /// SO_RCVBUF of each TCP socket, set before connect (Linux doubles it)
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u32).range(1..=i32::MAX as i64))]
    pub rcvbuf: Option<u32>,

    /// FastCGI mode: talk to the application server directly: unix:/PATH or [tcp:]HOST:PORT
    #[arg(long, value_name = "ADDRESS")]
    pub fastcgi: Option<String>,

    /// FastCGI mode: absolute path of the script to run (SCRIPT_FILENAME)
    #[arg(long, value_name = "PATH", requires = "fastcgi")]
    pub script: Option<String>,

    /// Page mode: each visitor fetches this page, then --assets in parallel
    #[arg(long, value_name = "PATH")]
    pub page: Option<String>,

    /// Page mode: the page's assets, comma-separated paths or URLs
    #[arg(long, value_name = "PATH,...", value_delimiter = ',', requires = "page")]
    pub assets: Vec<String>,

    /// Visits: each visitor follows this journey (JSON text starting with '{', or a file
    /// holding it): an optional login, pages with their assets, think times, a cookie jar
    /// per visitor; -c counts visitors, --rate visits a second, -n visits
    #[arg(long, value_name = "JSON|FILE", conflicts_with_all = ["page", "mix", "fastcgi"])]
    pub journey: Option<String>,

    /// Page mode and visits: connections per visitor, the page's own included (browsers use 6 per host)
    #[arg(long, value_name = "N", default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub page_conns: u32,

    /// https: trust only this CA (PEM); the chain and the host name are verified
    #[arg(long, value_name = "PEM", conflicts_with = "pin_cert")]
    pub cacert: Option<String>,

    /// https: accept exactly this leaf certificate (PEM, compared by its bytes; the
    /// handshake signature is still verified with its key; no chain, name or dates)
    #[arg(long, value_name = "PEM")]
    pub pin_cert: Option<String>,

    /// https: offer ALPN h2 and speak HTTP/2 when the server picks it (HTTP/1.1 otherwise)
    #[arg(long)]
    pub http2: bool,

    /// HTTP/2: concurrent streams per connection (requests in flight = connections x streams)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub streams: Option<u32>,

    /// https: keep-alive (one handshake per connection), resumed (new connection per
    /// request, resuming a session ticket) or full (new connection and full handshake per request)
    #[arg(long, value_name = "MODE", value_parser = parse_handshake)]
    pub handshake: Option<Handshake>,

    /// I/O path: epoll (readiness, a send and a receive per request) or uring (io_uring:
    /// one system call submits many connections' operations); uring falls back to epoll,
    /// with a warning, where io_uring is unavailable
    #[arg(long, value_name = "epoll|uring", value_parser = parse_io)]
    pub io: Option<Io>,
}

/// `--io` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Io {
    Epoll,
    Uring,
}

pub fn parse_io(text: &str) -> Result<Io, String> {
    match text {
        "epoll" => Ok(Io::Epoll),
        "uring" => Ok(Io::Uring),
        _ => Err(format!("--io '{text}': use epoll or uring")),
    }
}

/// `--handshake` values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    KeepAlive,
    Resumed,
    Full,
}

pub fn parse_handshake(text: &str) -> Result<Handshake, String> {
    match text {
        "keep-alive" => Ok(Handshake::KeepAlive),
        "resumed" => Ok(Handshake::Resumed),
        "full" => Ok(Handshake::Full),
        _ => Err(format!("--handshake '{text}': use keep-alive, resumed or full")),
    }
}

/// One `--url` entry: a path or URL and its weight in the mix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixEntry {
    pub target: String,
    pub weight: u32,
}

/// One `-H` header, already split and checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

/// One `--stages` step.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stage {
    pub duration: Duration,
    pub connections: u32,
}

/// A newtype so clap treats the whole list as one value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StagePlan(pub Vec<Stage>);

/// "10s", "500ms", "250us", "2m", "1h", "1.5s"; a bare number is seconds (as in wrk).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("'{text}' is not a duration (use e.g. 10s, 500ms, 2m)"))?;
    let scale_s = match unit {
        "" | "s" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        _ => return Err(format!("unknown unit '{unit}' in '{text}' (use us, ms, s, m or h)")),
    };
    let seconds = value * scale_s;
    if !seconds.is_finite() || seconds > 1e9 {
        return Err(format!("duration '{text}' is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// RFC 9110 token characters: what a header name or a method may contain.
fn is_token(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
}

pub fn parse_header(text: &str) -> Result<Header, String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("header '{text}' must look like 'Name: value'"))?;
    let name = name.trim();
    let value = value.trim();
    if !is_token(name) {
        return Err(format!("'{name}' is not a valid header name"));
    }
    if value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
        return Err(format!("header '{name}' has a line break in its value"));
    }
    Ok(Header { name: name.to_string(), value: value.to_string() })
}

/// `--count-header` names must be header-name tokens.
pub fn parse_header_name(text: &str) -> Result<String, String> {
    let name = text.trim();
    if is_token(name) {
        Ok(name.to_string())
    } else {
        Err(format!("'{text}' is not a valid header name"))
    }
}

/// "PATH" or "PATH=WEIGHT". A trailing `=N` is always the weight: a URL whose query
/// ends in a number (`/a?page=2`) needs an explicit weight (`/a?page=2=1`).
pub fn parse_mix_entry(text: &str) -> Result<MixEntry, String> {
    let (target, weight) = match text.rsplit_once('=') {
        Some((target, w)) if !w.is_empty() && w.bytes().all(|b| b.is_ascii_digit()) => {
            let weight = w.parse::<u32>().ok().filter(|&w| w > 0).ok_or_else(|| {
                format!("weight '{w}' of '{target}' must be a whole number from 1 to {}", u32::MAX)
            })?;
            (target, weight)
        }
        _ => (text, 1),
    };
    if target.is_empty() {
        return Err(format!("'{text}' has no path"));
    }
    Ok(MixEntry { target: target.to_string(), weight })
}

pub fn parse_method(text: &str) -> Result<String, String> {
    if is_token(text) {
        Ok(text.to_string())
    } else {
        Err(format!("'{text}' is not a valid HTTP method"))
    }
}

pub fn parse_rate(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(r) if r.is_finite() && r > 0.0 && r <= 1e9 => Ok(r),
        _ => Err(format!("rate '{text}' must be a number of requests/s above 0")),
    }
}

pub fn parse_stages(text: &str) -> Result<StagePlan, String> {
    let mut stages = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (duration, connections) = part
            .split_once(':')
            .ok_or_else(|| format!("stage '{part}' must look like DURATION:CONNECTIONS"))?;
        let duration = parse_duration(duration)?;
        if duration.is_zero() {
            return Err(format!("stage '{part}' has a zero duration"));
        }
        let connections: u32 = connections
            .trim()
            .parse()
            .ok()
            .filter(|&c| c > 0)
            .ok_or_else(|| format!("stage '{part}': connections must be a whole number above 0"))?;
        stages.push(Stage { duration, connections });
    }
    if stages.is_empty() {
        return Err("--stages needs at least one DURATION:CONNECTIONS step".into());
    }
    Ok(StagePlan(stages))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("250us").unwrap(), Duration::from_micros(250));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("ten").is_err());
        assert!(parse_duration("10x").is_err());
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn headers() {
        let h = parse_header("X-Test:  a b ").unwrap();
        assert_eq!((h.name.as_str(), h.value.as_str()), ("X-Test", "a b"));
        assert!(parse_header("novalue").is_err());
        assert!(parse_header("bad name: x").is_err());
    }

    #[test]
    fn stages() {
        let p = parse_stages("10s:1, 500ms:100").unwrap();
        assert_eq!(p.0.len(), 2);
        assert_eq!(p.0[1], Stage { duration: Duration::from_millis(500), connections: 100 });
        assert!(parse_stages("10s").is_err());
        assert!(parse_stages("10s:0").is_err());
        assert!(parse_stages("").is_err());
    }

    #[test]
    fn mix_entries() {
        let e = |t: &str, w: u32| MixEntry { target: t.into(), weight: w };
        assert_eq!(parse_mix_entry("/a.php=3").unwrap(), e("/a.php", 3));
        assert_eq!(parse_mix_entry("/b.css").unwrap(), e("/b.css", 1));
        assert_eq!(parse_mix_entry("/q?x=1=2").unwrap(), e("/q?x=1", 2));
        assert_eq!(parse_mix_entry("/q?x=a").unwrap(), e("/q?x=a", 1));
        assert!(parse_mix_entry("/a=0").is_err());
        assert!(parse_mix_entry("=3").is_err());
    }

    #[test]
    fn rates() {
        assert_eq!(parse_rate("100").unwrap(), 100.0);
        assert!(parse_rate("0").is_err());
        assert!(parse_rate("-3").is_err());
        assert!(parse_rate("nan").is_err());
    }
}
