//! A visitor's cookie jar: what RFC 6265 asks of a user agent, for the parts a
//! visitor of one site needs. One jar per visit (a new visitor arrives with none), shared
//! by every connection of that visitor.
//!
//! Implemented (RFC 6265 section): Set-Cookie parsing (§5.2: the name-value pair, each
//! attribute, the last of an attribute winning), `Expires` (§5.2.1, dates by §5.1.1,
//! cookie_date.rs), `Max-Age` (§5.2.2, beating Expires; zero or negative deletes),
//! `Domain` (§5.2.3; a cookie for a domain the host does not domain-match is refused,
//! §5.3 step 6; an IP address matches only itself, §5.1.3), `Path` (§5.2.4, default-path
//! and path-match of §5.1.4), `Secure` (§5.2.5: kept, sent over https only) and
//! `HttpOnly` (§5.2.6: kept; every request here is an HTTP one, so it is always sent);
//! the storage model (§5.3: a cookie replaces the one of the same name, domain and path,
//! keeping its creation time; an expired one deletes it); and the Cookie header (§5.4:
//! the cookies whose domain, path and Secure flag fit the request, longer paths first,
//! then older ones, `name=value` joined by "; ").
//!
//! Not implemented: the public suffix list (§5.3 step 5: the lab's hosts are addresses
//! and `localhost`), the limits' eviction order of §5.3 step 12 beyond the oldest cookie
//! first (a jar holds at most `MAX_COOKIES`, each at most `MAX_COOKIE_BYTES`: a hostile
//! server cannot grow a visitor without bound), last-access times, and non-HTTP APIs.

use super::cookie_date;

/// Cookies a jar keeps at most (RFC 6265 §6.1: at least 50 per domain).
pub const MAX_COOKIES: usize = 50;
/// A Set-Cookie value longer than this is ignored (§6.1: at least 4096 bytes a cookie).
pub const MAX_COOKIE_BYTES: usize = 4096;

#[derive(Clone, Debug, PartialEq, Eq)]
struct Cookie {
    name: String,
    value: String,
    /// The host (host-only) or the Domain attribute, lower case.
    domain: String,
    host_only: bool,
    path: String,
    /// Unix seconds; None: a session cookie, kept for the visit.
    expires: Option<i64>,
    secure: bool,
    http_only: bool,
    /// Order of creation (§5.4 sorts by creation time; a counter keeps it exact).
    created: u64,
}

/// The jar of one visitor talking to `host` (lower case; an IP address or a name).
#[derive(Debug)]
pub struct Jar {
    host: String,
    https: bool,
    cookies: Vec<Cookie>,
    created: u64,
}

impl Jar {
    pub fn new(host: &str, https: bool) -> Jar {
        Jar { host: host.to_ascii_lowercase(), https, cookies: Vec::new(), created: 0 }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.cookies.len()
    }

    /// Takes one Set-Cookie header's value, received for a request of `request_path`
    /// (path and query) at `now` (Unix seconds). Ignored as §5.2 and §5.3 say.
    pub fn store(&mut self, set_cookie: &[u8], request_path: &str, now: i64) {
        if set_cookie.len() > MAX_COOKIE_BYTES {
            return;
        }
        let Ok(text) = std::str::from_utf8(set_cookie) else { return };
        let Some(parsed) = parse(text) else { return };
        // §5.3 step 6: a Domain the host does not domain-match refuses the cookie.
        let (domain, host_only) = match parsed.domain {
            Some(d) if !d.is_empty() => {
                if !domain_match(&self.host, &d) {
                    return;
                }
                (d, false)
            }
            _ => (self.host.clone(), true),
        };
        let path = parsed.path.unwrap_or_else(|| default_path(request_path));
        // Max-Age beats Expires (§5.3 step 3); Max-Age ≤ 0 is "the earliest time".
        let expires = match (parsed.max_age, parsed.expires) {
            (Some(age), _) if age <= 0 => Some(i64::MIN),
            (Some(age), _) => Some(now.saturating_add(age)),
            (None, e) => e,
        };
        let same = |c: &Cookie| c.name == parsed.name && c.domain == domain && c.path == path;
        let old = self.cookies.iter().position(same).map(|i| self.cookies.remove(i));
        if expires.is_some_and(|t| t <= now) {
            return; // an expired cookie deletes the old one and is not kept (§5.3)
        }
        let created = old.map_or_else(
            || {
                self.created += 1;
                self.created
            },
            |o| o.created,
        );
        self.drop_expired(now);
        if self.cookies.len() >= MAX_COOKIES {
            // The oldest goes (§5.3 step 12 evicts expired ones first, done above).
            if let Some(i) = self.cookies.iter().enumerate().min_by_key(|(_, c)| c.created).map(|(i, _)| i) {
                self.cookies.remove(i);
            }
        }
        self.cookies.push(Cookie {
            name: parsed.name,
            value: parsed.value,
            domain,
            host_only,
            path,
            expires,
            secure: parsed.secure,
            http_only: parsed.http_only,
            created,
        });
    }

    /// The Cookie header's value for a request of `request_path` at `now` (§5.4), or
    /// None when no cookie applies.
    pub fn header(&self, request_path: &str, now: i64) -> Option<String> {
        let path = uri_path(request_path);
        let mut sent: Vec<&Cookie> = self
            .cookies
            .iter()
            .filter(|c| c.expires.is_none_or(|t| t > now))
            .filter(|c| if c.host_only { c.domain == self.host } else { domain_match(&self.host, &c.domain) })
            .filter(|c| path_match(path, &c.path))
            .filter(|c| self.https || !c.secure)
            .collect();
        if sent.is_empty() {
            return None;
        }
        sent.sort_by(|a, b| b.path.len().cmp(&a.path.len()).then(a.created.cmp(&b.created)));
        let pairs: Vec<String> = sent.iter().map(|c| format!("{}={}", c.name, c.value)).collect();
        Some(pairs.join("; "))
    }

    fn drop_expired(&mut self, now: i64) {
        self.cookies.retain(|c| c.expires.is_none_or(|t| t > now));
    }

    /// Whether the jar holds a cookie named `name` flagged HttpOnly and Secure as given.
    #[cfg(test)]
    fn flags(&self, name: &str) -> Option<(bool, bool)> {
        self.cookies.iter().find(|c| c.name == name).map(|c| (c.http_only, c.secure))
    }
}

/// A Set-Cookie value parsed (§5.2); each attribute the last one given.
#[derive(Debug, Default)]
struct Parsed {
    name: String,
    value: String,
    expires: Option<i64>,
    max_age: Option<i64>,
    domain: Option<String>,
    path: Option<String>,
    secure: bool,
    http_only: bool,
}

fn parse(text: &str) -> Option<Parsed> {
    let (pair, attributes) = text.split_once(';').unwrap_or((text, ""));
    // §5.2 steps 2-5: no "=" or an empty name ignores the whole header.
    let (name, value) = pair.split_once('=')?;
    let (name, value) = (name.trim_matches(is_wsp), value.trim_matches(is_wsp));
    if name.is_empty() {
        return None;
    }
    let mut p = Parsed { name: name.to_string(), value: value.to_string(), ..Parsed::default() };
    for av in attributes.split(';') {
        let (key, val) = av.split_once('=').unwrap_or((av, ""));
        let (key, val) = (key.trim_matches(is_wsp), val.trim_matches(is_wsp));
        match key.to_ascii_lowercase().as_str() {
            // §5.2.1: a date that does not parse leaves the attribute out.
            "expires" => p.expires = cookie_date::parse(val).or(p.expires),
            "max-age" => p.max_age = max_age(val).or(p.max_age),
            "domain" if !val.is_empty() => p.domain = Some(val.trim_start_matches('.').to_ascii_lowercase()),
            // §5.2.4: an empty path, or one not starting with "/", is the default path.
            "path" => p.path = val.starts_with('/').then(|| val.to_string()),
            "secure" => p.secure = true,
            "httponly" => p.http_only = true,
            _ => {}
        }
    }
    Some(p)
}

fn is_wsp(c: char) -> bool {
    c == ' ' || c == '\t'
}

/// §5.2.2: an optional "-" and digits; anything else ignores the attribute.
fn max_age(val: &str) -> Option<i64> {
    let digits = val.strip_prefix('-').unwrap_or(val);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Digits past i64's range are still a (very long) age, not an error.
    Some(val.parse().unwrap_or(if val.starts_with('-') { i64::MIN } else { i64::MAX }))
}

/// §5.1.3: the host is the domain, or a name under it (never an IP address).
fn domain_match(host: &str, domain: &str) -> bool {
    if host == domain {
        return true;
    }
    let is_ip = host.parse::<std::net::IpAddr>().is_ok();
    !is_ip && host.len() > domain.len() && host.ends_with(domain) && host.as_bytes()[host.len() - domain.len() - 1] == b'.'
}

/// The path of a request target, without its query.
fn uri_path(target: &str) -> &str {
    target.split(['?', '#']).next().unwrap_or("/")
}

/// §5.1.4: the directory of the request's path ("/" for "/x" or a path not starting
/// with "/").
fn default_path(request_path: &str) -> String {
    let path = uri_path(request_path);
    if !path.starts_with('/') {
        return "/".into();
    }
    match path.rfind('/') {
        Some(0) | None => "/".into(),
        Some(i) => path[..i].to_string(),
    }
}

/// §5.1.4: the cookie's path is the request's, or a directory above it.
fn path_match(request: &str, cookie: &str) -> bool {
    request == cookie
        || (request.starts_with(cookie) && (cookie.ends_with('/') || request.as_bytes().get(cookie.len()) == Some(&b'/')))
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_700_000_000;

    fn jar(host: &str, https: bool, set: &[&str], at: &str) -> Jar {
        let mut j = Jar::new(host, https);
        for s in set {
            j.store(s.as_bytes(), at, NOW);
        }
        j
    }

    #[test]
    fn a_session_cookie_comes_back_on_every_request() {
        let j = jar("127.0.0.1", false, &["PHPSESSID=abc123; path=/"], "/count.php");
        assert_eq!(j.header("/count.php", NOW).as_deref(), Some("PHPSESSID=abc123"));
        assert_eq!(j.header("/other/page?x=1", NOW).as_deref(), Some("PHPSESSID=abc123"));
        assert_eq!(Jar::new("127.0.0.1", false).header("/", NOW), None, "a new visitor has none");
    }

    #[test]
    fn headers_that_set_nothing() {
        let j = jar("h", false, &["novalue", "=x", "  =y; Path=/", ""], "/");
        assert_eq!(j.len(), 0);
        let big = format!("a={}", "x".repeat(MAX_COOKIE_BYTES));
        assert_eq!(jar("h", false, &[&big], "/").len(), 0, "over the size bound");
        // An empty value is a cookie; spaces around name and value go.
        let j = jar("h", false, &[" a = 1 ", "b="], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1; b="));
    }

    #[test]
    fn the_default_path_is_the_requests_directory() {
        let j = jar("h", false, &["a=1"], "/wp-admin/profile.php?x=/y");
        assert_eq!(j.header("/wp-admin/", NOW).as_deref(), Some("a=1"));
        assert_eq!(j.header("/wp-admin", NOW).as_deref(), Some("a=1"), "the directory itself");
        assert_eq!(j.header("/wp-admin/x/y.php", NOW).as_deref(), Some("a=1"));
        assert_eq!(j.header("/", NOW), None);
        assert_eq!(j.header("/wp-adminx", NOW), None, "not a directory boundary");
        assert_eq!(jar("h", false, &["a=1"], "/top.php").header("/", NOW).as_deref(), Some("a=1"));
        assert_eq!(jar("h", false, &["a=1; Path=relative"], "/d/x").header("/d/", NOW).as_deref(), Some("a=1"));
    }

    #[test]
    fn path_attribute_and_order_longer_paths_first() {
        let j = jar("h", false, &["a=1; Path=/", "b=2; Path=/wp-admin", "c=3; Path=/wp-admin/"], "/");
        assert_eq!(j.header("/wp-admin/index.php", NOW).as_deref(), Some("c=3; b=2; a=1"));
        assert_eq!(j.header("/wp-admin", NOW).as_deref(), Some("b=2; a=1"));
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"));
    }

    #[test]
    fn same_name_domain_and_path_replaces_keeping_its_place() {
        let j = jar("h", false, &["a=1", "b=2", "a=3"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=3; b=2"), "a keeps its creation time");
        // The same name on another path is another cookie.
        let j = jar("h", false, &["a=1; Path=/", "a=2; Path=/x"], "/");
        assert_eq!(j.header("/x/y", NOW).as_deref(), Some("a=2; a=1"));
    }

    #[test]
    fn max_age_and_expires_delete_and_expire() {
        let j = jar("h", false, &["a=1", "a=gone; Max-Age=0"], "/");
        assert_eq!(j.header("/", NOW), None, "Max-Age=0 deletes");
        let j = jar("h", false, &["a=1", "a=deleted; expires=Thu, 01-Jan-1970 00:00:01 GMT; Max-Age=0; path=/"], "/");
        assert_eq!(j.len(), 0, "PHP's setcookie() deletion");
        let j = jar("h", false, &["a=1", "a=x; Max-Age=-5"], "/");
        assert_eq!(j.len(), 0);
        let j = jar("h", false, &["a=1; Max-Age=60"], "/");
        assert_eq!(j.header("/", NOW + 59).as_deref(), Some("a=1"));
        assert_eq!(j.header("/", NOW + 60), None, "expired after its age");
        // Max-Age beats Expires, whichever comes first; a bad Max-Age is left out.
        let j = jar("h", false, &["a=1; Max-Age=10; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"));
        let j = jar("h", false, &["a=1; Max-Age=ten; Expires=Thu, 01 Jan 1970 00:00:00 GMT"], "/");
        assert_eq!(j.len(), 0, "the bad Max-Age ignored, the past Expires deletes");
        let j = jar("h", false, &["a=1; Expires=Wed, 21 Oct 2099 07:28:00 GMT"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"));
        let j = jar("h", false, &["a=1; Expires=soon"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"), "an unreadable date: a session cookie");
    }

    #[test]
    fn domains_host_only_and_refused() {
        // Host-only by default: an address matches only itself.
        let j = jar("127.0.0.1", false, &["a=1"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"));
        // A Domain the host is not in refuses the cookie (§5.3 step 6).
        assert_eq!(jar("127.0.0.1", false, &["a=1; Domain=example.com"], "/").len(), 0);
        assert_eq!(jar("127.0.0.1", false, &["a=1; Domain=0.0.1"], "/").len(), 0, "no suffix match on an address");
        assert_eq!(jar("127.0.0.1", false, &["a=1; Domain=127.0.0.1"], "/").len(), 1);
        // A name under the Domain matches it; a leading dot is ignored; case is not kept.
        let j = jar("www.Example.com", false, &["a=1; Domain=.EXAMPLE.com", "b=2; Domain=ample.com"], "/");
        assert_eq!(j.header("/", NOW).as_deref(), Some("a=1"));
        assert_eq!(jar("localhost", false, &["a=1; Domain=localhost"], "/").len(), 1);
        // An empty Domain is no Domain.
        assert_eq!(jar("h", false, &["a=1; Domain="], "/").header("/", NOW).as_deref(), Some("a=1"));
    }

    #[test]
    fn secure_cookies_go_over_https_only_and_flags_are_kept() {
        let set = ["s=1; Secure; HttpOnly", "p=2; httponly"];
        let clear = jar("h", false, &set, "/");
        assert_eq!(clear.header("/", NOW).as_deref(), Some("p=2"));
        assert_eq!(clear.flags("s"), Some((true, true)), "kept, not sent over http");
        assert_eq!(clear.flags("p"), Some((true, false)));
        let tls = jar("h", true, &set, "/");
        assert_eq!(tls.header("/", NOW).as_deref(), Some("s=1; p=2"), "HttpOnly goes on HTTP requests");
    }

    #[test]
    fn the_jar_is_bounded() {
        let mut j = Jar::new("h", false);
        for i in 0..(MAX_COOKIES + 10) {
            j.store(format!("c{i}=v").as_bytes(), "/", NOW);
        }
        assert_eq!(j.len(), MAX_COOKIES);
        let header = j.header("/", NOW).unwrap();
        assert!(header.starts_with("c10=v;") && header.ends_with(&format!("c{}=v", MAX_COOKIES + 9)), "{header}");
    }

    #[test]
    fn wordpress_login_cookies() {
        // What WordPress 6.1's wp-login.php sends a subscriber who logged in over http.
        let set = [
            "wordpress_test_cookie=WP%20Cookie%20check; path=/",
            "wordpress_a1b2=alice%7C1700172800%7Ctoken%7Chash; path=/wp-content/plugins; HttpOnly",
            "wordpress_a1b2=alice%7C1700172800%7Ctoken%7Chash; path=/wp-admin; HttpOnly",
            "wordpress_logged_in_a1b2=alice%7C1700172800%7Ctoken%7Chash; path=/; HttpOnly",
        ];
        let j = jar("127.0.0.1", false, &set, "/wp-login.php");
        assert_eq!(j.header("/", NOW).as_deref(),
                   Some("wordpress_test_cookie=WP%20Cookie%20check; wordpress_logged_in_a1b2=alice%7C1700172800%7Ctoken%7Chash"));
        assert!(j.header("/wp-admin/profile.php", NOW).unwrap().starts_with("wordpress_a1b2="));
    }
}
