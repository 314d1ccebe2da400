//! An HTTP/2 request's parts, checked and built once per URL; each request clones
//! them (a few reference-counted fields and a small header map).

use http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Uri};

use super::hpack;
use crate::protocol::http::request::Header;
use crate::target::Url;

#[derive(Clone, Debug)]
pub struct H2Request {
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    /// The same request's HPACK header blocks, for the direct loop (hpack.rs).
    pub blocks: hpack::RequestBlocks,
}

/// Headers HTTP/2 forbids (RFC 9113 §8.2.2): connection-specific ones. A `Host`
/// given with -H becomes the :authority, as browsers and h2load send it.
const CONNECTION_SPECIFIC: [&str; 5] = ["connection", "keep-alive", "proxy-connection", "transfer-encoding", "upgrade"];

/// `index_path`: the run has one URL (hpack::encode_request).
pub fn build(method: &str, url: &Url, extra: &[Header], index_path: bool) -> Result<H2Request, String> {
    let method = Method::from_bytes(method.as_bytes()).map_err(|_| format!("'{method}' is not a valid method"))?;
    let authority = extra
        .iter()
        .find(|h| h.name.eq_ignore_ascii_case("host"))
        .map_or_else(|| url.host_header(), |h| h.value.clone());
    let uri = Uri::builder()
        .scheme(url.scheme())
        .authority(authority.as_str())
        .path_and_query(url.path.as_str())
        .build()
        .map_err(|e| format!("cannot make an HTTP/2 request of {}{}: {e}", authority, url.path))?;
    let mut headers = HeaderMap::new();
    for h in extra {
        let lower = h.name.to_ascii_lowercase();
        if lower == "host" || CONNECTION_SPECIFIC.contains(&lower.as_str()) {
            continue;
        }
        let name = HeaderName::from_bytes(lower.as_bytes()).map_err(|_| format!("bad header name '{}'", h.name))?;
        let value = HeaderValue::from_str(&h.value).map_err(|_| format!("bad value of header '{}'", h.name))?;
        headers.append(name, value);
    }
    // Same rule as HTTP/1.1 (protocol/http/request.rs): a body-carrying method says
    // its body is empty.
    let wants_body = [Method::POST, Method::PUT, Method::PATCH].contains(&method);
    if wants_body && !headers.contains_key(http::header::CONTENT_LENGTH) {
        headers.insert(http::header::CONTENT_LENGTH, HeaderValue::from_static("0"));
    }
    let fields: Vec<(String, String)> = headers
        .iter()
        .map(|(n, v)| (n.as_str().to_string(), String::from_utf8_lossy(v.as_bytes()).into_owned()))
        .collect();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    let blocks = hpack::encode_request(method.as_str(), url.scheme(), &authority, path, &fields, index_path);
    Ok(H2Request { method, uri, headers, blocks })
}

impl H2Request {
    pub fn request(&self) -> Request<()> {
        let mut req = Request::new(());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        *req.headers_mut() = self.headers.clone();
        req
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::parse_url;

    #[test]
    fn builds_pseudo_headers_and_drops_connection_headers() {
        let url = parse_url("https://127.0.0.1:8443/x?y").unwrap();
        let extra = [
            Header { name: "Connection".into(), value: "close".into() },
            Header { name: "X-A".into(), value: "1".into() },
        ];
        let r = build("POST", &url, &extra, true).unwrap().request();
        assert_eq!(r.uri().to_string(), "https://127.0.0.1:8443/x?y");
        assert_eq!(r.method(), Method::POST);
        assert!(r.headers().get("connection").is_none());
        assert_eq!(r.headers()["x-a"], "1");
        assert_eq!(r.headers()["content-length"], "0");
        let host = [Header { name: "Host".into(), value: "example".into() }];
        assert_eq!(build("GET", &url, &host, true).unwrap().request().uri().authority().unwrap().as_str(), "example");
    }
}
