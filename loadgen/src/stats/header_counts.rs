//! `--count-header`: how often each value of a response header was seen, e.g.
//! X-Cache HIT/MISS, so a cached stack is never mistaken for a fast one.
//!
//! Distinct values are capped per header (a header carrying a request id or a
//! date would otherwise grow without bound); later new values go to "(other)".
//! Responses without the header count under "(none)". Values are compared as
//! bytes, as the server sent them (trimmed).

use std::collections::BTreeMap;

use crate::protocol::capture::Captures;

/// Distinct values kept per header before "(other)" takes the rest.
pub const MAX_VALUES: usize = 32;
pub const OTHER: &str = "(other)";
pub const NONE: &str = "(none)";

#[derive(Clone, Debug, Default)]
struct Table {
    values: Vec<(Box<[u8]>, u64)>,
    other: u64,
    none: u64,
}

impl Table {
    fn add(&mut self, value: &[u8], n: u64) {
        // Linear search: at most MAX_VALUES short entries, usually two or three.
        if let Some(entry) = self.values.iter_mut().find(|(v, _)| **v == *value) {
            entry.1 += n;
        } else if self.values.len() < MAX_VALUES {
            self.values.push((value.into(), n));
        } else {
            self.other += n;
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct HeaderCounts {
    tables: Vec<Table>,
}

impl HeaderCounts {
    pub fn new(headers: usize) -> Self {
        HeaderCounts { tables: vec![Table::default(); headers] }
    }

    /// Counts the watched headers of one completed response.
    pub fn record(&mut self, captures: &Captures) {
        for (i, table) in self.tables.iter_mut().enumerate().take(captures.watched()) {
            let mut seen = false;
            for value in captures.values(i) {
                table.add(value, 1);
                seen = true;
            }
            if !seen {
                table.none += 1;
            }
        }
    }

    pub fn merge(&mut self, other: &HeaderCounts) {
        for (a, b) in self.tables.iter_mut().zip(&other.tables) {
            for (value, n) in &b.values {
                a.add(value, *n);
            }
            a.other += b.other;
            a.none += b.none;
        }
    }

    /// Header name (as given) → value → count, for the result document.
    pub fn to_map(&self, names: &[String]) -> BTreeMap<String, BTreeMap<String, u64>> {
        names
            .iter()
            .zip(&self.tables)
            .map(|(name, t)| {
                let mut values = BTreeMap::new();
                for (v, n) in &t.values {
                    *values.entry(String::from_utf8_lossy(v).into_owned()).or_insert(0) += n;
                }
                for (key, n) in [(OTHER, t.other), (NONE, t.none)] {
                    if n > 0 {
                        *values.entry(key.to_string()).or_insert(0) += n;
                    }
                }
                (name.clone(), values)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    fn captures(value: Option<&str>) -> Captures {
        let mut c = Captures::new(Rc::from(vec!["X-Cache".to_string()]));
        if let Some(v) = value {
            c.offer("X-Cache", v.as_bytes());
        }
        c
    }

    #[test]
    fn counts_values_none_and_other() {
        let mut h = HeaderCounts::new(1);
        for v in [Some("HIT"), Some("HIT"), Some("MISS"), None] {
            h.record(&captures(v));
        }
        let mut other = HeaderCounts::new(1);
        for i in 0..40 {
            other.record(&captures(Some(&format!("v{i}"))));
        }
        h.merge(&other);
        let map = h.to_map(&["X-Cache".to_string()]);
        let m = &map["X-Cache"];
        assert_eq!((m["HIT"], m["MISS"], m[NONE]), (2, 1, 1));
        // 2 values already, 30 more fit, 10 overflow.
        assert_eq!(m[OTHER], 10);
        assert_eq!(m.values().sum::<u64>(), 44);
        assert!(HeaderCounts::new(0).to_map(&[]).is_empty());
    }
}
