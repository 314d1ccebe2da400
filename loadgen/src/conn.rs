//! One connection's life: ask the schedule for the next request, run it, record
//! it if it falls in the measured phase. Many of these run on each engine thread.

use std::rc::Rc;

use crate::deadline::Watchdog;
use crate::exchange::{Conn, Ended, exchange};
use crate::schedule::{Next, Pacer};
use crate::worker::Worker;

pub async fn run(w: Rc<Worker>, index: u32) {
    let mut conn = Conn::default();
    let mut watchdog = Watchdog::new();
    let mut pacer = Pacer::new();
    let run_end = w.shared.run_end;
    loop {
        let slot = match w.scheduler.next(index, &mut pacer).await {
            Next::Go(slot) => slot,
            Next::Idle(until) => {
                // Fewer connections in this stage: really close this one, so servers
                // that hold a process per connection (prefork) see the drop.
                conn.close();
                pacer.until(until).await;
                continue;
            }
            Next::Stop => break,
        };
        match exchange(&w.shared, &mut conn, &mut watchdog, &slot).await {
            Ended::Abandoned => break,
            // A response that came in after the end of the run is not counted, so
            // the measured window is exact (the watchdog only has 1 ms resolution).
            Ended::Done { end, .. } if run_end.is_some_and(|e| end > e) => break,
            Ended::Done { outcome, transfer, end } => {
                if slot.measured {
                    w.stats.borrow_mut().record(slot.stage, &outcome, &transfer, end);
                }
            }
        }
    }
}
