//! When each connection sends its next request: closed loop (as soon as the
//! previous response is in, like ab and wrk) or open loop (at fixed intended
//! times, like wrk2), with warm-up, `-n` budgets and `--stages`.
//!
//! Open loop, simply and correctly: request `i` (counted across all threads) is
//! due at `t0 + i/R`; thread k owns the slots with `i % threads == k`. A connection
//! that becomes free claims the next slot of its thread and sleeps until it is due.
//! When every connection is busy, a due slot waits for the first free connection —
//! and its latency, measured from the *intended* time, keeps growing meanwhile.
//! This is what "coordinated omission" correction means: a stalled server cannot
//! hide the requests it prevented from being sent.

use std::cell::Cell;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use tokio::time::Sleep;

use crate::config::{Config, share};

/// The run's time plan, shared by all threads.
#[derive(Debug)]
pub struct Plan {
    /// Load starts (warm-up begins).
    pub t0: Instant,
    /// Counting starts.
    pub measure_start: Instant,
    /// Counting and load stop; None = until the `-n` budget is used up.
    pub run_end: Option<Instant>,
    pub budget: Option<Budget>,
    pub rate: Option<f64>,
    pub threads: u32,
    /// Empty without --stages.
    pub stages: Vec<StageWindow>,
}

#[derive(Clone, Copy, Debug)]
pub struct StageWindow {
    pub start: Instant,
    pub end: Instant,
    pub connections: u32,
}

/// `-n`: exactly `limit` measured requests across all connections.
#[derive(Debug)]
pub struct Budget {
    pub limit: u64,
    claimed: AtomicU64,
    exhausted: AtomicBool,
}

impl Budget {
    pub fn new(limit: u64) -> Self {
        Budget { limit, claimed: AtomicU64::new(0), exhausted: AtomicBool::new(false) }
    }

    /// Claims one request slot; false once all `limit` slots are taken.
    fn claim(&self) -> bool {
        // Relaxed: the counter only hands out distinct numbers; nothing else is
        // published through it.
        if self.claimed.fetch_add(1, Ordering::Relaxed) < self.limit {
            true
        } else {
            self.mark_exhausted();
            false
        }
    }

    fn mark_exhausted(&self) {
        self.exhausted.store(true, Ordering::Relaxed);
    }

    /// Whether the run stopped because the budget was used up.
    pub fn exhausted(&self) -> bool {
        self.exhausted.load(Ordering::Relaxed)
    }
}

impl Plan {
    pub fn new(cfg: &Config, t0: Instant) -> Plan {
        let measure_start = t0 + cfg.warmup;
        let mut stages = Vec::with_capacity(cfg.stages.len());
        let mut at = measure_start;
        for s in &cfg.stages {
            stages.push(StageWindow { start: at, end: at + s.duration, connections: s.connections });
            at += s.duration;
        }
        Plan {
            t0,
            measure_start,
            run_end: cfg.duration.map(|d| measure_start + d),
            budget: cfg.requests.map(Budget::new),
            rate: cfg.rate,
            threads: cfg.threads,
            stages,
        }
    }

    /// Stage in force at `t` (warm-up runs with the first stage's connections).
    pub fn stage_at(&self, t: Instant) -> usize {
        self.stages.iter().position(|s| t < s.end).unwrap_or(self.stages.len().saturating_sub(1))
    }

    pub fn budget_exhausted(&self) -> bool {
        self.budget.as_ref().is_some_and(Budget::exhausted)
    }
}

/// What a connection should do next.
#[derive(Debug)]
pub enum Next {
    Go(Slot),
    /// Not needed in this stage: close the connection and ask again at that time.
    Idle(Instant),
    Stop,
}

/// One request to send.
#[derive(Clone, Copy, Debug)]
pub struct Slot {
    /// When the request actually starts (connect or write).
    pub start: Instant,
    /// Open loop: when it was due, if it had to wait for a free connection (else the
    /// actual start). Latency is measured from here.
    pub intended: Option<Instant>,
    /// Counted (false during warm-up).
    pub measured: bool,
    pub stage: usize,
}

/// A reusable sleep for one connection (one timer entry, reset, never re-created).
pub struct Pacer {
    sleep: Pin<Box<Sleep>>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Self {
        Pacer { sleep: Box::pin(tokio::time::sleep(Duration::ZERO)) }
    }

    pub async fn until(&mut self, t: Instant) {
        self.sleep.as_mut().reset(t.into());
        self.sleep.as_mut().await;
    }
}

/// One thread's view of the plan.
pub struct Scheduler {
    plan: Arc<Plan>,
    thread: u32,
    /// Open loop: this thread's next slot number (its j-th slot is global i = j·T + k).
    next_slot: Cell<u64>,
    /// Open loop: nanoseconds between two requests of the whole run (1/R).
    period_ns: f64,
    /// Open loop: first global slot due at or after the end of warm-up.
    first_measured_slot: u64,
}

impl Scheduler {
    pub fn new(plan: Arc<Plan>, thread: u32) -> Scheduler {
        let (period_ns, first_measured_slot) = match plan.rate {
            Some(rate) => {
                let warmup_s = (plan.measure_start - plan.t0).as_secs_f64();
                (1e9 / rate, (warmup_s * rate).ceil() as u64)
            }
            None => (0.0, 0),
        };
        Scheduler { plan, thread, next_slot: Cell::new(0), period_ns, first_measured_slot }
    }

    /// Connections this thread runs at most at once.
    pub fn max_connections(&self, total: u32) -> u32 {
        share(total, self.plan.threads, self.thread)
    }

    fn active(&self, conn: u32, stage: usize) -> bool {
        match self.plan.stages.get(stage) {
            Some(s) => conn < share(s.connections, self.plan.threads, self.thread),
            None => true,
        }
    }

    /// Idle until the next stage starts, or stop after the last one.
    fn idle(&self, stage: usize) -> Next {
        match self.plan.stages.get(stage + 1) {
            Some(next) => Next::Idle(next.start),
            None => Next::Stop,
        }
    }

    pub async fn next(&self, conn: u32, pacer: &mut Pacer) -> Next {
        let plan = &*self.plan;
        let now = Instant::now();
        if plan.run_end.is_some_and(|end| now >= end) {
            return Next::Stop;
        }
        let stage = plan.stage_at(now);
        if !self.active(conn, stage) {
            return self.idle(stage);
        }
        if plan.rate.is_none() {
            let measured = now >= plan.measure_start;
            if measured && plan.budget.as_ref().is_some_and(|b| !b.claim()) {
                return Next::Stop;
            }
            return Next::Go(Slot { start: now, intended: None, measured, stage });
        }

        let j = self.next_slot.get();
        self.next_slot.set(j + 1);
        let i = j * u64::from(plan.threads) + u64::from(self.thread);
        if let Some(b) = &plan.budget
            && i >= self.first_measured_slot + b.limit
        {
            b.mark_exhausted();
            return Next::Stop;
        }
        let intended = plan.t0 + Duration::from_nanos((i as f64 * self.period_ns) as u64);
        if plan.run_end.is_some_and(|end| intended >= end) {
            return Next::Stop;
        }
        // A slot that is already due waited for a free connection: its latency counts
        // from when it was due. A slot that is not due yet has a free connection
        // waiting for it; the tokio timer wakes up to ~1 ms late, and that lateness is
        // the generator's, not the server's, so latency then counts from the actual
        // send (otherwise every open-loop latency would carry up to 1 ms of timer slack).
        let (start, origin) = if intended > now {
            pacer.until(intended).await;
            let start = Instant::now();
            // Woken (up to ~1 ms late) after the end: sending now would only add a
            // request that is in flight at the end without ever having had a chance.
            if plan.run_end.is_some_and(|end| start >= end) {
                return Next::Stop;
            }
            (start, start)
        } else {
            (now, intended)
        };
        let measured = i >= self.first_measured_slot;
        Next::Go(Slot { start, intended: Some(origin), measured, stage: plan.stage_at(intended) })
    }
}
