//! Visits (`--journey`): what a visitor does, checked once. A journey is an optional
//! login (a form posted, its redirect followed), then steps, each a page with its assets
//! or a weighted choice of pages (or of leaving), with a think time before every request
//! but the visit's first. Its JSON (loadgen/README.md, "Visits") is read here into the
//! engine's types; every page and asset becomes an entry of the run's URL table, so a
//! request is named by its index as in the other modes. A leaf below `config`: it imports
//! only what URLs are (target, urls) and the error type.
//!
//! `jar.rs` is each visitor's cookie jar, `random.rs` the think times and choices.

pub mod cookie_date;
pub mod jar;
pub mod random;
mod read;

use random::Think;

/// A request of the journey: its method and target (path and query).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JourneyUrl {
    pub method: &'static str,
    pub path: String,
}

/// A page view: the page (`urls[0]`), then its assets, as indices into the run's URLs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Page {
    /// Its row in the result (`visit_pages`): the name given, else the page's path.
    pub name: String,
    pub urls: Vec<usize>,
}

/// The login a visit begins with: the form's page fetched (if asked), the form
/// posted, and the answer's redirect followed (if asked).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Login {
    pub name: String,
    /// A GET of the form's page first (WordPress sets its test cookie there).
    pub form_page: Option<usize>,
    /// The POST.
    pub post: usize,
    /// The form, `application/x-www-form-urlencoded`: one, or one per account (each
    /// visit posts one of them, drawn at random).
    pub bodies: Vec<Vec<u8>>,
    /// A 3xx answer's Location is fetched (same server only), up to `MAX_REDIRECTS`.
    pub follow_redirect: bool,
}

/// Redirects followed at most after a login (browsers stop at 20; a login needs one).
pub const MAX_REDIRECTS: usize = 5;

/// One step: the page taken, drawn among `options` by `weights` (a page alone is one
/// option); None is leaving the site there.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    pub options: Vec<Option<usize>>,
    pub weights: Vec<u32>,
    /// The think time before this step, when not the journey's.
    pub think: Option<Think>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Journey {
    pub login: Option<Login>,
    pub steps: Vec<Step>,
    /// Before every step (and the form's post), but not before the visit's first request.
    pub think: Think,
    pub pages: Vec<Page>,
    /// Headers every request of a visit carries (besides -H), as given.
    pub headers: Vec<(String, String)>,
    /// The visitor's browser keeps the assets it got (2xx) for the visit: a later page
    /// fetches only those it has not got yet (`"cache_assets": false`: every one, every
    /// time). Pages are always fetched.
    pub cache_assets: bool,
    /// The run's URL table: every request a visit can make, each once.
    pub urls: Vec<JourneyUrl>,
    /// The journey as given, the login form's values replaced by "*" (a password is
    /// not written into results): the result's `config.journey`.
    pub recorded: serde_json::Value,
}

/// One row of the result's `visit_pages`: the login (if any), then each page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub path: String,
    pub login: bool,
}

impl Journey {
    /// Reads `--journey`: JSON text (it starts with `{`) or the path of a file holding it.
    pub fn from_arg(arg: &str, server: &crate::target::Url) -> Result<Journey, crate::error::Error> {
        read::from_arg(arg, server)
    }

    /// The rows of `visit_pages`, in order: the login's first.
    pub fn rows(&self) -> Vec<Row> {
        let login = self.login.iter().map(|l| Row { name: l.name.clone(), path: self.urls[l.post].path.clone(), login: true });
        let pages = self.pages.iter().map(|p| Row { name: p.name.clone(), path: self.urls[p.urls[0]].path.clone(), login: false });
        login.chain(pages).collect()
    }

    /// The row of page `page` in `rows()`.
    pub fn row_of_page(&self, page: usize) -> usize {
        page + usize::from(self.login.is_some())
    }
}

/// The path a login's redirect goes to, from its `Location` (RFC 9110 §10.2.2: a URI
/// reference, relative to the request's): an absolute path, a path relative to the
/// request's directory, or a full URL on the run's server — by its address or by the
/// name in the Host header (`host`, lower case). None for another server: not followed.
pub fn redirect_path(location: &str, request_path: &str, server: &crate::target::Url, host: &str) -> Option<String> {
    let location = location.trim();
    let location = location.split('#').next().unwrap_or_default();
    if location.contains("://") {
        let url = crate::target::parse_url(location).ok()?;
        let ours = url.host.eq_ignore_ascii_case(&server.host) && url.port == server.port || url.host.eq_ignore_ascii_case(host);
        return (ours && url.https == server.https).then_some(url.path);
    }
    if location.starts_with("//") || location.is_empty() || location.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return None; // another authority, or nothing usable
    }
    if location.starts_with('/') {
        return Some(location.to_string());
    }
    let path = request_path.split('?').next().unwrap_or("/");
    let dir = &path[..path.rfind('/').map_or(0, |i| i + 1)];
    Some(format!("{}{location}", if dir.is_empty() { "/" } else { dir }))
}

/// `application/x-www-form-urlencoded` (the WHATWG URL Standard's byte serializer):
/// ASCII letters, digits and `*-._` as they are, a space as `+`, every other byte `%XX`.
pub fn form_encode(fields: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, (name, value)) in fields.iter().enumerate() {
        if i > 0 {
            out.push(b'&');
        }
        encode_into(name, &mut out);
        out.push(b'=');
        encode_into(value, &mut out);
    }
    out
}

fn encode_into(text: &str, out: &mut Vec<u8>) {
    for &b in text.as_bytes() {
        match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'*' | b'-' | b'.' | b'_' => out.push(b),
            b' ' => out.push(b'+'),
            _ => out.extend_from_slice(format!("%{b:02X}").as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirects_on_this_server_only() {
        let server = crate::target::parse_url("http://127.0.0.1:8080/").unwrap();
        let go = |loc: &str| redirect_path(loc, "/blog/wp-login.php?x=1", &server, "site.test");
        assert_eq!(go("/wp-admin/").as_deref(), Some("/wp-admin/"));
        assert_eq!(go("http://127.0.0.1:8080/wp-admin/#top").as_deref(), Some("/wp-admin/"));
        assert_eq!(go("http://site.test/wp-admin/").as_deref(), Some("/wp-admin/"), "the Host header's name");
        assert_eq!(go("profile.php?a=b").as_deref(), Some("/blog/profile.php?a=b"));
        assert_eq!(go("http://127.0.0.1:9090/"), None, "another port");
        assert_eq!(go("https://127.0.0.1:8080/"), None, "another scheme");
        assert_eq!(go("http://example.com/"), None);
        assert_eq!(go("//example.com/x"), None);
        assert_eq!(go(""), None);
    }

    #[test]
    fn forms_are_encoded_as_browsers_post_them() {
        let f = |pairs: &[(&str, &str)]| {
            let owned: Vec<(String, String)> = pairs.iter().map(|(a, b)| (a.to_string(), b.to_string())).collect();
            String::from_utf8(form_encode(&owned)).unwrap()
        };
        assert_eq!(f(&[("log", "alice"), ("pwd", "p@ss w&rd=1"), ("wp-submit", "Log In"), ("testcookie", "1")]),
                   "log=alice&pwd=p%40ss+w%26rd%3D1&wp-submit=Log+In&testcookie=1");
        assert_eq!(f(&[("é", "~")]), "%C3%A9=%7E");
        assert_eq!(f(&[]), "");
    }
}
