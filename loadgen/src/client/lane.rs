//! One client connection as the statistics see it: runs requests on its
//! connection, records the measured ones, and remembers whether the server
//! answered it at all during the measured phase (stats/clients.rs says why).
//! Closed/open-loop connections (conn.rs) own one lane; page-mode visitors
//! (page.rs) own several.

use std::time::Instant;

use super::context::ThreadContext;
use super::deadline::Watchdog;
use super::exchange::{Conn, Ended, exchange};
use crate::schedule::Slot;
use crate::stats::Outcome;

pub struct Lane {
    conn: Conn,
    watchdog: Watchdog,
    /// A request of this lane ended in, or was in flight at the end of, the measured phase.
    took_part: bool,
    /// Complete responses that arrived during the measured phase.
    responses: u64,
}

/// How one request on a lane ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fate {
    Completed(Instant),
    Failed(Instant),
    /// Still unanswered when the run ended (or answered after it): counted in
    /// `in_flight_at_end`. The lane must stop.
    InFlight,
}

impl Lane {
    pub fn new(ctx: &ThreadContext) -> Lane {
        Lane { conn: Conn::new(ctx), watchdog: Watchdog::new(), took_part: false, responses: 0 }
    }

    pub fn close(&mut self) {
        self.conn.close();
    }

    /// Sends request `url` for `slot` and records what happened.
    pub async fn send(&mut self, ctx: &ThreadContext, slot: &Slot, url: usize) -> Fate {
        let ended = exchange(ctx, &mut self.conn, &mut self.watchdog, slot, url).await;
        let (outcome, transfer, end) = match ended {
            // A response that came in after the end of the run is not counted, so the
            // measured window is exact (the watchdog only has 1 ms resolution).
            Ended::Done { outcome, transfer, end } if ctx.run_end.is_none_or(|e| end <= e) => (outcome, transfer, end),
            _ => {
                // Only a run with an end can cut a request off.
                let run_end = ctx.run_end.unwrap_or_else(Instant::now);
                let origin = slot.intended.unwrap_or(slot.start);
                ctx.stats.borrow_mut().clients.in_flight(run_end.saturating_duration_since(origin).as_micros() as u64);
                self.took_part = true;
                return Fate::InFlight;
            }
        };
        if let Some(live) = &ctx.live {
            live.record(slot.measured, &outcome);
        }
        let completed = matches!(outcome, Outcome::Completed(_));
        if end >= ctx.measure_start {
            self.took_part = true;
            self.responses += u64::from(completed);
        }
        if slot.measured {
            let mut stats = ctx.stats.borrow_mut();
            stats.record(slot.stage, url, &outcome, &transfer, end);
            if completed && !ctx.watch.is_empty() {
                stats.headers.record(self.conn.captures());
            }
        }
        if completed { Fate::Completed(end) } else { Fate::Failed(end) }
    }

    /// Adds this lane to the client statistics; call once, when it stops.
    pub fn finish(&self, ctx: &ThreadContext) {
        ctx.stats.borrow_mut().clients.connection(self.took_part, self.responses);
    }
}
