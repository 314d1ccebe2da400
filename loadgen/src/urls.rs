//! Which URLs a run requests, all on one server: the URL alone, a weighted mix
//! (`--url /a.php=3 --url /b.css=1`), a page and its assets (`--page`, `--assets`), or
//! every request of a journey (`--journey`, journey/). Each is formatted into request
//! bytes once (config/from_cli.rs); per request, `Picker` chooses the index of the mix.

use std::cell::Cell;

use crate::error::Error;
use crate::target::{Url, parse_url};

/// One entry of a weighted mix: a path or full URL on the run's server, and its
/// weight (at least 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MixEntry {
    pub target: String,
    pub weight: u32,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UrlEntry {
    /// Path and query, as sent.
    pub path: String,
    /// Weight in a mix; None for a single URL, in page mode and in a journey.
    pub weight: Option<u32>,
    /// A journey's request method (GET, or POST for its login); None: the run's.
    pub method: Option<&'static str>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Shape {
    Single,
    Mix,
    /// Entry 0 is the page, the others its assets.
    Page { conns: u32 },
    /// Visits (`--journey`): each visitor fetches pages as page mode does, over up to
    /// `conns` connections of its own.
    Visit { conns: u32 },
}

#[derive(Clone, Debug)]
pub struct Urls {
    /// The server (host and port) every entry goes to; its path is entry 0's.
    pub server: Url,
    /// The server as given, for the result document.
    pub server_text: String,
    pub entries: Vec<UrlEntry>,
    pub shape: Shape,
}

/// What is asked for: the URL argument, a mix, or a page and its assets.
pub struct UrlSpec<'a> {
    pub positional: Option<&'a str>,
    pub mix: &'a [MixEntry],
    pub page: Option<&'a str>,
    pub assets: &'a [String],
    pub page_conns: u32,
}

fn is_absolute(target: &str) -> bool {
    target.split_once("://").is_some()
}

/// Parses a `--url`/`--page`/`--assets` target (or a journey's): a URL on `server`, or a
/// path on it.
pub fn entry_path(target: &str, server: &Url) -> Result<String, Error> {
    let target = target.trim();
    if is_absolute(target) {
        let url = parse_url(target)?;
        if !url.host.eq_ignore_ascii_case(&server.host) || url.port != server.port || url.https != server.https {
            return Err(Error::Usage(format!(
                "'{target}' is not on {}: every URL of a run goes to the same host and port",
                server.host_header()
            )));
        }
        return Ok(url.path);
    }
    if !target.starts_with('/') {
        return Err(Error::Usage(format!("'{target}' must be a path starting with '/' or a full http:// URL")));
    }
    // Same checks and fragment handling as a full URL.
    Ok(parse_url(&format!("{}://{}{target}", server.scheme(), server.host_header()))?.path)
}

pub fn resolve(a: &UrlSpec) -> Result<Urls, Error> {
    if a.page.is_some() && !a.mix.is_empty() {
        return Err(Error::Usage("--page and --url cannot be combined".into()));
    }
    let targets: Vec<&str> = match a.page {
        Some(page) => std::iter::once(page).chain(a.assets.iter().map(String::as_str)).collect(),
        None => a.mix.iter().map(|e| e.target.as_str()).collect(),
    };
    let (server_text, server) = match a.positional {
        Some(text) => (text.to_string(), parse_url(text)?),
        None => match targets.iter().find(|t| is_absolute(t)) {
            Some(first) => {
                let url = parse_url(first)?;
                (format!("{}://{}/", url.scheme(), url.host_header()), url)
            }
            None if targets.is_empty() => return Err(Error::Usage("no URL given".into())),
            None => {
                return Err(Error::Usage(
                    "relative paths need a server: give a URL (http://HOST:PORT) or full URLs".into(),
                ));
            }
        },
    };
    if targets.is_empty() {
        let entries = vec![UrlEntry { path: server.path.clone(), weight: None, method: None }];
        return Ok(Urls { server, server_text, entries, shape: Shape::Single });
    }
    if a.positional.is_some() && server.path != "/" {
        return Err(Error::Usage(format!(
            "with --url or --page the URL '{server_text}' only names the server: drop its path, \
             or add it to the mix with --url"
        )));
    }
    let mut entries = Vec::with_capacity(targets.len());
    for (i, t) in targets.iter().enumerate() {
        let weight = if a.page.is_some() { None } else { Some(a.mix[i].weight) };
        entries.push(UrlEntry { path: entry_path(t, &server)?, weight, method: None });
    }
    let shape = if a.page.is_some() { Shape::Page { conns: a.page_conns } } else { Shape::Mix };
    Ok(Urls { server, server_text, entries, shape })
}

/// Chooses each request's URL by weight. Random rather than round-robin: with
/// round-robin, connections that run in lock-step would each get the same URL
/// every time (and a prefork child would serve only one file). A fixed-seed
/// xorshift per thread keeps runs reproducible.
pub struct Picker {
    /// Running sums of the weights; empty when there is nothing to choose.
    cumulative: Box<[u64]>,
    state: Cell<u64>,
}

impl Picker {
    pub fn new(entries: &[UrlEntry], thread: u32) -> Picker {
        let mut sum = 0u64;
        let cumulative: Box<[u64]> = if entries.len() > 1 {
            entries
                .iter()
                .map(|e| {
                    sum += u64::from(e.weight.unwrap_or(1));
                    sum
                })
                .collect()
        } else {
            Box::new([])
        };
        let seed = 0x9E37_79B9_7F4A_7C15u64 ^ (u64::from(thread) + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
        Picker { cumulative, state: Cell::new(seed | 1) }
    }

    #[inline]
    pub fn pick(&self) -> usize {
        let Some(&total) = self.cumulative.last() else { return 0 };
        // xorshift64* (Vigna 2016); the modulo bias is below 2^-32 for any sane total.
        let mut x = self.state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.state.set(x);
        let r = x.wrapping_mul(0x2545_F491_4F6C_DD1D) % total;
        self.cumulative.iter().position(|&c| r < c).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mix(entries: &[(&str, u32)]) -> Vec<MixEntry> {
        entries.iter().map(|&(t, w)| MixEntry { target: t.into(), weight: w }).collect()
    }

    fn args<'a>(positional: Option<&'a str>, mix: &'a [MixEntry]) -> UrlSpec<'a> {
        UrlSpec { positional, mix, page: None, assets: &[], page_conns: 6 }
    }

    #[test]
    fn single_mix_and_page() {
        let u = resolve(&args(Some("http://127.0.0.1:8080/x"), &[])).unwrap();
        assert_eq!((u.shape, u.entries[0].path.as_str()), (Shape::Single, "/x"));

        let m = mix(&[("/a.php", 3), ("http://127.0.0.1:8080/b.css", 1)]);
        let u = resolve(&args(Some("http://127.0.0.1:8080"), &m)).unwrap();
        assert_eq!(u.shape, Shape::Mix);
        assert_eq!(u.entries[1], UrlEntry { path: "/b.css".into(), weight: Some(1), method: None });

        let m = mix(&[("http://127.0.0.1:81/a", 1), ("/b", 2)]);
        let u = resolve(&args(None, &m)).unwrap();
        assert_eq!((u.server.port, u.entries[1].path.as_str()), (81, "/b"));

        let assets = vec!["/a.css".to_string(), "/b.js".to_string()];
        let a = UrlSpec { positional: Some("http://localhost:80"), mix: &[], page: Some("/"), assets: &assets, page_conns: 4 };
        let u = resolve(&a).unwrap();
        assert_eq!(u.shape, Shape::Page { conns: 4 });
        assert_eq!(u.entries.len(), 3);
        assert_eq!(u.entries[0].weight, None);
    }

    #[test]
    fn refusals() {
        let m = mix(&[("/a", 1)]);
        assert!(resolve(&args(None, &m)).is_err(), "no server");
        assert!(resolve(&args(Some("http://h:1/path"), &m)).is_err(), "positional path ignored");
        let m = mix(&[("http://127.0.0.1:1/a", 1), ("http://127.0.0.1:2/b", 1)]);
        assert!(resolve(&args(None, &m)).is_err(), "two servers");
        let m = mix(&[("a.php", 1)]);
        assert!(resolve(&args(Some("http://h:1"), &m)).is_err(), "not a path");
        assert!(resolve(&args(None, &[])).is_err());
    }

    #[test]
    fn picks_by_weight() {
        let entries: Vec<UrlEntry> =
            [3, 1].iter().enumerate().map(|(i, &w)| UrlEntry { path: format!("/{i}"), weight: Some(w), method: None }).collect();
        let p = Picker::new(&entries, 0);
        let mut counts = [0u32; 2];
        for _ in 0..40_000 {
            counts[p.pick()] += 1;
        }
        assert!((29_000..31_000).contains(&counts[0]), "{counts:?}");
        let single = Picker::new(&entries[..1], 0);
        assert_eq!(single.pick(), 0);
    }
}
