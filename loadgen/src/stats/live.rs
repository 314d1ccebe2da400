//! Live counters for `--progress`: requests completed, failed and non-2xx so far,
//! per phase, readable by another thread while the load runs.
//!
//! Why not the timeline: it (like every other statistic here) lives in the engine
//! thread's `RefCell` and is merged only at the end, and it leaves out the
//! warm-up. Reading it live would need a lock on every request. These counters
//! are instead written by one engine thread only, as a plain load and store
//! (no locked read-modify-write), and read once a second by the reporter
//! (progress.rs), which only needs a recent value, not an exact one. Each
//! thread's counters sit on their own cache lines, so a thread's writes never
//! invalidate another's. Off (no --progress), the engine holds none: one
//! predictable branch per request.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

use super::Outcome;

#[derive(Debug, Default)]
struct PhaseCounters {
    completed: AtomicU64,
    failed: AtomicU64,
    non_2xx: AtomicU64,
}

/// One engine thread's counters; that thread is their only writer.
#[derive(Debug, Default)]
#[repr(align(128))]
pub struct LiveCounters {
    warmup: PhaseCounters,
    measure: PhaseCounters,
}

/// Counts of one phase at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhaseCounts {
    pub completed: u64,
    pub failed: u64,
    pub non_2xx: u64,
}

impl LiveCounters {
    /// Counts one request that ended (a measured one in the measured phase's
    /// counters, a warm-up one in the warm-up's). Only the owning thread calls this.
    #[inline]
    pub fn record(&self, measured: bool, outcome: &Outcome) {
        let phase = if measured { &self.measure } else { &self.warmup };
        match outcome {
            Outcome::Completed(sample) => {
                bump(&phase.completed);
                if !sample.is_2xx() {
                    bump(&phase.non_2xx);
                }
            }
            Outcome::Failed(_) => bump(&phase.failed),
        }
    }

    /// A recent value of one phase's counts (any thread).
    pub fn read(&self, measured: bool) -> PhaseCounts {
        let phase = if measured { &self.measure } else { &self.warmup };
        PhaseCounts {
            completed: phase.completed.load(Relaxed),
            failed: phase.failed.load(Relaxed),
            non_2xx: phase.non_2xx.load(Relaxed),
        }
    }
}

/// One phase's counts summed over the engine threads.
pub fn sum<'a>(threads: impl IntoIterator<Item = &'a LiveCounters>, measured: bool) -> PhaseCounts {
    threads.into_iter().map(|t| t.read(measured)).fold(PhaseCounts::default(), |a, b| PhaseCounts {
        completed: a.completed + b.completed,
        failed: a.failed + b.failed,
        non_2xx: a.non_2xx + b.non_2xx,
    })
}

/// Single writer: a load and a store suffice (no lost updates), and cost what a
/// plain `+= 1` costs; `fetch_add` would lock the bus on every request.
#[inline]
fn bump(counter: &AtomicU64) {
    counter.store(counter.load(Relaxed) + 1, Relaxed);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::{ErrorClass, Sample};

    #[test]
    fn counts_by_phase_and_sums_threads() {
        let ok = Outcome::Completed(Sample { status: 200, ..Sample::default() });
        let not_found = Outcome::Completed(Sample { status: 404, ..Sample::default() });
        let failed = Outcome::Failed(ErrorClass::Timeout);
        let (a, b) = (LiveCounters::default(), LiveCounters::default());
        a.record(false, &ok);
        a.record(true, &ok);
        a.record(true, &not_found);
        b.record(true, &failed);
        b.record(true, &ok);
        assert_eq!(a.read(false), PhaseCounts { completed: 1, failed: 0, non_2xx: 0 });
        assert_eq!(sum([&a, &b], true), PhaseCounts { completed: 3, failed: 1, non_2xx: 1 });
        assert_eq!(std::mem::align_of::<LiveCounters>(), 128);
    }
}
