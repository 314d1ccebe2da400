//! Per-URL counts and latencies, for a URL mix (`--url`) and page mode, so a
//! fast static file cannot hide a slow PHP page in the overall figures.

use super::histogram::LatencyHist;
use super::Outcome;

#[derive(Clone, Debug, Default)]
pub struct UrlStats {
    pub completed: u64,
    pub ok_2xx: u64,
    pub non_2xx: u64,
    pub failed: u64,
    pub latency: LatencyHist,
}

impl UrlStats {
    #[inline]
    pub fn record(&mut self, outcome: &Outcome) {
        match outcome {
            Outcome::Completed(s) => {
                self.completed += 1;
                if s.is_2xx() {
                    self.ok_2xx += 1;
                } else {
                    self.non_2xx += 1;
                }
                self.latency.record(s.latency_us);
            }
            Outcome::Failed(_) => self.failed += 1,
        }
    }

    pub fn merge(&mut self, other: &UrlStats) {
        self.completed += other.completed;
        self.ok_2xx += other.ok_2xx;
        self.non_2xx += other.non_2xx;
        self.failed += other.failed;
        self.latency.merge(&other.latency);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{ErrorClass, Sample};

    #[test]
    fn records_and_merges() {
        let mut a = UrlStats::default();
        a.record(&Outcome::Completed(Sample { status: 200, latency_us: 10, ..Sample::default() }));
        a.record(&Outcome::Completed(Sample { status: 404, latency_us: 30, ..Sample::default() }));
        let mut b = UrlStats::default();
        b.record(&Outcome::Failed(ErrorClass::Timeout));
        a.merge(&b);
        assert_eq!((a.completed, a.ok_2xx, a.non_2xx, a.failed), (2, 1, 1, 1));
        assert_eq!(a.latency.summary().max, Some(30));
    }
}
