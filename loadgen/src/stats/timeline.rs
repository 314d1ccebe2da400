//! Per-second timeline of the measured phase: requests, errors, p50 and p99.
//!
//! Each engine thread keeps its own; they are merged at the end. Each second gets
//! a small auto-resizing HdrHistogram with 2 significant digits (±1 %: enough to
//! see a stall or a ramp, and ~20 KB at most per second), so hour-long runs stay
//! cheap; the exact 3-digit distribution lives in the run's main histograms.

use hdrhistogram::Histogram;
use serde::Serialize;

use super::histogram::HIST_MAX_US;

#[derive(Clone, Debug)]
struct Second {
    requests: u64,
    errors: u64,
    hist: Histogram<u64>,
}

impl Second {
    fn new() -> Self {
        let mut hist = Histogram::new(2).expect("2 significant digits is valid");
        hist.auto(true);
        Second { requests: 0, errors: 0, hist }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Timeline {
    seconds: Vec<Second>,
}

/// One entry of the schema's `timeline` array.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimelineEntry {
    pub t_s: u64,
    pub requests: u64,
    pub errors: u64,
    pub p50_us: Option<u64>,
    pub p99_us: Option<u64>,
}

impl Timeline {
    fn second(&mut self, t_s: usize) -> &mut Second {
        if t_s >= self.seconds.len() {
            self.seconds.resize_with(t_s + 1, Second::new);
        }
        &mut self.seconds[t_s]
    }

    #[inline]
    pub fn record_ok(&mut self, t_s: usize, latency_us: u64) {
        let s = self.second(t_s);
        s.requests += 1;
        let _ = s.hist.record(latency_us.min(HIST_MAX_US));
    }

    #[inline]
    pub fn record_error(&mut self, t_s: usize) {
        self.second(t_s).errors += 1;
    }

    pub fn merge(&mut self, other: &Timeline) {
        for (t, s) in other.seconds.iter().enumerate() {
            let mine = self.second(t);
            mine.requests += s.requests;
            mine.errors += s.errors;
            // Auto-resizing histograms grow to fit, so add() cannot fail.
            let _ = mine.hist.add(&s.hist);
        }
    }

    /// Entries for seconds 0..n (whole or partial seconds of the measured phase),
    /// including empty ones, so a stall shows as a zero rather than a gap.
    pub fn entries(&self, n_seconds: usize) -> Vec<TimelineEntry> {
        let n = n_seconds.max(self.seconds.len());
        (0..n)
            .map(|t| match self.seconds.get(t) {
                Some(s) if !s.hist.is_empty() => TimelineEntry {
                    t_s: t as u64,
                    requests: s.requests,
                    errors: s.errors,
                    p50_us: Some(s.hist.value_at_quantile(0.5).min(s.hist.max())),
                    p99_us: Some(s.hist.value_at_quantile(0.99).min(s.hist.max())),
                },
                other => TimelineEntry {
                    t_s: t as u64,
                    requests: other.map_or(0, |s| s.requests),
                    errors: other.map_or(0, |s| s.errors),
                    p50_us: None,
                    p99_us: None,
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn merges_and_fills_gaps() {
        let mut a = Timeline::default();
        a.record_ok(0, 100);
        a.record_error(2);
        let mut b = Timeline::default();
        b.record_ok(0, 300);
        b.record_ok(1, 5_000);
        a.merge(&b);
        let e = a.entries(4);
        assert_eq!(e.len(), 4);
        assert_eq!((e[0].requests, e[0].p50_us), (2, Some(100)));
        assert_eq!(e[1].p99_us.map(|v| v.abs_diff(5_000) <= 50), Some(true));
        assert_eq!((e[2].requests, e[2].errors, e[2].p50_us), (0, 1, None));
        assert_eq!((e[3].requests, e[3].errors), (0, 0));
    }
}
