//! https: what the handshakes of measured connections cost and negotiated, and
//! the details of failed requests (TLS alert, certificate problem, HTTP/2 code).
//! Recorded once per new connection, never per request on a reused one.

use super::histogram::LatencyHist;
use super::{Detail, ErrorClass};
use crate::tls::{Handshake, Negotiated};

#[derive(Clone, Debug, Default)]
pub struct TlsStats {
    /// TCP connect time of each new connection.
    pub connect: LatencyHist,
    /// TLS handshake time of each new connection.
    pub handshake: LatencyHist,
    pub full: u64,
    pub resumed: u64,
    /// Distinct negotiated tuples and their connections, in order of first sight
    /// (a handful at most: a linear scan is cheaper than hashing).
    pub negotiated: Vec<(Negotiated, u64)>,
}

impl TlsStats {
    pub fn record(&mut self, h: &Handshake) {
        self.connect.record(h.connect_us);
        self.handshake.record(h.handshake_us);
        if h.resumed {
            self.resumed += 1;
        } else {
            self.full += 1;
        }
        match self.negotiated.iter_mut().find(|(n, _)| *n == h.negotiated) {
            Some((_, count)) => *count += 1,
            None => self.negotiated.push((h.negotiated, 1)),
        }
    }

    pub fn merge(&mut self, other: &TlsStats) {
        self.connect.merge(&other.connect);
        self.handshake.merge(&other.handshake);
        self.full += other.full;
        self.resumed += other.resumed;
        for (n, c) in &other.negotiated {
            match self.negotiated.iter_mut().find(|(m, _)| m == n) {
                Some((_, count)) => *count += c,
                None => self.negotiated.push((*n, *c)),
            }
        }
    }
}

/// Failed requests by (class, detail), in order of first sight.
#[derive(Clone, Debug, Default)]
pub struct ErrorDetails(pub Vec<(ErrorClass, Detail, u64)>);

impl ErrorDetails {
    pub fn add(&mut self, class: ErrorClass, detail: Detail) {
        match self.0.iter_mut().find(|(c, d, _)| *c == class && *d == detail) {
            Some((_, _, n)) => *n += 1,
            None => self.0.push((class, detail, 1)),
        }
    }

    pub fn merge(&mut self, other: &ErrorDetails) {
        for &(class, detail, n) in &other.0 {
            match self.0.iter_mut().find(|(c, d, _)| *c == class && *d == detail) {
                Some((_, _, m)) => *m += n,
                None => self.0.push((class, detail, n)),
            }
        }
    }
}
