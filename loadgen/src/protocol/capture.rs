//! `--count-header`: the values of chosen response headers, captured while the
//! head is parsed (the bytes are only borrowed there), kept until the response is
//! recorded. Unused, it costs one predictable branch per response header; used, it
//! copies a few bytes into buffers that are reused, so nothing is allocated per
//! response once they have grown.

use std::rc::Rc;

use super::reading::clear_retaining;

#[derive(Debug)]
pub struct Captures {
    /// Header names to capture, as the user gave them (matched case-insensitively).
    watch: Rc<[String]>,
    /// The captured bytes, only when something is watched: every connection's reader
    /// has a Captures, and 10,000 empty buffers cost 400 KB (bench/engine-memory).
    held: Option<Box<Held>>,
}

#[derive(Debug, Default)]
struct Held {
    bytes: Vec<u8>,
    /// (index into `watch`, start, end) into `bytes`, one per header line seen.
    spans: Vec<(usize, usize, usize)>,
}

impl Default for Captures {
    fn default() -> Self {
        Captures::new(Rc::from(Vec::new()))
    }
}

impl Captures {
    pub fn new(watch: Rc<[String]>) -> Self {
        let held = (!watch.is_empty()).then(Box::default);
        Captures { watch, held }
    }

    #[inline]
    pub fn active(&self) -> bool {
        !self.watch.is_empty()
    }

    /// Empties the captures for the next response; a buffer grown large by one
    /// response's huge values is freed rather than kept for the connection's life.
    pub fn clear(&mut self) {
        if let Some(held) = &mut self.held {
            clear_retaining(&mut held.bytes);
            held.spans.clear();
        }
    }

    /// Bytes of memory held for captured values.
    #[cfg(any(test, fuzzing))]
    pub fn capacity(&self) -> usize {
        self.held.as_ref().map_or(0, |h| h.bytes.capacity())
    }

    /// Offers one header line; kept (value trimmed) if its name is watched. A header
    /// sent twice is kept twice: each value is counted.
    pub fn offer(&mut self, name: &str, value: &[u8]) {
        let Some(held) = &mut self.held else { return };
        for (i, w) in self.watch.iter().enumerate() {
            if w.eq_ignore_ascii_case(name) {
                let value = value.trim_ascii();
                let start = held.bytes.len();
                held.bytes.extend_from_slice(value);
                held.spans.push((i, start, held.bytes.len()));
            }
        }
    }

    /// The number of watched headers.
    pub fn watched(&self) -> usize {
        self.watch.len()
    }

    /// Values captured for watched header `index` in the current response.
    pub fn values(&self, index: usize) -> impl Iterator<Item = &[u8]> {
        self.held.iter().flat_map(move |h| h.spans.iter().filter(move |s| s.0 == index).map(move |&(_, a, b)| &h.bytes[a..b]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captures_watched_headers_only() {
        let mut c = Captures::new(Rc::from(vec!["X-Cache".to_string(), "Age".to_string()]));
        assert!(c.active());
        c.offer("x-cache", b"  HIT ");
        c.offer("Server", b"nginx");
        c.offer("X-CACHE", b"MISS");
        let v: Vec<&[u8]> = c.values(0).collect();
        assert_eq!(v, [&b"HIT"[..], b"MISS"]);
        assert_eq!(c.values(1).count(), 0);
        c.clear();
        assert_eq!(c.values(0).count(), 0);
        assert!(!Captures::default().active());
    }
}
