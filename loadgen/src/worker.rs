//! An engine thread: its own single-threaded tokio runtime running its share of
//! the connections — wrk's one-event-loop-per-thread model. Nothing is shared
//! between threads on the hot path except the `-n` counter; statistics are
//! per thread and merged at the end.

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::task::LocalSet;

use crate::config::Config;
use crate::cpu::{self, CpuTimes};
use crate::exchange::{SCRATCH_BYTES, Shared};
use crate::schedule::{Plan, Scheduler};
use crate::stats::{self, ThreadStats};
use crate::urls::{Picker, Shape};

/// Everything the connections of one thread share.
pub struct Worker {
    pub shared: Shared,
    pub scheduler: Scheduler,
    pub picker: Picker,
    pub stats: RefCell<ThreadStats>,
}

/// What a thread hands back when it is done.
pub struct ThreadReport {
    pub stats: ThreadStats,
    /// CPU time over wall time of the measured phase, 0..1; None if it never started.
    pub busy: Option<f64>,
}

pub fn spawn(cfg: Arc<Config>, plan: Arc<Plan>, thread: u32) -> std::io::Result<JoinHandle<Result<ThreadReport, String>>> {
    std::thread::Builder::new()
        .name(format!("engine-{thread}"))
        .spawn(move || run(&cfg, plan, thread))
}

fn run(cfg: &Config, plan: Arc<Plan>, thread: u32) -> Result<ThreadReport, String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the event loop of engine thread {thread}: {e}"))?;
    let measure_start = plan.measure_start;
    let shape = stats::Shape {
        stages: plan.stages.len(),
        open_loop: plan.rate.is_some(),
        urls: if cfg.per_url() { cfg.urls.len() } else { 0 },
        headers: cfg.count_headers.len(),
        pages: matches!(cfg.shape, Shape::Page { .. }),
    };
    let worker = Rc::new(Worker {
        shared: Shared {
            endpoint: cfg.endpoint.clone(),
            connect: cfg.connect,
            protocol: cfg.protocol,
            requests: cfg.request_bytes.clone().into_boxed_slice(),
            keepalive: cfg.keepalive,
            keepalive_requests: cfg.keepalive_requests,
            head_request: cfg.is_head(),
            timeout: cfg.timeout,
            measure_start,
            run_end: plan.run_end,
            read_rate: cfg.read_rate,
            watch: Rc::from(cfg.count_headers.clone()),
            scratch: RefCell::new(vec![0u8; SCRATCH_BYTES].into_boxed_slice()),
        },
        stats: RefCell::new(ThreadStats::new(shape, measure_start)),
        picker: Picker::new(&cfg.urls, thread),
        scheduler: Scheduler::new(plan, thread),
    });
    let connections = worker.scheduler.max_connections(cfg.connections);

    let local = LocalSet::new();
    let (start, end) = local.block_on(&runtime, async {
        // Samples this thread's CPU time when measuring starts (it runs on this thread).
        let sampler = tokio::task::spawn_local(async move {
            tokio::time::sleep_until(measure_start.into()).await;
            (Instant::now(), cpu::this_thread())
        });
        let tasks: Vec<_> = (0..connections)
            .map(|i| match cfg.shape {
                Shape::Page { conns } => tokio::task::spawn_local(crate::page::run(worker.clone(), i, conns)),
                _ => tokio::task::spawn_local(crate::conn::run(worker.clone(), i)),
            })
            .collect();
        for task in tasks {
            if let Err(e) = task.await
                && e.is_panic()
            {
                std::panic::resume_unwind(e.into_panic());
            }
        }
        let end = (Instant::now(), cpu::this_thread());
        let start = if sampler.is_finished() { sampler.await.ok() } else { None };
        (start, end)
    });
    let busy = start.map(|(t, c): (Instant, CpuTimes)| {
        let wall_us = (end.0 - t).as_micros().max(1) as f64;
        (end.1.since(c).total_us() as f64 / wall_us).min(1.0)
    });
    drop(local);
    let worker = Rc::try_unwrap(worker).map_err(|_| "engine thread still has live connections".to_string())?;
    Ok(ThreadReport { stats: worker.stats.into_inner(), busy })
}
