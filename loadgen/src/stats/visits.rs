//! Visits (`--journey`): how many ended complete, failed or were cut off by the end of
//! the run, their duration from the intended start (think times included), the pages
//! and requests a complete visit made, and each page of the journey (and its login) as
//! page mode counts a page view.

use super::histogram::{LatencyHist, VISIT_HIST_MAX_US};
use super::pages::PageStats;

#[derive(Clone, Debug)]
pub struct VisitStats {
    /// Visits whose every step completed (any status).
    pub completed: u64,
    /// Visits cut short by a failed request (the visitor leaves).
    pub failed: u64,
    /// Visits begun in the measured phase and still going when it ended.
    pub in_flight_at_end: u64,
    /// Page views of the completed visits (the login's requests aside).
    pub pages: u64,
    /// Requests of the completed visits, the login's included.
    pub requests: u64,
    /// Complete visits: intended start → the last byte of their last page.
    pub duration: LatencyHist,
    /// One per row of the journey (journey::Journey::rows): the login, then each page.
    pub rows: Vec<PageStats>,
}

/// How one visit ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VisitEnd {
    Completed { duration_us: u64, pages: u64, requests: u64 },
    Failed,
    /// The run ended during it.
    CutOff,
}

impl VisitStats {
    pub fn new(rows: usize) -> Self {
        VisitStats {
            completed: 0,
            failed: 0,
            in_flight_at_end: 0,
            pages: 0,
            requests: 0,
            duration: LatencyHist::with_max(VISIT_HIST_MAX_US),
            rows: vec![PageStats::default(); rows],
        }
    }

    pub fn record(&mut self, end: VisitEnd) {
        match end {
            VisitEnd::Completed { duration_us, pages, requests } => {
                self.completed += 1;
                self.pages += pages;
                self.requests += requests;
                self.duration.record(duration_us);
            }
            VisitEnd::Failed => self.failed += 1,
            VisitEnd::CutOff => self.in_flight_at_end += 1,
        }
    }

    pub fn merge(&mut self, other: &VisitStats) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.in_flight_at_end += other.in_flight_at_end;
        self.pages += other.pages;
        self.requests += other.requests;
        self.duration.merge(&other.duration);
        for (a, b) in self.rows.iter_mut().zip(&other.rows) {
            a.merge(b);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn visits_add_up_across_threads() {
        let mut a = VisitStats::new(2);
        a.record(VisitEnd::Completed { duration_us: 2_000_000, pages: 3, requests: 12 });
        a.record(VisitEnd::Failed);
        a.rows[1].record(true, 40_000);
        let mut b = VisitStats::new(2);
        b.record(VisitEnd::Completed { duration_us: 90_000_000, pages: 1, requests: 2 });
        b.record(VisitEnd::CutOff);
        b.rows[1].record(false, 0);
        a.merge(&b);
        assert_eq!((a.completed, a.failed, a.in_flight_at_end, a.pages, a.requests), (2, 1, 1, 4, 14));
        let d = a.duration.summary();
        assert_eq!((d.count, d.max), (2, Some(90_000_000)), "a 90 s visit is within the visit's range");
        assert_eq!((a.rows[1].completed, a.rows[1].failed), (1, 1));
    }
}
