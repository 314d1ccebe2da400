//! A client of the direct loop as the statistics see it — what lane.rs's `Lane` is
//! to the task loop —: its request in flight (the schedule's slot, its URL, what it
//! moved, its times, its deadline and its one retry) and its tally. An HTTP/1.1
//! client (direct.rs) has one, as does each stream slot of an HTTP/2 connection
//! (direct_h2.rs): they differ in how a request travels, not in how it begins, ends
//! and counts, which is here once, by the rules of rules.rs.

use std::time::Instant;

use super::arrival;
use super::context::ThreadContext;
use super::lane::Tally;
use super::rules::{self, Attempt, Cause, Deadline, Verdict};
use crate::protocol::capture::Captures;
use crate::schedule::{Next, Slot};
use crate::stats::{Outcome, Sample, Transfer};

pub(super) struct DirectLane {
    /// The request in flight; None between requests and once stopped.
    pub slot: Option<Slot>,
    pub url: usize,
    pub t: Transfer,
    /// The request's one retry on a new connection is unused (rules.rs, `Attempt`).
    pub may_retry: bool,
    /// The current attempt's start: the request's, or its retry's.
    pub connect_from: Instant,
    pub connected_at: Instant,
    pub connect_us: u64,
    pub written_at: Instant,
    pub first_byte: Option<Instant>,
    pub deadline: Deadline,
    pub stopped: bool,
    tally: Tally,
}

impl DirectLane {
    pub fn new(now: Instant) -> DirectLane {
        DirectLane {
            slot: None,
            url: 0,
            t: Transfer::default(),
            may_retry: true,
            connect_from: now,
            connected_at: now,
            connect_us: 0,
            written_at: now,
            first_byte: None,
            deadline: Deadline { at: now, run_end: false },
            stopped: false,
            tally: Tally::default(),
        }
    }

    /// Takes the next request of client `index` from the schedule (a closed loop
    /// without stages: a request at once, or the end); false: the client stopped.
    pub fn begin(&mut self, ctx: &ThreadContext, index: u32, h2: bool) -> bool {
        let Next::Go(slot) = ctx.scheduler.next_closed(index) else {
            self.stop(ctx);
            return false;
        };
        self.deadline = Deadline::of(slot.start, ctx.cfg.timeout, ctx.run_end);
        self.url = ctx.picker.pick();
        self.t = Transfer { h2, ..Transfer::default() };
        self.may_retry = true;
        self.connect_from = slot.start;
        self.slot = Some(slot);
        true
    }

    /// An attempt on a connection already open: no connect to pay.
    pub fn reuse(&mut self) {
        self.connect_us = 0;
        self.connected_at = self.slot.as_ref().map_or(self.connect_from, |s| s.start);
    }

    /// The attempt's connection is open (its TLS handshake done) at `now`.
    pub fn opened(&mut self, now: Instant) {
        self.connected_at = now;
        self.connect_us = now.saturating_duration_since(self.connect_from).as_micros() as u64;
        self.t.connections_opened += 1;
    }

    /// The deadline of the request in flight; None when there is none.
    pub fn due(&self) -> Option<Instant> {
        self.slot.as_ref().filter(|_| !self.stopped).map(|_| self.deadline.at)
    }

    /// The request in flight ran past its deadline at `now`: Some(true) if that is
    /// the run's end (it is cut off: `cut_off`), Some(false) for a timeout.
    pub fn overdue(&self, now: Instant) -> Option<bool> {
        self.due().filter(|&at| now >= at).map(|_| self.deadline.run_end)
    }

    /// The request in flight failed with `cause`, on a connection a retry is for or
    /// not (`retry_conn`), nothing of its response in yet or some (`nothing_yet`):
    /// its outcome, or None — rules.rs says to try it again on a new connection, now.
    pub fn failed(&mut self, cause: Cause, retry_conn: bool, nothing_yet: bool) -> Option<Outcome> {
        match rules::judge(cause, Attempt { may_retry: retry_conn && self.may_retry, nothing_yet }) {
            Verdict::Retry => {
                self.may_retry = false;
                self.connect_from = Instant::now();
                None
            }
            Verdict::Failed(failure) => Some(rules::failed(&mut self.t, failure)),
        }
    }

    /// The request in flight got a whole response with `status`, its last bytes landed
    /// at `now`.
    pub fn completed(&self, status: u16, now: Instant) -> Outcome {
        let slot = self.slot.as_ref().expect("a request in flight");
        let (first_byte, end) = arrival::bounded(self.written_at, self.first_byte, now);
        Outcome::Completed(Sample::timed(status, slot.intended, slot.start, end, self.connect_us, self.written_at,
                                         first_byte, self.connected_at))
    }

    /// The request in flight ended at `now` with `outcome` (`captures`: its response's
    /// --count-header values): recorded, true; or answered after the run's end (not
    /// counted, in flight at the end), false: the client stopped.
    pub fn record(&mut self, ctx: &ThreadContext, outcome: &Outcome, now: Instant, captures: &Captures) -> bool {
        let slot = self.slot.take().expect("a request in flight");
        if self.tally.ended(ctx, &slot, self.url, outcome, &self.t, now, Some(captures)) {
            return true;
        }
        self.stop(ctx);
        false
    }

    /// The request in flight is cut off by the run's end: in flight at the end; the
    /// client stopped.
    pub fn cut_off(&mut self, ctx: &ThreadContext) {
        let slot = self.slot.take().expect("a request in flight");
        self.tally.in_flight(ctx, &slot);
        self.stop(ctx);
    }

    /// The client stops (once): it is added to the client statistics.
    fn stop(&mut self, ctx: &ThreadContext) {
        if !self.stopped {
            self.stopped = true;
            self.tally.finish(ctx);
        }
    }
}
