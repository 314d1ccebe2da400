//! Coverage feedback from LLVM's SanitizerCoverage inline 8-bit counters (enabled
//! by .cargo/config.toml): every instrumented edge has a counter byte, and each
//! instrumented module registers its counter array at start-up by calling
//! `__sanitizer_cov_8bit_counters_init(start, stop)` — defined here.
//!
//! An input is *new* when some counter reaches a hit-count bucket (1, 2, 3, 4–7,
//! 8–15, 16–31, 32–127, 128+: AFL's buckets) never seen before; new inputs join
//! the corpus. Without the instrumentation no array is registered and the fuzzer
//! still runs, unguided (`edges()` is then 0).

use std::sync::atomic::{AtomicPtr, AtomicUsize, Ordering};

/// Counter arrays registered at start-up (one per instrumented codegen unit).
const MAX_REGIONS: usize = 256;
static REGION_START: [AtomicPtr<u8>; MAX_REGIONS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_REGIONS];
static REGION_LEN: [AtomicUsize; MAX_REGIONS] = [const { AtomicUsize::new(0) }; MAX_REGIONS];
static REGIONS: AtomicUsize = AtomicUsize::new(0);

/// Called by the instrumented modules' constructors, before `main`.
///
/// # Safety
/// Called by LLVM's instrumentation with the bounds of a static counter array.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn __sanitizer_cov_8bit_counters_init(start: *mut u8, stop: *mut u8) {
    let i = REGIONS.fetch_add(1, Ordering::SeqCst);
    if i < MAX_REGIONS && !start.is_null() && stop > start {
        REGION_LEN[i].store(stop as usize - start as usize, Ordering::SeqCst);
        REGION_START[i].store(start, Ordering::SeqCst);
    }
}

fn regions() -> impl Iterator<Item = &'static mut [u8]> {
    (0..REGIONS.load(Ordering::SeqCst).min(MAX_REGIONS)).filter_map(|i| {
        let start = REGION_START[i].load(Ordering::SeqCst);
        let len = REGION_LEN[i].load(Ordering::SeqCst);
        // SAFETY: registered by the instrumentation: a static array of `len`
        // counters that lives as long as the program. Only this thread reads or
        // clears it between executions (instrumented code elsewhere only
        // increments, and the fuzzer runs its inputs on this thread).
        (!start.is_null()).then(|| unsafe { std::slice::from_raw_parts_mut(start, len) })
    })
}

fn bucket(count: u8) -> u8 {
    match count {
        0 => 0,
        1 => 1,
        2 => 2,
        3 => 4,
        4..=7 => 8,
        8..=15 => 16,
        16..=31 => 32,
        32..=127 => 64,
        128.. => 128,
    }
}

/// The buckets seen so far for every counter, all regions laid end to end.
pub struct Coverage {
    seen: Vec<u8>,
}

impl Coverage {
    pub fn new() -> Coverage {
        Coverage { seen: vec![0; regions().map(|r| r.len()).sum()] }
    }

    /// Edges instrumented in the binary (0 without the instrumentation).
    pub fn edges(&self) -> usize {
        self.seen.len()
    }

    /// Edges hit at least once so far.
    pub fn covered(&self) -> usize {
        self.seen.iter().filter(|&&b| b != 0).count()
    }

    /// Zeroes every counter: call right before running an input.
    pub fn reset() {
        for region in regions() {
            region.fill(0);
        }
    }

    /// Folds the counters of the input that just ran into what was seen; true
    /// if it reached a bucket never seen before.
    pub fn record(&mut self) -> bool {
        let mut new = false;
        let mut at = 0;
        for region in regions() {
            let seen = &mut self.seen[at..at + region.len()];
            for (s, &c) in seen.iter_mut().zip(region.iter()) {
                if c != 0 {
                    let b = bucket(c);
                    if *s & b == 0 {
                        *s |= b;
                        new = true;
                    }
                }
            }
            at += region.len();
        }
        new
    }
}
