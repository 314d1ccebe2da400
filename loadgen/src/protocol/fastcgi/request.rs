//! The FastCGI request, formatted once: BEGIN_REQUEST (responder, keep-conn when
//! keep-alive is on), the CGI/1.1 parameters a web server would pass (RFC 3875
//! §4.1, plus what nginx's `fastcgi_params` and PHP expect), and an empty STDIN.

use std::path::Path;

use super::record::{self, BEGIN_REQUEST, FLAG_KEEP_CONN, PARAMS, ROLE_RESPONDER, STDIN};
use crate::protocol::http::request::Header;
use crate::target::Url;

/// The parameters of the request, in the order nginx sends them.
///
/// `url` only supplies REQUEST_URI, QUERY_STRING and the Host: nothing is sent to it.
pub fn params(script: &str, method: &str, url: &Url, extra: &[Header]) -> Vec<(String, String)> {
    let (path, query) = url.path.split_once('?').unwrap_or((&url.path, ""));
    let docroot = Path::new(script).parent().map_or("/".into(), |p| p.display().to_string());
    // A body-carrying method announces its (empty) body, like the HTTP request does.
    let wants_body = ["POST", "PUT", "PATCH"].iter().any(|m| method.eq_ignore_ascii_case(m));
    let mut p: Vec<(String, String)> = [
        ("SCRIPT_FILENAME", script.to_string()),
        ("QUERY_STRING", query.to_string()),
        ("REQUEST_METHOD", method.to_string()),
        ("CONTENT_TYPE", String::new()),
        ("CONTENT_LENGTH", if wants_body { "0".into() } else { String::new() }),
        ("SCRIPT_NAME", path.to_string()),
        ("REQUEST_URI", url.path.clone()),
        ("DOCUMENT_URI", path.to_string()),
        ("DOCUMENT_ROOT", docroot),
        ("SERVER_PROTOCOL", "HTTP/1.1".into()),
        ("REQUEST_SCHEME", "http".into()),
        ("GATEWAY_INTERFACE", "CGI/1.1".into()),
        ("SERVER_SOFTWARE", concat!("stackbench-load/", env!("CARGO_PKG_VERSION")).into()),
        ("REMOTE_ADDR", "127.0.0.1".into()),
        ("SERVER_ADDR", "127.0.0.1".into()),
        ("SERVER_PORT", url.port.to_string()),
        ("SERVER_NAME", url.host.clone()),
        // php-cgi built with force-cgi-redirect refuses requests without it.
        ("REDIRECT_STATUS", "200".into()),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    let mut set = |name: String, value: String| match p.iter_mut().find(|(k, _)| *k == name) {
        Some(slot) => slot.1 = value,
        None => p.push((name, value)),
    };
    if !extra.iter().any(|h| h.name.eq_ignore_ascii_case("host")) {
        set("HTTP_HOST".into(), url.host_header());
    }
    // RFC 3875 §4.1.18: request headers become HTTP_* variables; Content-Type and
    // Content-Length have their own.
    for h in extra {
        let name = h.name.to_ascii_uppercase().replace('-', "_");
        let name = match name.as_str() {
            "CONTENT_TYPE" | "CONTENT_LENGTH" => name,
            _ => format!("HTTP_{name}"),
        };
        set(name, h.value.clone());
    }
    p
}

pub fn build(params: &[(String, String)], keepalive: bool) -> Vec<u8> {
    let mut out = Vec::with_capacity(1024);
    let role = ROLE_RESPONDER.to_be_bytes();
    let flags = if keepalive { FLAG_KEEP_CONN } else { 0 };
    record::push(&mut out, BEGIN_REQUEST, &[role[0], role[1], flags, 0, 0, 0, 0, 0]);
    let mut pairs = Vec::new();
    for (name, value) in params {
        record::push_pair(&mut pairs, name.as_bytes(), value.as_bytes());
    }
    record::push_stream(&mut out, PARAMS, &pairs);
    record::push_stream(&mut out, STDIN, &[]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_url;

    fn get<'a>(p: &'a [(String, String)], k: &str) -> Option<&'a str> {
        p.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str())
    }

    #[test]
    fn cgi_parameters() {
        let url = parse_url("http://localhost:8080/app/hello.php?x=1").unwrap();
        let extra = [Header { name: "X-Test".into(), value: "y".into() }];
        let p = params("/srv/www/hello.php", "GET", &url, &extra);
        assert_eq!(get(&p, "SCRIPT_FILENAME"), Some("/srv/www/hello.php"));
        assert_eq!(get(&p, "DOCUMENT_ROOT"), Some("/srv/www"));
        assert_eq!(get(&p, "SCRIPT_NAME"), Some("/app/hello.php"));
        assert_eq!(get(&p, "QUERY_STRING"), Some("x=1"));
        assert_eq!(get(&p, "REQUEST_URI"), Some("/app/hello.php?x=1"));
        assert_eq!(get(&p, "HTTP_HOST"), Some("localhost:8080"));
        assert_eq!(get(&p, "HTTP_X_TEST"), Some("y"));
        assert_eq!(get(&p, "CONTENT_LENGTH"), Some(""));
    }

    #[test]
    fn request_records() {
        let url = parse_url("http://localhost/").unwrap();
        let bytes = build(&params("/a.php", "GET", &url, &[]), true);
        // BEGIN_REQUEST, responder, keep-conn.
        assert_eq!(&bytes[..8], &[1, BEGIN_REQUEST, 0, 1, 0, 8, 0, 0]);
        assert_eq!(&bytes[8..11], &[0, 1, FLAG_KEEP_CONN]);
        // Ends with the empty PARAMS and the empty STDIN record.
        assert_eq!(&bytes[bytes.len() - 16..], &[1, PARAMS, 0, 1, 0, 0, 0, 0, 1, STDIN, 0, 1, 0, 0, 0, 0]);
        let no_keep = build(&params("/a.php", "GET", &url, &[]), false);
        assert_eq!(no_keep[10], 0);
    }
}
