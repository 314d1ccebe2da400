//! One connection's life in closed and open loop: ask the schedule for the next
//! request, pick its URL, run it on the lane. Many of these run on each thread.

use std::rc::Rc;

use super::context::ThreadContext;
use super::lane::{Fate, Lane};
use crate::schedule::{Next, Pacer};

pub async fn run(ctx: Rc<ThreadContext>, index: u32) {
    let mut lane = Lane::new(&ctx);
    let mut pacer = Pacer::new();
    loop {
        let slot = match ctx.scheduler.next(index, &mut pacer).await {
            Next::Go(slot) => slot,
            Next::Idle(until) => {
                // Fewer connections in this stage: really close this one, so servers
                // that hold a process per connection (prefork) see the drop.
                lane.close();
                pacer.until(until).await;
                continue;
            }
            Next::Stop => break,
        };
        if lane.send(&ctx, &slot, ctx.picker.pick()).await == Fate::InFlight {
            break;
        }
    }
    lane.finish(&ctx);
}
