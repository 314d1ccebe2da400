//! Page mode: each visitor (one of -c) fetches the page on its first connection,
//! then the assets over up to `--page-conns` connections in parallel (the first
//! one reused), like a browser with its 6 connections per host; then starts over.
//! Connections stay open between page views (the same visitor browsing on), so a
//! server that holds a process per connection pays for all of them.
//!
//! Page load time = page request start → last byte of the last asset. `-n`
//! counts page views; every request is also recorded per URL.

use std::cell::Cell;
use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::rc::Rc;
use std::task::Poll;
use std::time::Instant;

use super::context::ThreadContext;
use super::lane::{Fate, Lane};
use crate::schedule::{Next, Pacer, Slot};

pub async fn run(ctx: Rc<ThreadContext>, visitor: u32, conns: u32) {
    let entries = ctx.cfg.request_bytes.len();
    let mut lanes: Vec<Lane> = (0..conns.max(1)).map(|_| Lane::new(&ctx)).collect();
    let mut pacer = Pacer::new();
    loop {
        let slot = match ctx.scheduler.next(visitor, &mut pacer).await {
            Next::Go(slot) => slot,
            Next::Idle(until) => {
                lanes.iter_mut().for_each(Lane::close);
                pacer.until(until).await;
                continue;
            }
            Next::Stop => break,
        };
        let (mut ok, mut last) = match lanes[0].send(&ctx, &slot, 0).await {
            Fate::InFlight => break,
            Fate::Failed(end) => (false, end),
            Fate::Completed(end) => (true, end),
        };
        // A browser that did not get the page does not fetch its assets.
        if ok && entries > 1 {
            let next = Cell::new(1);
            let busy = lanes.len().min(entries - 1);
            let fetches = lanes[..busy].iter_mut().map(|lane| assets(&ctx, lane, &next, &slot)).collect();
            let mut in_flight = false;
            for (lane_ok, lane_last, cut) in join_all(fetches).await {
                ok &= lane_ok;
                last = last.max(lane_last);
                in_flight |= cut;
            }
            if in_flight {
                break;
            }
        }
        if slot.measured
            && let Some(pages) = &mut ctx.stats.borrow_mut().pages
        {
            pages.record(ok, last.saturating_duration_since(slot.start).as_micros() as u64);
        }
    }
    for lane in &lanes {
        lane.finish(&ctx);
    }
}

/// One lane's share of the assets: takes the next unfetched one until none is left.
/// Returns (all completed, last end, cut off by the end of the run).
async fn assets(ctx: &ThreadContext, lane: &mut Lane, next: &Cell<usize>, page: &Slot) -> (bool, Instant, bool) {
    let (mut ok, mut last) = (true, page.start);
    loop {
        let i = next.get();
        if i >= ctx.cfg.request_bytes.len() {
            return (ok, last, false);
        }
        next.set(i + 1);
        let slot = Slot { start: Instant::now(), intended: None, ..*page };
        match lane.send(ctx, &slot, i).await {
            Fate::Completed(end) => last = last.max(end),
            Fate::Failed(end) => {
                ok = false;
                last = last.max(end);
            }
            Fate::InFlight => return (false, last, true),
        }
    }
}

/// Runs futures concurrently on this task and returns their outputs in order.
/// (Page views are not the hot path: one small allocation per page is fine.)
async fn join_all<F: Future>(futures: Vec<F>) -> Vec<F::Output> {
    let mut futures: Vec<Pin<Box<F>>> = futures.into_iter().map(Box::pin).collect();
    let mut outputs: Vec<Option<F::Output>> = futures.iter().map(|_| None).collect();
    poll_fn(|cx| {
        let mut pending = false;
        for (fut, out) in futures.iter_mut().zip(outputs.iter_mut()) {
            if out.is_none() {
                match fut.as_mut().poll(cx) {
                    Poll::Ready(v) => *out = Some(v),
                    Poll::Pending => pending = true,
                }
            }
        }
        if pending { Poll::Pending } else { Poll::Ready(()) }
    })
    .await;
    outputs.into_iter().map(|o| o.expect("every future completed")).collect()
}
