//! The target: URL parsing, the loopback guard, and address resolution.
//!
//! The guard exists because a load generator pointed at the wrong host is a
//! denial-of-service tool; the lab passes `--allow-remote` only for its own
//! network namespaces. Names other than "localhost" are refused *before* any
//! resolution so that a mistyped URL never even causes a DNS query.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use crate::error::Error;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Url {
    /// Host as written (IPv6 without brackets).
    pub host: String,
    pub port: u16,
    /// Path and query, at least "/".
    pub path: String,
    /// `https://`: TLS (default port 443).
    pub https: bool,
}

impl Url {
    /// Value of the `Host` header: the port only when it is not the scheme's
    /// default (RFC 9110 §7.2).
    pub fn host_header(&self) -> String {
        let host = if self.host.contains(':') { format!("[{}]", self.host) } else { self.host.clone() };
        if self.port == self.default_port() { host } else { format!("{host}:{}", self.port) }
    }

    pub fn scheme(&self) -> &'static str {
        if self.https { "https" } else { "http" }
    }

    fn default_port(&self) -> u16 {
        if self.https { 443 } else { 80 }
    }
}

pub fn parse_url(text: &str) -> Result<Url, Error> {
    let bad = |why: &str| Error::Usage(format!("bad URL '{text}': {why}"));
    let (https, rest) = match text.split_once("://") {
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("http") => (false, rest),
        Some((scheme, rest)) if scheme.eq_ignore_ascii_case("https") => (true, rest),
        Some((scheme, _)) => {
            return Err(bad(&format!("scheme '{scheme}' is not supported (http:// or https://)")));
        }
        None => return Err(bad("it must start with http:// or https://")),
    };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, "/"),
    };
    let path = if path.starts_with('?') { format!("/{path}") } else { path.to_string() };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad("the path contains spaces or control characters"));
    }
    let path = match path.split_once('#') {
        Some((before, _)) => before.to_string(),
        None => path,
    };
    if authority.contains('@') {
        return Err(bad("credentials in the URL are not supported"));
    }
    let (host, port) = if let Some(after) = authority.strip_prefix('[') {
        let (host, tail) = after.split_once(']').ok_or_else(|| bad("unclosed '['"))?;
        (host, tail.strip_prefix(':'))
    } else {
        match authority.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (authority, None),
        }
    };
    if host.is_empty() {
        return Err(bad("no host"));
    }
    let port = match port {
        None if https => 443,
        None => 80,
        Some(p) => p.parse::<u16>().ok().filter(|&p| p > 0).ok_or_else(|| bad("bad port"))?,
    };
    Ok(Url { host: host.to_string(), port, path, https })
}

fn is_localhost_name(host: &str) -> bool {
    host.eq_ignore_ascii_case("localhost") || host.eq_ignore_ascii_case("localhost.")
}

/// Resolves the URL to one socket address, refusing non-loopback targets unless
/// `allow_remote`. IPv4 is preferred for names (nginx configs here listen on 127.0.0.1).
pub fn resolve(url: &Url, allow_remote: bool) -> Result<SocketAddr, Error> {
    let refuse = || {
        Error::Usage(format!(
            "refusing to load '{}': not a loopback address (127.0.0.0/8, ::1, localhost); \
             pass --allow-remote to target other hosts",
            url.host
        ))
    };
    if let Ok(ip) = url.host.parse::<IpAddr>() {
        if !allow_remote && !ip.is_loopback() {
            return Err(refuse());
        }
        return Ok(SocketAddr::new(ip, url.port));
    }
    if !allow_remote && !is_localhost_name(&url.host) {
        return Err(refuse());
    }
    let addrs: Vec<SocketAddr> = (url.host.as_str(), url.port)
        .to_socket_addrs()
        .map_err(|e| Error::Fatal(format!("cannot resolve '{}': {e}", url.host)))?
        .collect();
    if !allow_remote && addrs.iter().any(|a| !a.ip().is_loopback()) {
        return Err(refuse());
    }
    addrs
        .iter()
        .find(|a| a.is_ipv4())
        .or_else(|| addrs.first())
        .copied()
        .ok_or_else(|| Error::Fatal(format!("'{}' resolved to no address", url.host)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_urls() {
        let u = parse_url("http://127.0.0.1:8080/a/b?x=1").unwrap();
        assert_eq!(u, Url { host: "127.0.0.1".into(), port: 8080, path: "/a/b?x=1".into(), https: false });
        assert_eq!(u.host_header(), "127.0.0.1:8080");
        let u = parse_url("http://localhost").unwrap();
        assert_eq!((u.port, u.path.as_str(), u.host_header().as_str()), (80, "/", "localhost"));
        let u = parse_url("http://[::1]:81?q").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("::1", 81, "/?q"));
        assert_eq!(u.host_header(), "[::1]:81");
        let u = parse_url("https://localhost/x").unwrap();
        assert_eq!((u.https, u.port, u.host_header().as_str()), (true, 443, "localhost"));
        assert_eq!(parse_url("https://h:8443/").unwrap().host_header(), "h:8443");
        assert!(parse_url("ftp://127.0.0.1/").is_err());
        assert!(parse_url("127.0.0.1/").is_err());
        assert!(parse_url("http://:80/").is_err());
        assert!(parse_url("http://h:0/").is_err());
        assert!(parse_url("http://h:99999/").is_err());
    }

    #[test]
    fn loopback_guard() {
        let ok = |s: &str| resolve(&parse_url(s).unwrap(), false);
        assert!(ok("http://127.0.0.1:1/").is_ok());
        assert!(ok("http://127.9.8.7:1/").is_ok());
        assert!(ok("http://[::1]:1/").is_ok());
        assert!(ok("http://localhost:1/").is_ok());
        assert!(matches!(ok("http://10.0.0.1/"), Err(Error::Usage(_))));
        assert!(matches!(ok("http://example.com/"), Err(Error::Usage(_))));
        assert!(resolve(&parse_url("http://10.0.0.1/").unwrap(), true).is_ok());
    }
}
