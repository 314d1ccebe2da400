//! `--read-rate`: a client that reads its responses no faster than R bytes/s per
//! connection, like a visitor on a slow link. Reads are paced in slices of ~10 ms
//! worth of bytes (so the socket stays nearly full rather than emptied in bursts),
//! and a connection gets no credit for time it spent idle between requests.
//!
//! What this holds on the server depends on the kernel's buffers: see the README
//! ("Network: visitors who are not on localhost") and docs/servers.md, "Slow clients".

use std::pin::Pin;
use std::time::{Duration, Instant};

use tokio::time::Sleep;

/// Pacing granularity: one read per this much time's worth of bytes.
const SLICE: Duration = Duration::from_millis(10);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReadRate {
    pub bytes_per_s: u64,
}

impl ReadRate {
    /// Bytes per read: 10 ms worth, at least 1, at most the scratch buffer.
    pub fn slice_bytes(self, buffer: usize) -> usize {
        let per_slice = u128::from(self.bytes_per_s) * SLICE.as_nanos() / 1_000_000_000;
        (per_slice as usize).clamp(1, buffer)
    }

    fn time_for(self, bytes: usize) -> Duration {
        let nanos = bytes as u128 * 1_000_000_000 / u128::from(self.bytes_per_s);
        Duration::from_nanos(nanos.min(u128::from(u64::MAX)) as u64)
    }
}

/// One connection's pacing state (only built when --read-rate is given).
pub struct SlowReader {
    rate: ReadRate,
    /// The next read may not start before this.
    next: Instant,
    sleep: Pin<Box<Sleep>>,
}

impl SlowReader {
    pub fn new(rate: ReadRate) -> Self {
        SlowReader { rate, next: Instant::now(), sleep: Box::pin(tokio::time::sleep(Duration::ZERO)) }
    }

    /// Bytes per read at this connection's rate (see `ReadRate::slice_bytes`).
    pub fn slice_bytes(&self, buffer: usize) -> usize {
        self.rate.slice_bytes(buffer)
    }

    /// A new response: idle time between requests is not saved up as a burst.
    pub fn begin(&mut self, now: Instant) {
        self.next = self.next.max(now);
    }

    /// Waits until the next read is allowed.
    pub async fn wait(&mut self) {
        if self.next > Instant::now() {
            self.sleep.as_mut().reset(self.next.into());
            self.sleep.as_mut().await;
        }
    }

    /// `bytes` were read at `now`: the next read waits for them to have "arrived" at
    /// the rate. Counted from `now` when the data came late (the server was slow),
    /// so time spent waiting for the server is not saved up as a burst either.
    pub fn consumed(&mut self, bytes: usize, now: Instant) {
        self.next = self.next.max(now) + self.rate.time_for(bytes);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_and_times() {
        let r = ReadRate { bytes_per_s: 100_000 };
        assert_eq!(r.slice_bytes(65536), 1000);
        assert_eq!(ReadRate { bytes_per_s: 10 }.slice_bytes(65536), 1);
        assert_eq!(ReadRate { bytes_per_s: u64::MAX }.slice_bytes(65536), 65536);
        assert_eq!(r.time_for(50_000), Duration::from_millis(500));
    }

    #[test]
    fn paces_reads() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        rt.block_on(async {
            let mut s = SlowReader::new(ReadRate { bytes_per_s: 10_000 });
            let start = Instant::now();
            s.begin(start);
            for _ in 0..5 {
                s.wait().await;
                s.consumed(100, Instant::now()); // 10 ms each
            }
            s.wait().await;
            let took = start.elapsed();
            assert!(took >= Duration::from_millis(50) && took < Duration::from_millis(200), "{took:?}");
        });
    }
}
