//! Coalesced waits: when responses come often, the direct loop sleeps a moment on a timer
//! before it blocks on its sockets, and takes what landed meanwhile in one turn.
//!
//! Why: on loopback a server whose next response finds the engine asleep in
//! `epoll_wait` pays for waking it inside its own `write` — about once a request when
//! the engine is faster than the server, 2–3 µs each in this VM's slower state, a cost
//! a client on another host would not put on it (bench/RESULTS.md, "Who pays for a
//! client's wake-ups"). A timed sleep wakes the engine from its own core instead, a NIC's
//! interrupt moderation in small. It costs the engine a timer (12–20 µs of CPU here)
//! and pays only when a sleep finds more than one response, so the loop sleeps only
//! while, over the last window:
//! - responses ended fast enough that one sleep finds `BATCH` of them — responses, not
//!   socket events: a 150 KB body comes as many events, and counting those let slow
//!   fronts pace, which cost the engine and them (bench/RESULTS.md, "A gate on
//!   responses and on the engine's own headroom");
//! - what a sleep holds back is a small share of the requests out (`SHARE`: the server
//!   keeps the rest to work on);
//! - the engine's own thread was busy at most `BUSY` of the time: the timer is paid from
//!   its headroom, never from what keeps it off its limit, so pacing cannot turn a cell
//!   the server limits into one the engine does.
//!
//! Otherwise the loop blocks as before. Responses are timed when they landed (arrival.rs), not when the sleep ended.
//!
//! On by default where one read can carry several responses — HTTP/2 with more than
//! one stream a connection — so pacing saves the engine's reads as well as the
//! server's wake-ups: against h2load (10 streams a connection) it met h2load's
//! throughput in every round where blocking fell to 0.91×, at 0.92× the blocking
//! engine's CPU a request. Off by default where every response is its own read anyway
//! (HTTP/1.1, HTTP/2 with one stream a connection, as the lab's cells): there the timer
//! is paid with the engine's CPU (1.02–1.18× a 12-byte request) for 2–5 % of the
//! server's throughput on nginx alone and none measurable in the lab's cells, and would
//! cost the engine its margin over wrk.
//! STACKBENCH_LOAD_WAIT=pace paces every direct loop, =block none (bench/RESULTS.md,
//! "A gate on responses and on the engine's own headroom").

use std::time::{Duration, Instant};

use crate::config::Config;
use crate::cpu;
use crate::stats::Waits;

/// The A/B switch: `pace` sleeps as above on every direct loop, `block` on none;
/// anything else (the default) where one read can carry several responses.
pub const WAIT_ENV: &str = "STACKBENCH_LOAD_WAIT";

/// The sleep asked for (with 1 ns of timer slack it takes ~33 µs here).
const ASK: Duration = Duration::from_micros(20);
/// A sleep's length as the gate counts it, at most this: one sleep the scheduler
/// stretched by milliseconds must not make every later one look too long to take (the
/// length only changes when a sleep is taken).
const TOOK_AT_MOST_US: f64 = 100.0;
/// Responses one sleep is expected to find before sleeping is worth its timer.
const BATCH: f64 = 1.5;
/// The responses a sleep is expected to hold back, at most this share of the requests out.
const SHARE: f64 = 0.25;
/// The engine thread's own CPU share over the last window, at most this.
const BUSY: f64 = 0.75;
/// The rate is re-read over windows at least this long.
const WINDOW: Duration = Duration::from_millis(2);

/// Whether this run's direct loops may sleep (and so stamp their sockets): by default
/// where its connections carry several HTTP/2 streams each (Config::multiplexed). The
/// switch is read once.
pub(super) fn pacing(cfg: &Config) -> bool {
    static ASKED: std::sync::LazyLock<Option<bool>> = std::sync::LazyLock::new(|| match std::env::var(WAIT_ENV).as_deref() {
        Ok("pace") => Some(true),
        Ok("block") => Some(false),
        _ => None,
    });
    ASKED.unwrap_or_else(|| cfg.multiplexed())
}

pub(super) struct Pacer {
    window_start: Instant,
    /// The thread's requests ended, and its CPU µs, at the window's start.
    window_ended: u64,
    window_cpu_us: u64,
    /// Requests ended a µs, over the last whole window.
    rate: f64,
    /// The thread's CPU time over wall time, over the last whole window.
    busy: f64,
    /// What a sleep took, smoothed (its first guess: this VM's).
    took_us: f64,
    /// The sleeps since counting began, and what they found: the engine's result.
    waits: Waits,
}

impl Pacer {
    /// The loop's pacer, if this run paces: a loop that does not keeps no rate (no
    /// clock read a turn) and never sleeps.
    pub(super) fn for_run(now: Instant, cfg: &Config) -> Option<Pacer> {
        pacing(cfg).then(|| {
            // The default 50 µs of slack would stretch every sleep by up to that much.
            // SAFETY: a plain prctl on this thread.
            unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1, 0, 0, 0) };
            Pacer::new(now)
        })
    }

    fn new(now: Instant) -> Pacer {
        Pacer {
            window_start: now,
            window_ended: 0,
            window_cpu_us: cpu::this_thread().total_us(),
            rate: 0.0,
            busy: 1.0,
            took_us: 33.0,
            waits: Waits::default(),
        }
    }

    /// At a turn's start (the loop's own clock read), with `ended` requests ended on this
    /// thread so far: when a window has passed, re-reads the rate and the thread's CPU
    /// (one getrusage a window).
    pub(super) fn saw(&mut self, ended: u64, now: Instant) {
        if now.saturating_duration_since(self.window_start) >= WINDOW {
            self.roll(ended, cpu::this_thread().total_us(), now);
        }
    }

    fn roll(&mut self, ended: u64, cpu_us: u64, now: Instant) {
        let wall_us = now.saturating_duration_since(self.window_start).as_micros().max(1) as f64;
        self.rate = ended.saturating_sub(self.window_ended) as f64 / wall_us;
        self.busy = cpu_us.saturating_sub(self.window_cpu_us) as f64 / wall_us;
        self.window_start = now;
        self.window_ended = ended;
        self.window_cpu_us = cpu_us;
    }

    /// Whether to sleep before blocking, with `running` clients (HTTP/1.1) or stream
    /// slots (HTTP/2): the requests out, or about to be. (Slots overstate them when the
    /// server allows fewer streams, or picks HTTP/1.1: SHARE is then looser, and BUSY
    /// still bounds what the timer costs.)
    pub(super) fn worth_it(&self, running: usize) -> bool {
        let expected = self.rate * self.took_us;
        expected >= BATCH && expected <= SHARE * running as f64 && self.busy <= BUSY
    }

    /// One timed sleep, and what it took.
    pub(super) fn sleep(&mut self) {
        let t = Instant::now();
        std::thread::sleep(ASK);
        self.took(t.elapsed().as_micros() as f64);
        self.waits.sleeps += 1;
    }

    fn took(&mut self, us: f64) {
        self.took_us = 0.875 * self.took_us + 0.125 * us.min(TOOK_AT_MOST_US);
    }

    /// The `events` a sleep found when it ended.
    pub(super) fn found(&mut self, events: u32) {
        self.waits.found += u64::from(events);
    }

    /// Counting begins (the measured phase): what came before is not the result's.
    pub(super) fn count_from_here(&mut self) {
        self.waits = Waits::default();
    }

    pub(super) fn waits(&self) -> Waits {
        self.waits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pacer() -> Pacer {
        let mut p = Pacer::new(Instant::now());
        p.window_cpu_us = 0;
        p
    }

    #[test]
    fn sleeps_only_when_a_sleep_finds_several_responses_and_few_of_the_requests_out() {
        let mut p = pacer();
        let t0 = p.window_start;
        assert!(!p.worth_it(1000), "no rate yet");
        // 0.1 responses a µs (a 33 µs sleep finds 3.3), the thread half busy.
        p.roll(200, 1000, t0 + Duration::from_millis(2));
        assert!((p.rate - 0.1).abs() < 1e-9);
        assert!((p.busy - 0.5).abs() < 1e-9);
        assert!(p.worth_it(64));
        assert!(!p.worth_it(8), "3.3 is more than a quarter of 8 requests");
        // 0.02 a µs (a 150 KB body every 50 µs, however many events it came as): 0.66 a sleep.
        p.roll(240, 2000, t0 + Duration::from_millis(4));
        assert!(!p.worth_it(64));
    }

    #[test]
    fn a_busy_engine_never_pays_for_a_timer() {
        let mut p = pacer();
        let t0 = p.window_start;
        // Responses fast enough, but the thread busy 80 % of the window.
        p.roll(200, 1600, t0 + Duration::from_millis(2));
        assert!(!p.worth_it(64));
        // The next window 70 %: it may sleep again.
        p.roll(400, 3000, t0 + Duration::from_millis(4));
        assert!((p.busy - 0.7).abs() < 1e-9);
        assert!(p.worth_it(64));
    }

    #[test]
    fn a_sleep_the_scheduler_stretched_does_not_stop_the_next_ones() {
        let mut p = pacer();
        let t0 = p.window_start;
        // h2-m10: 160 stream slots (a sleep may hold back 40) at 0.07 responses a µs.
        p.roll(140, 1000, t0 + Duration::from_millis(2));
        assert!(p.worth_it(160));
        p.took(5000.0); // preempted for 5 ms
        assert!(p.took_us < 50.0, "{}", p.took_us);
        assert!(p.worth_it(160));
    }

    #[test]
    fn the_rate_waits_for_a_whole_window() {
        let mut p = pacer();
        let t0 = p.window_start;
        p.saw(500, t0 + Duration::from_micros(500));
        assert_eq!(p.rate, 0.0);
        p.roll(500, 0, t0 + Duration::from_millis(5));
        assert!((p.rate - 0.1).abs() < 1e-9);
    }

    #[test]
    fn sleeps_and_what_they_found_count_from_the_measured_phase() {
        let mut p = pacer();
        p.sleep();
        p.found(3);
        p.count_from_here();
        p.sleep();
        p.found(2);
        p.sleep();
        p.found(0);
        let w = p.waits();
        assert_eq!((w.sleeps, w.found), (2, 2));
    }
}
