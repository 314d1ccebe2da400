//! The stream slots of the direct loop's HTTP/2 connections: each a closed-loop
//! client of its own (direct_lane.rs), its request begun from the schedule, sent
//! when its connection has room (a stream, or the HTTP/1.1 fallback's turn), taken
//! off the connection, and ended — completed, retried or failed as rules.rs says.

use std::time::Instant;

use super::{H2Loop, State};
use crate::client::context::ThreadContext;
use crate::client::direct_lane::DirectLane;
use crate::client::rules::Cause;
use crate::protocol::capture::Captures;
use crate::stats::Outcome;

/// One stream slot: a closed-loop client whose requests go on its connection.
pub(super) struct StreamSlot {
    /// Its connection: the schedule's index, where its requests go.
    pub(super) home: usize,
    /// The connection its request is on: `home`, or where `home`'s old connection
    /// drains after a GOAWAY (`set_aside`).
    pub(super) on: usize,
    /// Its request in flight and its tally.
    pub(super) lane: DirectLane,
    /// The response's status; 0 until its head came.
    pub(super) status: u16,
    pub(super) captures: Captures,
}

impl StreamSlot {
    pub(super) fn new(ctx: &ThreadContext, home: usize, now: Instant) -> StreamSlot {
        StreamSlot { home, on: home, lane: DirectLane::new(now), status: 0, captures: Captures::new(ctx.watch.clone()) }
    }
}

impl H2Loop<'_> {
    /// Slot `k`'s next request, or its end when the schedule says stop.
    pub(super) fn begin(&mut self, k: usize) {
        let s = &mut self.slots[k];
        // Its connection's index: stages would count connections (the task loop's too).
        if !s.lane.begin(self.ctx, s.home as u32, true) {
            return self.stop(k);
        }
        if s.captures.active() {
            s.captures.clear();
        }
        self.attempt(k);
    }

    /// Sends slot `k`'s request now if its connection has room, else queues it there.
    pub(super) fn attempt(&mut self, k: usize) {
        let s = &mut self.slots[k];
        s.status = 0;
        s.lane.first_byte = None;
        // Until it turns out to open the connection (`handshaken`).
        s.lane.reuse();
        let ci = s.home;
        s.on = ci;
        let c = &mut self.conns[ci];
        c.waiting.push_back(k);
        match &c.state {
            State::Closed => {
                if !self.to_open.contains(&ci) {
                    self.to_open.push(ci);
                }
            }
            State::H2(_) | State::Http1 { .. } => self.pump(ci),
            State::Connecting | State::Handshaking => {}
        }
    }

    /// Starts the requests waiting on `ci` that it has room for now.
    pub(super) fn pump(&mut self, ci: usize) {
        let ctx = self.ctx;
        let now = Instant::now();
        loop {
            let c = &mut self.conns[ci];
            let Some(&k) = c.waiting.front() else { return };
            let s = &mut self.slots[k];
            match &mut c.state {
                State::H2(h2) if h2.can_open() => {
                    let id = h2.request(&ctx.cfg.h2_requests[s.lane.url].blocks);
                    c.in_flight.push((id, k));
                }
                // After a GOAWAY: a new connection for the waiting at once, the old one
                // aside until its last streams are done (as the h2 crate reconnects).
                // (At the start of the next turn: not while its bytes are being read.)
                State::H2(h2) if h2.going_away() => {
                    if !self.aside.contains(&ci) {
                        self.aside.push(ci);
                    }
                    return;
                }
                State::Http1 { reader, current: current @ None, .. } => {
                    *current = Some(k);
                    reader.start(ctx.head_request);
                    s.lane.t.h2 = false;
                    let request = &ctx.cfg.request_bytes[s.lane.url];
                    c.tls.as_mut().expect("https").queue(request);
                    c.sent += request.len() as u64;
                    c.in_flight.push((0, k));
                }
                _ => return,
            }
            c.waiting.pop_front();
            s.lane.written_at = now;
            self.mark(ci);
        }
    }

    /// Takes slot `k` off its connection (its stream cancelled, its place in line given
    /// up; an opener's connection in progress closed, a half-done HTTP/1.1 exchange too).
    pub(super) fn withdraw(&mut self, k: usize) {
        let ci = self.slots[k].on;
        let c = &mut self.conns[ci];
        c.waiting.retain(|&w| w != k);
        if let Some(i) = c.in_flight.iter().position(|&(_, w)| w == k) {
            let (id, _) = c.in_flight.swap_remove(i);
            match &mut c.state {
                State::H2(h2) => {
                    h2.cancel(id);
                    self.mark(ci);
                    // Its stream is free for one waiting.
                    self.pump(ci);
                }
                State::Http1 { current, .. } => {
                    *current = None;
                    self.close(ci);
                }
                _ => {}
            }
        }
        let c = &mut self.conns[ci];
        if c.opener == Some(k) {
            c.opener = None;
            if matches!(c.state, State::Connecting | State::Handshaking) {
                self.close(ci);
            }
        }
        let c = &self.conns[ci];
        if matches!(c.state, State::Closed) && !c.waiting.is_empty() && !self.to_open.contains(&ci) {
            self.to_open.push(ci);
        }
        // A connection set aside whose last request left (retried, cut by the run's end).
        self.drained(ci);
    }

    /// Slot `k`'s response is whole.
    pub(super) fn complete(&mut self, k: usize, now: Instant) {
        let ci = self.slots[k].on;
        self.conns[ci].in_flight.retain(|&(_, w)| w != k);
        let s = &self.slots[k];
        let outcome = s.lane.completed(s.status, now);
        self.record(k, outcome, now);
        self.drained(ci);
    }

    /// Slot `k`'s attempt ended with `cause`, on a connection a retry is for or not
    /// (`retry_conn`): retried on a new connection (once), or failed, as rules.rs says.
    pub(super) fn judge(&mut self, k: usize, cause: Cause, retry_conn: bool) {
        let s = &mut self.slots[k];
        let nothing_yet = s.status == 0 && s.lane.first_byte.is_none();
        let Some(outcome) = s.lane.failed(cause, retry_conn, nothing_yet) else {
            self.withdraw(k);
            return self.attempt(k);
        };
        self.withdraw(k);
        let ci = self.slots[k].on;
        self.record(k, outcome, Instant::now());
        self.drained(ci);
    }

    /// Slot `k`'s request ended: recorded (with the bytes its connection moved since the
    /// last request ended) and the next one queued, or the slot stopped.
    fn record(&mut self, k: usize, outcome: Outcome, now: Instant) {
        let s = &mut self.slots[k];
        let c = &mut self.conns[s.on];
        s.lane.t.received += std::mem::take(&mut c.received);
        s.lane.t.sent += std::mem::take(&mut c.sent);
        if s.lane.record(self.ctx, &outcome, now, &s.captures) {
            self.todo.push(k);
        } else {
            self.stop(k);
        }
    }

    /// Slot `k` stopped (its lane says why); the connection's last slot closes it.
    pub(super) fn stop(&mut self, k: usize) {
        self.running -= 1;
        let ci = self.slots[k].home;
        let first = ci * self.per;
        if self.slots[first..first + self.per].iter().all(|s| s.lane.stopped) {
            self.close(ci);
        }
    }
}
