//! The request bytes, formatted once per run and written unchanged for every request
//! (no per-request formatting or allocation).
//!
//! By default only `Host` is sent, like wrk: every header costs the server work on
//! every request (nginx sniffs `User-Agent` for browser quirks; measured here, a
//! default User-Agent cost nginx ~1 µs of its ~15 µs per 12-byte response), and
//! the lab compares servers on the same minimal request. Add headers with -H.

use crate::target::Url;

/// One extra request header (`-H`), already checked: a token name, a value without
/// line breaks. FastCGI passes the same headers as `HTTP_*` parameters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Header {
    pub name: String,
    pub value: String,
}

pub fn build(method: &str, url: &Url, extra: &[Header], keepalive: bool) -> Vec<u8> {
    let mut head = start(method, url, extra, keepalive);
    // A body-carrying method without a length makes some servers wait for a body.
    let wants_body = ["POST", "PUT", "PATCH"].iter().any(|m| method.eq_ignore_ascii_case(m));
    if wants_body && !has(extra, "content-length") && !has(extra, "transfer-encoding") {
        head += "Content-Length: 0\r\n";
    }
    add_headers(&mut head, extra);
    head += "\r\n";
    head.into_bytes()
}

/// A visit's request head without its empty line (client/visit.rs adds the Cookie the
/// visitor's jar holds, a body's headers, the empty line and the body, per request).
pub fn head(method: &str, url: &Url, extra: &[Header], keepalive: bool) -> Vec<u8> {
    let mut head = start(method, url, extra, keepalive);
    add_headers(&mut head, extra);
    head.into_bytes()
}

fn has(extra: &[Header], name: &str) -> bool {
    extra.iter().any(|h| h.name.eq_ignore_ascii_case(name))
}

/// The request line, `Host` (unless -H gave one) and `Connection: close` without keep-alive.
fn start(method: &str, url: &Url, extra: &[Header], keepalive: bool) -> String {
    let mut head = format!("{method} {} HTTP/1.1\r\n", url.path);
    // No Accept: its absence means "*/*" (RFC 9110 §12.5.1).
    if !has(extra, "host") {
        head += &format!("Host: {}\r\n", url.host_header());
    }
    if !keepalive && !has(extra, "connection") {
        head += "Connection: close\r\n";
    }
    head
}

fn add_headers(head: &mut String, extra: &[Header]) {
    for h in extra {
        *head += &format!("{}: {}\r\n", h.name, h.value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_url;

    #[test]
    fn formats_get() {
        let url = parse_url("http://127.0.0.1:8080/x?y").unwrap();
        let req = String::from_utf8(build("GET", &url, &[], true)).unwrap();
        assert_eq!(req, "GET /x?y HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n");
    }

    #[test]
    fn user_headers_replace_defaults() {
        let url = parse_url("http://localhost/").unwrap();
        let extra = [Header { name: "host".into(), value: "example".into() }];
        let req = String::from_utf8(build("POST", &url, &extra, false)).unwrap();
        assert!(!req.contains("Host: localhost"));
        assert!(req.contains("host: example\r\n"));
        assert!(req.contains("Connection: close\r\n"));
        assert!(req.contains("Content-Length: 0\r\n"));
    }

    #[test]
    fn a_visits_head_is_left_open() {
        let url = parse_url("http://127.0.0.1:8080/wp-login.php").unwrap();
        let extra = [Header { name: "User-Agent".into(), value: "x".into() }];
        let head = String::from_utf8(head("POST", &url, &extra, true)).unwrap();
        assert_eq!(head, "POST /wp-login.php HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nUser-Agent: x\r\n");
    }
}
