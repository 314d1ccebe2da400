//! An engine thread: its own single-threaded tokio runtime running its share of
//! the connections — wrk's one-event-loop-per-thread model. Nothing is shared
//! between threads on the hot path except the `-n` counter; statistics are
//! per thread and merged at the end.

use std::rc::Rc;
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

use tokio::task::LocalSet;

use super::context::ThreadContext;
use super::{conn, direct, direct_h2, direct_loop, page, visit};
use crate::config::Config;
use crate::cpu::{self, CpuTimes};
use crate::schedule::Plan;
use crate::stats::ThreadStats;
use crate::stats::live::LiveCounters;
use crate::uring::{IoMode, Ring};
use crate::urls::Shape;

/// How a run's connections are driven, decided once for the run (`for_run`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventLoop {
    /// client/direct.rs: one epoll loop a thread, each connection a state machine.
    Direct,
    /// A tokio task a connection (conn.rs), page-mode visitor (page.rs) or visitor slot
    /// (visit.rs): every kind of run.
    Tasks,
}

impl EventLoop {
    /// The direct loop where it carries the run (direct_loop::eligible), else the tasks.
    pub fn for_run(cfg: &Config, plan: &Plan) -> EventLoop {
        if direct_loop::eligible(cfg, plan) { EventLoop::Direct } else { EventLoop::Tasks }
    }

    pub fn name(self) -> &'static str {
        match self {
            EventLoop::Direct => "direct",
            EventLoop::Tasks => "tasks",
        }
    }
}

/// What a thread hands back when it is done.
pub struct ThreadReport {
    pub stats: ThreadStats,
    /// CPU time over wall time of the measured phase, 0..1; None if it never started.
    pub busy: Option<f64>,
}

/// Starts engine thread `thread`; `live` are its --progress counters, if any.
pub fn spawn(
    cfg: Arc<Config>,
    plan: Arc<Plan>,
    thread: u32,
    event_loop: EventLoop,
    live: Option<Arc<LiveCounters>>,
) -> std::io::Result<JoinHandle<Result<ThreadReport, String>>> {
    std::thread::Builder::new()
        .name(format!("engine-{thread}"))
        .spawn(move || run(cfg, plan, thread, event_loop, live))
}

fn run(cfg: Arc<Config>, plan: Arc<Plan>, thread: u32, event_loop: EventLoop, live: Option<Arc<LiveCounters>>) -> Result<ThreadReport, String> {
    if event_loop == EventLoop::Direct {
        let ctx = ThreadContext::new(cfg, plan, thread, live);
        let connections = ctx.scheduler.max_connections(ctx.cfg.connections);
        let ran = if ctx.cfg.http2() { direct_h2::run(&ctx, connections) } else { direct::run(&ctx, connections) };
        let (start, end) = ran.map_err(|e| format!("engine thread {thread}: {e}"))?;
        return Ok(report(ctx, start, end));
    }
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("cannot start the event loop of engine thread {thread}: {e}"))?;
    let measure_start = plan.measure_start;
    let ctx = Rc::new(ThreadContext::new(cfg, plan, thread, live));
    let connections = ctx.scheduler.max_connections(ctx.cfg.connections);

    let local = LocalSet::new();
    let ring = ctx.cfg.io == IoMode::Uring;
    let (start, end) = local.block_on(&runtime, async {
        // --io uring: this thread's ring (inside the runtime: its fd registers with
        // it) and its driver task; the probe (run.rs) said it can be set up.
        if ring {
            let ring = Ring::start(connections, ctx.cfg.read_bytes_per_s.is_some()).map_err(|e| format!("engine thread {thread}: io_uring: {e}"))?;
            tokio::task::spawn_local(ring.drive());
        }
        // Samples this thread's CPU time when measuring starts (it runs on this thread).
        let sampler = tokio::task::spawn_local(async move {
            tokio::time::sleep_until(measure_start.into()).await;
            (Instant::now(), cpu::this_thread())
        });
        let tasks: Vec<_> = (0..connections)
            .map(|i| match ctx.cfg.shape {
                Shape::Page { conns } => tokio::task::spawn_local(page::run(ctx.clone(), i, conns)),
                Shape::Visit { conns } => tokio::task::spawn_local(visit::run(ctx.clone(), i, conns)),
                Shape::Single | Shape::Mix => tokio::task::spawn_local(conn::run(ctx.clone(), i)),
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
        Ok::<_, String>((start, end))
    })?;
    drop(local);
    // Every connection is gone: the ring cancels what is left and closes (inside
    // the runtime, whose I/O driver its fd is registered with).
    {
        let _inside = runtime.enter();
        Ring::stop();
    }
    let ctx = Rc::try_unwrap(ctx).map_err(|_| "engine thread still has live connections".to_string())?;
    Ok(report(ctx, start, end))
}

/// The thread's statistics, and how busy it was from the start of counting to its end.
fn report(ctx: ThreadContext, start: Option<(Instant, CpuTimes)>, end: (Instant, CpuTimes)) -> ThreadReport {
    let busy = start.map(|(t, c)| {
        let wall_us = (end.0 - t).as_micros().max(1) as f64;
        (end.1.since(c).total_us() as f64 / wall_us).min(1.0)
    });
    let sends = ctx.scheduler.sends();
    let mut stats = ctx.stats.into_inner();
    stats.sends = sends;
    ThreadReport { stats, busy }
}
