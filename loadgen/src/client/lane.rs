//! One client connection as the statistics see it: runs requests on its
//! connection, records the measured ones, and remembers whether the server
//! answered it at all during the measured phase (stats/clients.rs says why).
//! Closed/open-loop connections (conn.rs) own one lane; page-mode visitors
//! (page.rs) own several, and so does each visit (visit.rs). With --http2 a lane is one stream slot of a shared
//! connection (h2.rs): a client of its own, the connection shared.

use std::rc::Rc;
use std::time::Instant;

use super::context::ThreadContext;
use super::deadline::Watchdog;
use super::exchange::{self, Conn, Ended};
use super::h2::{self, H2Conn, StreamSlot};
use super::rules;
use crate::protocol::capture::Captures;
use crate::schedule::Slot;
use crate::stats::{Outcome, Transfer};

/// What a lane sends its requests on: a connection of its own (HTTP/1.1,
/// FastCGI) or a stream slot on a shared HTTP/2 connection. A type parameter
/// rather than an enum: each kind of lane's request future is sized for its own
/// transport (the HTTP/2 one is several times the HTTP/1.1 one, and every
/// connection's task holds it), with no allocation per request.
pub trait Transport {
    #[allow(async_fn_in_trait)] // single-threaded runtimes: no Send bound wanted
    async fn exchange(&mut self, ctx: &ThreadContext, watchdog: &mut Watchdog, slot: &Slot, url: usize) -> Ended;
    fn close(&mut self);
    /// --count-header values of the last response.
    fn captures(&self) -> Option<&Captures>;
}

impl Transport for Conn {
    async fn exchange(&mut self, ctx: &ThreadContext, watchdog: &mut Watchdog, slot: &Slot, url: usize) -> Ended {
        exchange::exchange(ctx, self, watchdog, slot, &ctx.cfg.request_bytes[url]).await
    }
    fn close(&mut self) {
        Conn::close(self);
    }
    fn captures(&self) -> Option<&Captures> {
        Some(Conn::captures(self))
    }
}

impl Transport for StreamSlot {
    async fn exchange(&mut self, ctx: &ThreadContext, watchdog: &mut Watchdog, slot: &Slot, url: usize) -> Ended {
        h2::exchange(ctx, self, watchdog, slot, url).await
    }
    fn close(&mut self) {
        self.shared.close();
    }
    fn captures(&self) -> Option<&Captures> {
        Some(&self.captures)
    }
}

pub struct Lane<T> {
    transport: T,
    watchdog: Watchdog,
    tally: Tally,
}

/// What the statistics keep of one client connection across its requests, and how
/// each request is recorded: a lane's, and a direct-loop client's (direct.rs).
#[derive(Default)]
pub struct Tally {
    /// A request of this client ended in, or was in flight at the end of, the measured phase.
    took_part: bool,
    /// Complete responses that arrived during the measured phase.
    responses: u64,
}

impl Tally {
    /// A request that ended at `end` (not after the run's end) with `outcome`.
    /// `captures`: the response's --count-header values, if its reader has them.
    #[allow(clippy::too_many_arguments)]
    fn record(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize, outcome: &Outcome, transfer: &Transfer,
              end: Instant, captures: Option<&Captures>) {
        if let Some(live) = &ctx.live {
            live.record(slot.measured, outcome);
        }
        ctx.ended.set(ctx.ended.get() + 1);
        let completed = matches!(outcome, Outcome::Completed(_));
        if end >= ctx.measure_start {
            self.took_part = true;
            self.responses += u64::from(completed);
        }
        if slot.measured {
            let mut stats = ctx.stats.borrow_mut();
            stats.record(slot.stage, url, outcome, transfer, end);
            if completed
                && !ctx.watch.is_empty()
                && let Some(captures) = captures
            {
                stats.headers.record(captures);
            }
        }
    }

    /// A request that ended at `end` with `outcome`: recorded, true; or, answered after
    /// the run's end (rules.rs, `counted`), in flight at the end, false: the client
    /// must stop.
    #[allow(clippy::too_many_arguments)]
    pub fn ended(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize, outcome: &Outcome, transfer: &Transfer,
                 end: Instant, captures: Option<&Captures>) -> bool {
        if !rules::counted(end, ctx.run_end) {
            self.in_flight(ctx, slot);
            return false;
        }
        self.record(ctx, slot, url, outcome, transfer, end, captures);
        true
    }

    /// A request still unanswered when the run ended (or answered after it): counted
    /// in `in_flight_at_end`. The client must stop.
    pub fn in_flight(&mut self, ctx: &ThreadContext, slot: &Slot) {
        // Only a run with an end can cut a request off.
        let run_end = ctx.run_end.unwrap_or_else(Instant::now);
        let origin = slot.intended.unwrap_or(slot.start);
        ctx.stats.borrow_mut().clients.in_flight(run_end.saturating_duration_since(origin).as_micros() as u64);
        self.took_part = true;
    }

    /// Adds this client to the client statistics; call once, when it stops.
    pub fn finish(&self, ctx: &ThreadContext) {
        ctx.stats.borrow_mut().clients.connection(self.took_part, self.responses);
    }

    /// Takes in what `other` (a connection of the same client) did.
    pub fn absorb(&mut self, other: &Tally) {
        self.took_part |= other.took_part;
        self.responses += other.responses;
    }
}

/// How one request on a lane ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    /// A full response (any status) that ended at `end`.
    Completed { end: Instant, status: u16 },
    Failed(Instant),
    /// Still unanswered when the run ended (or answered after it): counted in
    /// `in_flight_at_end`. The lane must stop.
    InFlight,
}

impl Lane<Conn> {
    pub fn new(ctx: &ThreadContext) -> Lane<Conn> {
        Lane { transport: Conn::new(ctx), watchdog: Watchdog::new(), tally: Tally::default() }
    }
}

impl Lane<StreamSlot> {
    /// A stream slot on the HTTP/2 connection `shared`.
    pub fn on(ctx: &ThreadContext, shared: Rc<H2Conn>) -> Lane<StreamSlot> {
        let transport = StreamSlot::new(ctx, shared);
        Lane { transport, watchdog: Watchdog::new(), tally: Tally::default() }
    }
}

impl<T: Transport> Lane<T> {
    pub fn close(&mut self) {
        self.transport.close();
    }

    /// Sends request `url` for `slot` and records what happened.
    pub async fn send(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize) -> Fate {
        let ended = self.transport.exchange(ctx, &mut self.watchdog, slot, url).await;
        self.settle(ctx, slot, url, ended)
    }

    /// Records how request `url` for `slot` ended (`url` out of the URL table: a request
    /// counted in the run's figures but in no row of `per_url`).
    fn settle(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize, ended: Ended) -> Fate {
        let (outcome, transfer, end) = match ended {
            Ended::Done { outcome, transfer, end } => (outcome, transfer, end),
            Ended::Abandoned => {
                self.tally.in_flight(ctx, slot);
                return Fate::InFlight;
            }
        };
        // A response that came in after the end of the run is not counted (the
        // watchdog only has 1 ms resolution).
        if !self.tally.ended(ctx, slot, url, &outcome, &transfer, end, self.transport.captures()) {
            return Fate::InFlight;
        }
        match outcome {
            Outcome::Completed(sample) => Fate::Completed { end, status: sample.status },
            Outcome::Failed(_) => Fate::Failed(end),
        }
    }

    /// Adds this lane to the client statistics; call once, when it stops.
    pub fn finish(&self, ctx: &ThreadContext) {
        self.tally.finish(ctx);
    }

    /// --count-header (and a visit's) header values of the last response.
    pub fn captures(&self) -> Option<&Captures> {
        self.transport.captures()
    }

    /// What this lane's requests did for the client statistics: a visit's lanes are
    /// counted as the one client that visitor is (client/visit.rs).
    pub fn tally(&self) -> &Tally {
        &self.tally
    }
}

impl Lane<Conn> {
    /// Sends `request` (whole, formatted by the caller: a visit's, with its cookies) as
    /// request `url` of the run, and records what happened.
    pub async fn send_bytes(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize, request: &[u8]) -> Fate {
        let ended = exchange::exchange(ctx, &mut self.transport, &mut self.watchdog, slot, request).await;
        self.settle(ctx, slot, url, ended)
    }
}

#[cfg(test)]
mod tests {
    /// The future of one HTTP/1.1 request is what every connection's task holds and
    /// touches per request: 1,072 bytes before https and HTTP/2 (0.6). With the TLS
    /// handshake and the h2 exchange inline it was 5,248 and cost ~10 % more client
    /// CPU per keep-alive request on nginx (bench/engine-vs-wrk --baseline); the
    /// handshake is boxed now (connect.rs) and HTTP/2 lanes are another type
    /// (`Transport`). The connect is boxed too (0.8: 1,408 → 944). This keeps it so.
    #[test]
    fn the_request_future_stays_small() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let _guard = rt.enter();
        let cfg = std::sync::Arc::new(crate::config::from_words(&["-c", "1", "http://127.0.0.1:1/"]).unwrap());
        let plan = std::sync::Arc::new(crate::schedule::Plan::new(&cfg, std::time::Instant::now()));
        let ctx = super::ThreadContext::new(cfg, plan, 0, None);
        let mut lane = super::Lane::new(&ctx);
        let slot = crate::schedule::Slot { start: std::time::Instant::now(), intended: None, measured: true, stage: 0 };
        let size = std::mem::size_of_val(&lane.send(&ctx, &slot, 0));
        assert!(size <= 1024, "Lane::send's future is {size} bytes");
        // A connection's whole task (bench/engine-memory: 10,000 of them within 25 MB):
        // 2,184 bytes in 0.7.0; 928 with the connect and the io_uring stream boxed, the lane
        // built inside the task (conn.rs) and the watchdog's future not an async fn
        // (deadline.rs): each had kept something twice or for nothing.
        let ctx = std::rc::Rc::new(ctx);
        let size = std::mem::size_of_val(&super::super::conn::run(ctx, 0));
        assert!(size <= 960, "a connection's future is {size} bytes");
    }
}
