//! Runs the load: starts the engine threads, samples process CPU over the measured
//! phase, joins and merges. Returns measurements only; reporting is elsewhere.

use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use crate::clock;
use crate::config::{Config, share};
use crate::cpu::{self, CpuTimes};
use crate::error::Error;
use crate::progress;
use crate::schedule::Plan;
use crate::stats::ThreadStats;
use crate::stats::live::LiveCounters;
use crate::client::worker::{self, EventLoop};
use crate::uring::{self, IoMode};

pub struct Measured {
    /// All threads merged.
    pub stats: ThreadStats,
    /// Wall clock at the start of the measured phase, µs since the Unix epoch.
    pub started_unix_us: u64,
    /// Wall clock when the engine began (after --start-at's wait), µs since the epoch.
    pub began_unix_us: u64,
    /// Wall time of the measured phase.
    pub duration: Duration,
    /// Nominal length of each stage (empty without --stages).
    pub stage_durations: Vec<Duration>,
    /// Process CPU over the measured phase.
    pub cpu: CpuTimes,
    /// Per engine thread: busy fraction over the measured phase.
    pub busy: Vec<Option<f64>>,
    /// Open loop: measured slots that fell due in the measured phase, from the
    /// schedule (exact); None in closed loop.
    pub due: Option<u64>,
    /// The I/O path the connections ran on.
    pub io: IoMode,
    /// --io uring on a machine where io_uring cannot be set up: why the run used epoll.
    pub io_fallback: Option<String>,
    /// How the connections were driven (client/worker.rs).
    pub event_loop: EventLoop,
}

pub fn run(cfg: &Config) -> Result<Measured, Error> {
    let began_unix_us = cfg.start_at_unix_us.map_or_else(clock::now_unix_us, clock::wait_until);
    let wall_start = SystemTime::now();
    let t0 = Instant::now();
    let plan = Arc::new(Plan::new(cfg, t0));
    // io_uring asked for but unavailable (kernel.io_uring_disabled, ENOSYS, EPERM
    // from a seccomp filter...): the run goes on, on epoll, and says so.
    let mut shared_cfg = cfg.clone();
    let io_fallback = match cfg.io {
        IoMode::Uring => {
            // Thread 0 gets the most connections (config::share).
            let per_thread = share(u32::try_from(cfg.sockets()).unwrap_or(u32::MAX), cfg.threads, 0);
            uring::refusal(per_thread).or_else(|| uring::probe().err())
        }
        IoMode::Epoll => None,
    };
    if io_fallback.is_some() {
        shared_cfg.io = IoMode::Epoll;
    }
    let io = shared_cfg.io;
    let event_loop = EventLoop::for_run(&shared_cfg, &plan);
    let shared_cfg = Arc::new(shared_cfg);

    let live: Vec<Arc<LiveCounters>> =
        if cfg.progress { (0..cfg.threads).map(|_| Arc::default()).collect() } else { Vec::new() };
    let mut handles = Vec::with_capacity(cfg.threads as usize);
    for k in 0..cfg.threads {
        let handle = worker::spawn(shared_cfg.clone(), plan.clone(), k, event_loop, live.get(k as usize).cloned())
            .map_err(|e| Error::Fatal(format!("cannot start engine thread {k}: {e}")))?;
        handles.push(handle);
    }
    let reporter = if live.is_empty() {
        None
    } else {
        let started = progress::start(live, plan.t0, plan.measure_start);
        Some(started.map_err(|e| Error::Fatal(format!("cannot start the progress reporter: {e}")))?)
    };

    // The main thread only sleeps: process CPU between these two samples is the
    // engine threads' work during the measured phase (plus their short teardown,
    // and the progress reporter's one wake-up a second).
    let wait = plan.measure_start.saturating_duration_since(Instant::now());
    std::thread::sleep(wait);
    let cpu_start = cpu::process();

    let joined: Vec<_> = handles.into_iter().map(|h| h.join()).collect();
    let cpu = cpu::process().since(cpu_start);
    // Stopped before anything else is written: no progress line after the result
    // or after an error line.
    if let Some(reporter) = reporter {
        reporter.finish();
    }
    let mut reports = Vec::with_capacity(joined.len());
    for (k, joined) in joined.into_iter().enumerate() {
        match joined {
            Ok(Ok(report)) => reports.push(report),
            Ok(Err(message)) => return Err(Error::Fatal(message)),
            Err(_) => return Err(Error::Fatal(format!("engine thread {k} panicked (see above)"))),
        }
    }

    let busy = reports.iter().map(|r| r.busy).collect();
    let mut reports = reports.into_iter();
    let mut stats = reports.next().expect("at least one thread").stats;
    for r in reports {
        stats.merge(&r.stats);
    }

    // -d: the measured window. -n: until the last request ended. Both: whichever first.
    let end = match (plan.run_end, plan.budget_exhausted()) {
        (Some(run_end), false) => run_end,
        (Some(run_end), true) => stats.last_event.map_or(run_end, |last| last.min(run_end)),
        (None, _) => stats.last_event.unwrap_or(plan.measure_start),
    };
    let duration = end.saturating_duration_since(plan.measure_start);
    let started_unix_us = (wall_start + cfg.warmup)
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);

    Ok(Measured {
        stats,
        started_unix_us,
        began_unix_us,
        duration,
        stage_durations: cfg.stages.iter().map(|s| s.duration).collect(),
        cpu,
        busy,
        due: plan.measured_due(),
        io,
        io_fallback,
        event_loop,
    })
}
