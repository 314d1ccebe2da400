//! Latency distributions: an HdrHistogram for percentiles plus exact moments.
//!
//! Percentiles come from the HdrHistogram (3 significant digits: ±0.1 %, exact
//! below 2048 µs), so memory is fixed whatever the request count — oha keeps every
//! sample and pays 90–114 MB for it. Count, min, max, mean and stdev are kept
//! exactly beside it (integer sums), so they carry no bucket error. Values above
//! `HIST_MAX_US` are clamped into the top bucket and counted in `over_range`.

use hdrhistogram::Histogram;
use serde::Serialize;

/// 60 s: any longer request is a stall, not a latency worth resolving.
pub const HIST_MAX_US: u64 = 60_000_000;

/// 1 h: a visit's duration includes its think times (visits.rs).
pub const VISIT_HIST_MAX_US: u64 = 3_600_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// The percentile table every result carries: ab's 50…100 % plus the tail.
pub const PERCENTILES: [(&str, f64); 11] = [
    ("50", 50.0),
    ("66", 66.0),
    ("75", 75.0),
    ("80", 80.0),
    ("90", 90.0),
    ("95", 95.0),
    ("98", 98.0),
    ("99", 99.0),
    ("99.9", 99.9),
    ("99.99", 99.99),
    ("100", 100.0),
];

#[derive(Clone, Debug)]
pub struct LatencyHist {
    hist: Histogram<u64>,
    count: u64,
    sum: u64,
    sum_sq: u128,
    min: u64,
    max: u64,
    over_range: u64,
    /// The highest value tracked (`HIST_MAX_US` but for visits' durations).
    max_us: u64,
}

/// ab's "Connection Times" row. Not computable = None (n = 0; stdev also n < 2).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Summary {
    pub count: u64,
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub stdev: Option<f64>,
    pub median: Option<u64>,
    pub max: Option<u64>,
}

/// Ordered percentile -> value pairs; serialised as a JSON object in this order.
#[derive(Clone, Debug, PartialEq)]
pub struct Percentiles(pub Vec<(&'static str, Option<u64>)>);

impl Serialize for Percentiles {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            map.serialize_entry(k, v)?;
        }
        map.end()
    }
}

/// The schema's `latency` object.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct Latency {
    pub count: u64,
    pub min: Option<u64>,
    pub mean: Option<f64>,
    pub stdev: Option<f64>,
    pub max: Option<u64>,
    pub percentiles: Percentiles,
    pub histogram_max_us: u64,
    pub over_range: u64,
    /// --histogram: every recorded bucket as [highest equivalent value, count], in
    /// value order. Engines' buckets are the same (same bounds and precision), so
    /// adding counts value by value merges them exactly.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub histogram: Option<Vec<[u64; 2]>>,
}

impl Default for LatencyHist {
    fn default() -> Self {
        Self::new()
    }
}

impl LatencyHist {
    pub fn new() -> Self {
        Self::with_max(HIST_MAX_US)
    }

    /// A distribution of values up to `max_us` (larger ones clamped and counted).
    pub fn with_max(max_us: u64) -> Self {
        LatencyHist {
            hist: Histogram::new_with_bounds(1, max_us, SIGNIFICANT_DIGITS).expect("static histogram bounds are valid"),
            count: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
            over_range: 0,
            max_us,
        }
    }

    #[inline]
    pub fn record(&mut self, value_us: u64) {
        let clamped = if value_us > self.max_us {
            self.over_range += 1;
            self.max_us
        } else {
            value_us
        };
        // Cannot fail: the value is within the bounds given at construction.
        let _ = self.hist.record(clamped);
        self.count += 1;
        self.sum = self.sum.saturating_add(value_us);
        self.sum_sq = self.sum_sq.saturating_add(u128::from(value_us) * u128::from(value_us));
        self.min = self.min.min(value_us);
        self.max = self.max.max(value_us);
    }

    pub fn merge(&mut self, other: &LatencyHist) {
        // Same bounds on both sides, so add() cannot fail.
        let _ = self.hist.add(&other.hist);
        self.count += other.count;
        self.sum = self.sum.saturating_add(other.sum);
        self.sum_sq = self.sum_sq.saturating_add(other.sum_sq);
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        self.over_range += other.over_range;
    }

    #[cfg(test)]
    pub fn count(&self) -> u64 {
        self.count
    }

    /// How many recorded values are above `value_us` (within the ±0.1 % buckets).
    pub fn count_above(&self, value_us: u64) -> u64 {
        if self.count == 0 || value_us >= self.max {
            return 0;
        }
        let at_or_below = self.hist.count_between(0, value_us.min(self.max_us));
        self.count.saturating_sub(at_or_below)
    }

    #[cfg(test)]
    pub fn over_range(&self) -> u64 {
        self.over_range
    }

    fn min(&self) -> Option<u64> {
        (self.count > 0).then_some(self.min)
    }

    fn max(&self) -> Option<u64> {
        (self.count > 0).then_some(self.max)
    }

    fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum as f64 / self.count as f64)
    }

    /// Sample standard deviation (n − 1 denominator, like hyperfine and ab), from
    /// exact integer sums: var = (n·Σx² − (Σx)²) / (n·(n − 1)).
    fn stdev(&self) -> Option<f64> {
        if self.count < 2 {
            return None;
        }
        let n = u128::from(self.count);
        let sum = u128::from(self.sum);
        let var = match n.checked_mul(self.sum_sq).zip(sum.checked_mul(sum)) {
            Some((a, b)) => a.saturating_sub(b) as f64 / (n * (n - 1)) as f64,
            None => {
                let mean = self.sum as f64 / self.count as f64;
                ((self.sum_sq as f64 - self.count as f64 * mean * mean) / (self.count - 1) as f64).max(0.0)
            }
        };
        Some(var.sqrt())
    }

    /// Nearest-rank percentile (HdrHistogram's `value_at_quantile`: the smallest
    /// recorded value such that `p` % of values are ≤ it, reported as the top of its
    /// ±0.1 % bucket), capped at the exact maximum so p99 never exceeds p100.
    pub fn percentile(&self, p: f64) -> Option<u64> {
        if self.count == 0 {
            return None;
        }
        if p >= 100.0 {
            return Some(self.max);
        }
        Some(self.hist.value_at_quantile(p / 100.0).min(self.max))
    }

    fn buckets(&self) -> Vec<[u64; 2]> {
        self.hist.iter_recorded().map(|v| [v.value_iterated_to(), v.count_at_value()]).collect()
    }

    pub fn summary(&self) -> Summary {
        Summary {
            count: self.count,
            min: self.min(),
            mean: self.mean(),
            stdev: self.stdev(),
            median: self.percentile(50.0),
            max: self.max(),
        }
    }

    pub fn latency_doc(&self, buckets: bool) -> Latency {
        Latency {
            count: self.count,
            min: self.min(),
            mean: self.mean(),
            stdev: self.stdev(),
            max: self.max(),
            percentiles: Percentiles(
                PERCENTILES.iter().map(|&(name, p)| (name, self.percentile(p))).collect(),
            ),
            histogram_max_us: self.max_us,
            over_range: self.over_range,
            histogram: buckets.then(|| self.buckets()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_is_not_computable() {
        let h = LatencyHist::new();
        let s = h.summary();
        assert_eq!((s.count, s.min, s.mean, s.stdev, s.median, s.max), (0, None, None, None, None, None));
        assert!(h.latency_doc(false).percentiles.0.iter().all(|(_, v)| v.is_none()));
    }

    #[test]
    fn one_value_has_no_stdev() {
        let mut h = LatencyHist::new();
        h.record(42);
        let s = h.summary();
        assert_eq!((s.min, s.median, s.max, s.stdev), (Some(42), Some(42), Some(42), None));
        assert_eq!(s.mean, Some(42.0));
    }

    #[test]
    fn all_equal_values() {
        let mut h = LatencyHist::new();
        for _ in 0..1000 {
            h.record(123_456);
        }
        let s = h.summary();
        assert_eq!(s.stdev, Some(0.0));
        // Bucketed percentiles are capped at the exact max.
        assert!(h.latency_doc(false).percentiles.0.iter().all(|(_, v)| *v == Some(123_456)));
    }

    #[test]
    fn exact_moments_and_percentiles() {
        let mut h = LatencyHist::new();
        for v in 1..=100 {
            h.record(v);
        }
        let s = h.summary();
        assert_eq!(s.mean, Some(50.5));
        // Sample stdev of 1..=100 = sqrt(841.666…) = 29.0115
        assert!((s.stdev.unwrap() - 29.011_491).abs() < 1e-4);
        assert_eq!(h.percentile(50.0), Some(50));
        assert_eq!(h.percentile(99.0), Some(99));
        assert_eq!(h.percentile(100.0), Some(100));
    }

    #[test]
    fn counts_above_a_value() {
        let mut h = LatencyHist::new();
        assert_eq!(h.count_above(5), 0);
        for v in [1, 10, 100, 1000, 10_000] {
            h.record(v);
        }
        assert_eq!(h.count_above(100), 2);
        assert_eq!(h.count_above(0), 5);
        assert_eq!(h.count_above(10_000), 0);
    }

    #[test]
    fn over_range_is_clamped_and_counted() {
        let mut h = LatencyHist::new();
        h.record(10);
        h.record(HIST_MAX_US * 3);
        assert_eq!(h.over_range(), 1);
        assert_eq!(h.summary().max, Some(HIST_MAX_US * 3));
        let mut other = LatencyHist::new();
        other.record(HIST_MAX_US + 1);
        h.merge(&other);
        assert_eq!((h.count(), h.over_range()), (3, 2));
        // A visit's longer range holds what a request's clamps.
        let mut long = LatencyHist::with_max(VISIT_HIST_MAX_US);
        long.record(HIST_MAX_US * 3);
        assert_eq!(long.over_range(), 0);
        assert_eq!(long.latency_doc(false).histogram_max_us, VISIT_HIST_MAX_US);
    }
}
