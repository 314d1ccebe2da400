//! One connection's life in closed and open loop: ask the schedule for the next
//! request, pick its URL, run it on the lane. Many of these run on each thread.

use std::rc::Rc;

use super::context::ThreadContext;
use super::h2::H2Conn;
use super::join::join_all;
use super::lane::{Fate, Lane, Transport};
use crate::schedule::{Next, Pacer};

pub async fn run(ctx: Rc<ThreadContext>, index: u32) {
    if ctx.cfg.http2() {
        // `--streams` clients share connection `index`: each asks the schedule for
        // its own requests, under the connection's index (stages count connections).
        let shared = H2Conn::new(1); // an HTTP/1.1 fallback: this client connection
        let lanes = (0..ctx.cfg.streams)
            .map(|_| {
                let shared = shared.clone();
                run_lane(ctx.clone(), index, move |ctx: &ThreadContext| Lane::on(ctx, shared))
            })
            .collect();
        join_all(lanes).await;
    } else {
        run_lane(ctx.clone(), index, Lane::new).await;
    }
}

/// `make` builds the lane inside the task: a lane passed by value would be kept
/// twice in the future (as the argument and as the local it is moved into), ~250
/// bytes more in each of 10,000 connections' tasks (bench/engine-memory).
async fn run_lane<T: Transport>(ctx: Rc<ThreadContext>, index: u32, make: impl FnOnce(&ThreadContext) -> Lane<T>) {
    let mut lane = make(&ctx);
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
