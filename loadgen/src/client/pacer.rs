//! Coalesced waits: when responses come often, the direct loop sleeps a moment on a timer
//! before it blocks on its sockets, and takes what landed meanwhile in one turn.
//!
//! Why: on loopback a server whose next response finds the engine asleep in
//! `epoll_wait` pays for waking it inside its own `write` — about once a request when
//! the engine is faster than the server, 2–3 µs each in this VM's slower state, a cost
//! a client on another host would not put on it (bench/RESULTS.md, "Who pays for a
//! client's wake-ups"). A timed sleep wakes the engine from its own core instead, a NIC's
//! interrupt moderation in small. It pays only when a sleep finds more than one event:
//! a timer costs this VM 12–20 µs of CPU. So it sleeps only while events come fast
//! enough (`BATCH` a sleep, from the rate of the last window) and while what a sleep
//! holds back is a small share of the requests out (`SHARE`: the server keeps the rest
//! to work on; an event brings at least one response); otherwise the loop blocks as
//! before.
//! Responses are timed when they landed (arrival.rs), not when the sleep ended.
//!
//! Off unless STACKBENCH_LOAD_WAIT=pace: on nginx alone it gave 1.04–1.07× the
//! throughput at 12 bytes over HTTPS/1.1 and −1 to +8 % on HTTP/2, but in the lab's
//! `static` scenario it cost the engine 10–30 % more CPU a request in most cells with no
//! gain in the servers' throughput, which pushed the fastest cells towards the
//! generator's limit (bench/RESULTS.md, "Coalesced waits"). The gate needs tuning first.

use std::time::{Duration, Instant};

/// The A/B switch: `pace` sleeps as above; anything else (the default) never does.
pub const WAIT_ENV: &str = "STACKBENCH_LOAD_WAIT";

/// The sleep asked for (with 1 ns of timer slack it takes ~33 µs here).
const ASK: Duration = Duration::from_micros(20);
/// Events one sleep is expected to find before sleeping is worth its timer.
const BATCH: f64 = 1.5;
/// The events a sleep is expected to hold back, at most this share of the requests out.
const SHARE: f64 = 0.25;
/// The rate is re-read over windows at least this long.
const WINDOW: Duration = Duration::from_millis(2);

/// Whether this run's direct loops may sleep (read once).
pub(super) fn pacing() -> bool {
    static ON: std::sync::LazyLock<bool> = std::sync::LazyLock::new(|| std::env::var(WAIT_ENV).as_deref() == Ok("pace"));
    *ON
}

pub(super) struct Pacer {
    window_start: Instant,
    window_events: u32,
    /// Events a µs, over the last whole window.
    rate: f64,
    /// What a sleep took, smoothed (its first guess: this VM's).
    took_us: f64,
}

impl Pacer {
    /// The loop's pacer, if this run paces: a loop that does not keeps no rate (no
    /// clock read a turn) and never sleeps.
    pub(super) fn for_run(now: Instant) -> Option<Pacer> {
        pacing().then(|| {
            // The default 50 µs of slack would stretch every sleep by up to that much.
            // SAFETY: a plain prctl on this thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
            Pacer::new(now)
        })
    }

    fn new(now: Instant) -> Pacer {
        Pacer { window_start: now, window_events: 0, rate: 0.0, took_us: 33.0 }
    }

    /// Counts a turn's `events`, and re-reads the rate when a window has passed.
    pub(super) fn saw(&mut self, events: u32, now: Instant) {
        self.window_events += events;
        let elapsed = now.saturating_duration_since(self.window_start);
        if elapsed >= WINDOW {
            self.rate = f64::from(self.window_events) / elapsed.as_micros() as f64;
            self.window_events = 0;
            self.window_start = now;
        }
    }

    /// Whether to sleep before blocking, with `running` clients (HTTP/1.1) or stream
    /// slots (HTTP/2): the requests out, or about to be.
    pub(super) fn worth_it(&self, running: usize) -> bool {
        let expected = self.rate * self.took_us;
        expected >= BATCH && expected <= SHARE * running as f64
    }

    /// One timed sleep, and what it took.
    pub(super) fn sleep(&mut self) {
        let t = Instant::now();
        std::thread::sleep(ASK);
        let took = t.elapsed().as_micros() as f64;
        self.took_us = 0.875 * self.took_us + 0.125 * took;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer() -> Pacer {
        Pacer::new(Instant::now())
    }

    #[test]
    fn sleeps_only_when_a_sleep_finds_several_events_and_few_of_the_requests_out() {
        let mut p = pacer();
        let t0 = p.window_start;
        assert!(!p.worth_it(1000), "no rate yet");
        // 0.1 events a µs: a 33 µs sleep finds 3.3.
        p.saw(200, t0 + Duration::from_millis(2));
        assert!((p.rate - 0.1).abs() < 1e-9);
        assert!(p.worth_it(64));
        assert!(!p.worth_it(8), "3.3 is more than a quarter of 8 requests");
        // 0.02 events a µs (a 150 KB body every 50 µs): 0.66 a sleep.
        p.saw(40, t0 + Duration::from_millis(4));
        assert!(!p.worth_it(64));
    }

    #[test]
    fn the_rate_waits_for_a_whole_window() {
        let mut p = pacer();
        let t0 = p.window_start;
        p.saw(500, t0 + Duration::from_micros(500));
        assert_eq!(p.rate, 0.0);
        p.saw(0, t0 + Duration::from_millis(5));
        assert!((p.rate - 0.1).abs() < 1e-9);
    }
}
