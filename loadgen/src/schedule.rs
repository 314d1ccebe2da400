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
use crate::stats::Sends;

/// Open loop: a measured request whose slot was already due by more than this when
/// a connection became free for it counts as sent late (`requests.sent_late`): it
/// waited for a free connection. A connection holding a slot stays busy up to ~1 ms
/// past its request (tokio's timer resolution), so less than that is the
/// generator's slack. A connection that was free and waiting is never late: its
/// timer waking late is the engine's delay (not counted; latency then counts from
/// the actual send, see below).
pub const SENT_LATE_AFTER: Duration = Duration::from_millis(1);

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
    /// Open loop: nanoseconds between two requests of the whole run (1/R).
    period_ns: f64,
    /// Open loop: first global slot due at or after the end of warm-up.
    first_measured_slot: u64,
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
        let (period_ns, first_measured_slot) = match cfg.rate {
            Some(rate) => (1e9 / rate, (cfg.warmup.as_secs_f64() * rate).ceil() as u64),
            None => (0.0, 0),
        };
        Plan {
            t0,
            measure_start,
            run_end: cfg.duration.map(|d| measure_start + d),
            budget: cfg.requests.map(Budget::new),
            rate: cfg.rate,
            threads: cfg.threads,
            stages,
            period_ns,
            first_measured_slot,
        }
    }

    /// Open loop: when global slot `i` is due. The one formula the scheduler and
    /// the due count both use, so the count matches what was handed out exactly.
    fn due_at(&self, i: u64) -> Instant {
        self.t0 + Duration::from_nanos((i as f64 * self.period_ns) as u64)
    }

    /// Open loop: how many slots fall due before `t` (the first slot due at or
    /// after it). `due_at` is monotonic in `i`, so the estimate from the rate is
    /// only corrected by a step or two of rounding.
    fn slots_due_before(&self, t: Instant) -> u64 {
        let ns = t.saturating_duration_since(self.t0).as_nanos() as f64;
        let mut i = (ns / self.period_ns).ceil() as u64;
        while i > 0 && self.due_at(i - 1) >= t {
            i -= 1;
        }
        while self.due_at(i) < t {
            i += 1;
        }
        i
    }

    /// Open loop: the measured slots that fell due inside the measured phase —
    /// slots `i ≥ first_measured_slot` due before the end of `-d`, at most the `-n`
    /// budget (with `-n` alone: exactly the budget). These are exactly the slots the
    /// scheduler hands out if a connection is free for each: every one of them is
    /// either sent or counted as not sent. None in closed loop.
    pub fn measured_due(&self) -> Option<u64> {
        self.rate?;
        let mut due = self.budget.as_ref().map_or(u64::MAX, |b| b.limit);
        if let Some(end) = self.run_end {
            due = due.min(self.slots_due_before(end).saturating_sub(self.first_measured_slot));
        }
        Some(due)
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
    /// Made on first use: a closed-loop connection never waits on it, and 10,000 of
    /// them would each hold a timer they never arm.
    sleep: Option<Pin<Box<Sleep>>>,
}

impl Default for Pacer {
    fn default() -> Self {
        Self::new()
    }
}

impl Pacer {
    pub fn new() -> Self {
        Pacer { sleep: None }
    }

    pub async fn until(&mut self, t: Instant) {
        let sleep = self.sleep.get_or_insert_with(|| Box::pin(tokio::time::sleep_until(t.into())));
        sleep.as_mut().reset(t.into());
        sleep.as_mut().await;
    }
}

/// One thread's view of the plan.
pub struct Scheduler {
    plan: Arc<Plan>,
    thread: u32,
    /// Open loop: this thread's next slot number (its j-th slot is global i = j·T + k).
    next_slot: Cell<u64>,
    /// Open loop: the measured slots this thread handed to a connection (and so
    /// sent), and how many of them waited for one. A claimed slot that ends in
    /// `Stop` (its connection woke after the end) is not counted: it was never sent.
    sends: Cell<Sends>,
}

impl Scheduler {
    pub fn new(plan: Arc<Plan>, thread: u32) -> Scheduler {
        Scheduler { plan, thread, next_slot: Cell::new(0), sends: Cell::new(Sends::default()) }
    }

    /// Open loop: what this thread did with its measured slots (zeros in closed loop).
    pub fn sends(&self) -> Sends {
        self.sends.get()
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

    /// Now and its stage, if connection `conn` is to make a request now; else what
    /// it does instead (stop at the run's end, idle outside its stage).
    fn now_in_stage(&self, conn: u32) -> Result<(Instant, usize), Next> {
        let now = Instant::now();
        if self.plan.run_end.is_some_and(|end| now >= end) {
            return Err(Next::Stop);
        }
        let stage = self.plan.stage_at(now);
        if !self.active(conn, stage) {
            return Err(self.idle(stage));
        }
        Ok((now, stage))
    }

    /// The next request of connection `conn` in a closed loop (no --rate), at once:
    /// a closed loop never waits for its next request (client/direct.rs calls it as
    /// it is; `next` for every other loop).
    pub fn next_closed(&self, conn: u32) -> Next {
        let plan = &*self.plan;
        let (now, stage) = match self.now_in_stage(conn) {
            Ok(at) => at,
            Err(next) => return next,
        };
        let measured = now >= plan.measure_start;
        if measured && plan.budget.as_ref().is_some_and(|b| !b.claim()) {
            return Next::Stop;
        }
        Next::Go(Slot { start: now, intended: None, measured, stage })
    }

    pub async fn next(&self, conn: u32, pacer: &mut Pacer) -> Next {
        let plan = &*self.plan;
        if plan.rate.is_none() {
            return self.next_closed(conn);
        }
        // The slot's stage is its due time's, below.
        let (now, _) = match self.now_in_stage(conn) {
            Ok(at) => at,
            Err(next) => return next,
        };

        let j = self.next_slot.get();
        self.next_slot.set(j + 1);
        let i = j * u64::from(plan.threads) + u64::from(self.thread);
        if let Some(b) = &plan.budget
            && i >= plan.first_measured_slot + b.limit
        {
            b.mark_exhausted();
            return Next::Stop;
        }
        let intended = plan.due_at(i);
        if plan.run_end.is_some_and(|end| intended >= end) {
            return Next::Stop;
        }
        // A slot that is already due waited for a free connection: its latency counts
        // from when it was due. A slot that is not due yet has a free connection
        // waiting for it; the tokio timer wakes up to ~1 ms late, and that lateness is
        // the generator's, not the server's, so latency then counts from the actual
        // send (otherwise every open-loop latency would carry up to 1 ms of timer slack).
        let (start, origin, late) = if intended > now {
            pacer.until(intended).await;
            let start = Instant::now();
            // Woken (up to ~1 ms late) after the end: sending now would only add a
            // request that is in flight at the end without ever having had a chance.
            if plan.run_end.is_some_and(|end| start >= end) {
                return Next::Stop;
            }
            (start, start, false)
        } else {
            (now, intended, now - intended > SENT_LATE_AFTER)
        };
        let measured = i >= plan.first_measured_slot;
        if measured {
            // Counted here, where the slot is handed out: the connection begins its
            // connect or write at once (client/exchange.rs).
            let mut sends = self.sends.get();
            sends.sent += 1;
            sends.late += u64::from(late);
            self.sends.set(sends);
        }
        Next::Go(Slot { start, intended: Some(origin), measured, stage: plan.stage_at(intended) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::from_words;

    fn plan(words: &[&str]) -> Plan {
        let mut all = words.to_vec();
        all.push("http://127.0.0.1:1/");
        Plan::new(&from_words(&all).expect("valid arguments"), Instant::now())
    }

    /// The due count by brute force: every slot, with the scheduler's own tests.
    fn due_by_walking(p: &Plan) -> u64 {
        let limit = p.budget.as_ref().map_or(u64::MAX, |b| b.limit);
        let end = p.run_end.expect("a -d run");
        (0..)
            .take_while(|&i| p.due_at(i) < end)
            .filter(|&i| i >= p.first_measured_slot && i < p.first_measured_slot.saturating_add(limit))
            .count() as u64
    }

    #[test]
    fn due_count_of_a_duration() {
        // Slot 1000 is due exactly at the end: not inside the phase.
        assert_eq!(plan(&["--rate", "1000", "-d", "1s"]).measured_due(), Some(1000));
        assert_eq!(plan(&["--rate", "2000", "-d", "2s"]).measured_due(), Some(4000));
        // Slots 0, 333, 667 ms.
        assert_eq!(plan(&["--rate", "3", "-d", "1s"]).measured_due(), Some(3));
        assert_eq!(plan(&["--rate", "0.5", "-d", "1s"]).measured_due(), Some(1));
    }

    #[test]
    fn due_count_leaves_out_the_warmup() {
        // Warm-up slots 0..249; measured 250..1249 (slot 1250 is due at the end).
        assert_eq!(plan(&["--rate", "1000", "-d", "1s", "--warmup", "250ms"]).measured_due(), Some(1000));
        // Rate 3, warm-up 500 ms: the first measured slot is ceil(1.5) = 2 (667 ms);
        // slots 2, 3, 4 are due before 1.5 s, slot 5 (1667 ms) after.
        let p = plan(&["--rate", "3", "-d", "1s", "--warmup", "500ms"]);
        assert_eq!(p.first_measured_slot, 2);
        assert_eq!(p.measured_due(), Some(3));
    }

    #[test]
    fn due_count_of_a_budget() {
        assert_eq!(plan(&["--rate", "1000", "-n", "500"]).measured_due(), Some(500));
        assert_eq!(plan(&["--rate", "1000", "-n", "500", "--warmup", "1s"]).measured_due(), Some(500));
        // -n and -d: whichever ends first.
        assert_eq!(plan(&["--rate", "1000", "-n", "500", "-d", "100ms"]).measured_due(), Some(100));
        assert_eq!(plan(&["--rate", "1000", "-n", "50", "-d", "1s", "--warmup", "30ms"]).measured_due(), Some(50));
        // Closed loop has no schedule.
        assert_eq!(plan(&["-n", "500"]).measured_due(), None);
        assert_eq!(plan(&["-d", "1s"]).measured_due(), None);
    }

    #[test]
    fn due_count_matches_the_slots_one_by_one() {
        // Rates whose period is not a whole number of ns: rounding at both ends.
        for rate in ["7", "999.9", "3000", "12345.6", "33333.3"] {
            for warmup in ["0s", "1ms", "333ms", "1s"] {
                for duration in ["1ms", "10ms", "777ms", "1s"] {
                    let p = plan(&["--rate", rate, "-d", duration, "--warmup", warmup]);
                    let what = format!("--rate {rate} -d {duration} --warmup {warmup}");
                    assert_eq!(p.measured_due(), Some(due_by_walking(&p)), "{what}");
                    let p = plan(&["--rate", rate, "-d", duration, "--warmup", warmup, "-n", "20"]);
                    assert_eq!(p.measured_due(), Some(due_by_walking(&p)), "{what} -n 20");
                }
            }
        }
    }

    #[test]
    fn every_due_slot_is_sent_or_not() {
        // One connection that never waits for a response: it is free for every slot,
        // except that the first 20 ms have passed before it asks (a connection busy
        // meanwhile), so those slots go out late. Every due slot is handed out,
        // but the last, if the timer woke after the end: claimed, then Stop, not sent.
        let runtime = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        let p = Arc::new(plan(&["--rate", "1000", "-d", "60ms"]));
        let due = p.measured_due().unwrap();
        assert_eq!(due, 60);
        let scheduler = Scheduler::new(p, 0);
        let mut late_go = 0;
        runtime.block_on(async {
            std::thread::sleep(Duration::from_millis(20));
            let mut pacer = Pacer::new();
            while let Next::Go(slot) = scheduler.next(0, &mut pacer).await {
                assert!(slot.measured);
                late_go += u64::from(slot.intended.is_some_and(|due| slot.start - due > SENT_LATE_AFTER));
            }
        });
        let sends = scheduler.sends();
        assert!(sends.sent == due || sends.sent + 1 == due, "sent {} of {due}", sends.sent);
        // Slots 0..=18 at least were more than 1 ms overdue when the connection first
        // asked (more if the sleep or a later timer overran).
        assert!(sends.late >= 19, "late {}", sends.late);
        // Late slots were already due when claimed: their latency counts from then.
        assert_eq!(late_go, sends.late);
    }
}
