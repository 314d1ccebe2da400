//! `--progress`: while the load runs, one JSON object per line on stderr, about
//! once a second and never more often, so the lab's terminal can show the running
//! cell's rate and errors live:
//!
//! `{"progress":{"phase":"measure","elapsed_s":3.0,"completed":1234,"failed":0,"non_2xx":0,"per_s":410.5}}`
//!
//! Counts and `elapsed_s` are since the phase (warm-up or measured) began;
//! `per_s` is the completions since the previous line of the phase (or its
//! start) over that interval. A thread of its own samples the engine threads'
//! live counters (stats/live.rs): it sleeps between lines, so it adds one wake-up
//! a second to the run and nothing per request. The keys are a contract with the
//! lab's Python side: add keys if needed, never rename.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::stats::live::{self, LiveCounters, PhaseCounts};

/// The shortest time between two lines.
const INTERVAL: Duration = Duration::from_secs(1);

#[derive(Serialize, Debug)]
struct Line {
    progress: Progress,
}

#[derive(Serialize, Debug)]
struct Progress {
    phase: &'static str,
    elapsed_s: f64,
    completed: u64,
    failed: u64,
    non_2xx: u64,
    per_s: f64,
}

/// The running reporter; `finish` stops it.
pub struct Reporter {
    stop: Arc<AtomicBool>,
    handle: JoinHandle<()>,
}

/// Starts the reporter for a run whose load begins at `t0` and whose measured
/// phase begins at `measure_start` (the same instant without warm-up).
pub fn start(threads: Vec<Arc<LiveCounters>>, t0: Instant, measure_start: Instant) -> std::io::Result<Reporter> {
    let stop = Arc::new(AtomicBool::new(false));
    let flag = stop.clone();
    let handle = std::thread::Builder::new()
        .name("progress".into())
        .spawn(move || report(&threads, t0, measure_start, &flag))?;
    Ok(Reporter { stop, handle })
}

impl Reporter {
    /// Stops the reporter (at once, without a last partial line) and waits for it.
    pub fn finish(self) {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.thread().unpark();
        let _ = self.handle.join();
    }
}

/// One phase as the reporter follows it.
struct Phase {
    measured: bool,
    start: Instant,
    /// When the previous line of this phase was written (or the phase began), and
    /// the counts then.
    last: (Instant, PhaseCounts),
    next_line: Instant,
}

impl Phase {
    fn new(measured: bool, start: Instant) -> Phase {
        Phase { measured, start, last: (start, PhaseCounts::default()), next_line: start + INTERVAL }
    }
}

fn report(threads: &[Arc<LiveCounters>], t0: Instant, measure_start: Instant, stop: &AtomicBool) {
    let mut phase = if measure_start > t0 { Phase::new(false, t0) } else { Phase::new(true, measure_start) };
    loop {
        let wake = if phase.measured { phase.next_line } else { phase.next_line.min(measure_start) };
        if !sleep_until(wake, stop) {
            return;
        }
        let now = Instant::now();
        if !phase.measured && now >= measure_start {
            // The warm-up is over: its last partial second is not reported.
            phase = Phase::new(true, measure_start);
            continue;
        }
        let counts = live::sum(threads.iter().map(|t| &**t), phase.measured);
        write_line(&line(&phase, now, counts));
        phase.last = (now, counts);
        // Never two lines less than INTERVAL apart, even after a late wake-up.
        phase.next_line = (phase.next_line + INTERVAL).max(now + INTERVAL);
    }
}

fn line(phase: &Phase, now: Instant, counts: PhaseCounts) -> Line {
    let (since, before) = phase.last;
    let interval_s = now.saturating_duration_since(since).as_secs_f64();
    let new = counts.completed.saturating_sub(before.completed);
    let per_s = if interval_s > 0.0 { new as f64 / interval_s } else { 0.0 };
    Line {
        progress: Progress {
            phase: if phase.measured { "measure" } else { "warmup" },
            elapsed_s: round(now.saturating_duration_since(phase.start).as_secs_f64(), 1000.0),
            completed: counts.completed,
            failed: counts.failed,
            non_2xx: counts.non_2xx,
            per_s: round(per_s, 10.0),
        },
    }
}

fn round(value: f64, scale: f64) -> f64 {
    (value * scale).round() / scale
}

/// Sleeps until `t`; false when asked to stop meanwhile.
fn sleep_until(t: Instant, stop: &AtomicBool) -> bool {
    loop {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        let now = Instant::now();
        if now >= t {
            return true;
        }
        std::thread::park_timeout(t - now);
    }
}

/// One write per line, so lines never interleave with anything else on stderr; a
/// closed stderr is ignored (progress is a courtesy, the result is on stdout).
fn write_line(line: &Line) {
    let mut text = serde_json::to_string(line).expect("a progress line serialises");
    text.push('\n');
    let _ = std::io::stderr().lock().write_all(text.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_shape_and_rate() {
        let start = Instant::now();
        let mut phase = Phase::new(true, start);
        phase.last = (start + Duration::from_secs(2), PhaseCounts { completed: 1000, failed: 1, non_2xx: 2 });
        let now = start + Duration::from_millis(3000);
        let counts = PhaseCounts { completed: 1410, failed: 3, non_2xx: 5 };
        let text = serde_json::to_string(&line(&phase, now, counts)).unwrap();
        assert_eq!(
            text,
            r#"{"progress":{"phase":"measure","elapsed_s":3.0,"completed":1410,"failed":3,"non_2xx":5,"per_s":410.0}}"#
        );
        let warmup = Phase::new(false, start);
        let text = serde_json::to_string(&line(&warmup, start + Duration::from_millis(1500), counts)).unwrap();
        assert!(text.contains(r#""phase":"warmup","elapsed_s":1.5"#), "{text}");
        assert!(text.contains(r#""per_s":940.0"#), "{text}");
    }
}
