//! Page mode: page views and their load time (page start → last asset's last
//! byte), the figure a visitor feels on a mixed page.

use super::histogram::LatencyHist;

#[derive(Clone, Debug, Default)]
pub struct PageStats {
    /// Page views whose page and assets all completed (any status).
    pub completed: u64,
    /// Page views where the page or an asset failed (see `errors` for the classes).
    pub failed: u64,
    /// Load time of the completed page views.
    pub load: LatencyHist,
}

impl PageStats {
    pub fn record(&mut self, ok: bool, load_us: u64) {
        if ok {
            self.completed += 1;
            self.load.record(load_us);
        } else {
            self.failed += 1;
        }
    }

    pub fn merge(&mut self, other: &PageStats) {
        self.completed += other.completed;
        self.failed += other.failed;
        self.load.merge(&other.load);
    }
}
