//! Page mode: each visitor (one of -c) fetches the page on its first connection,
//! then the assets over up to `--page-conns` connections in parallel (the first
//! one reused), like a browser with its 6 connections per host; then starts over.
//! Connections stay open between page views (the same visitor browsing on), so a
//! server that holds a process per connection pays for all of them.
//!
//! With --http2 the visitor has one connection and `--streams` lanes on it
//! (default: one per asset), the page then every asset as a stream.
//!
//! Page load time = page request start → last byte of the last asset. `-n`
//! counts page views; every request is also recorded per URL. A page view itself
//! (`view`) is what a visit's pages are too (visit.rs).

use std::cell::Cell;
use std::rc::Rc;
use std::time::Instant;

use super::context::ThreadContext;
use super::h2::H2Conn;
use super::join::join_all;
use super::lane::{Fate, Lane, Transport};
use crate::schedule::{Next, Pacer, Slot};

pub async fn run(ctx: Rc<ThreadContext>, visitor: u32, conns: u32) {
    if ctx.cfg.http2() {
        // HTTP/2: one connection per visitor, the page then every asset a stream on it
        // (a server that picks HTTP/1.1 gets the visitor's `conns`, as a browser opens).
        let shared = H2Conn::new(conns);
        let lanes = (0..ctx.cfg.streams.max(1)).map(|_| Lane::on(&ctx, shared.clone())).collect();
        visit(ctx, visitor, lanes).await;
    } else {
        let lanes = (0..conns.max(1)).map(|_| Lane::new(&ctx)).collect();
        visit(ctx, visitor, lanes).await;
    }
}

async fn visit<T: Transport>(ctx: Rc<ThreadContext>, visitor: u32, mut lanes: Vec<Lane<T>>) {
    let entries = ctx.cfg.request_bytes.len();
    let mut pacer = Pacer::new();
    let fetch = async |lane: &mut Lane<T>, slot: &Slot, i: usize| lane.send(&ctx, slot, i).await;
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
        let seen = view(&mut lanes, entries, &slot, &fetch).await;
        if seen.cut {
            break;
        }
        if slot.measured
            && let Some(pages) = &mut ctx.stats.borrow_mut().pages
        {
            pages.record(seen.ok, seen.last.saturating_duration_since(slot.start).as_micros() as u64);
        }
    }
    for lane in &lanes {
        lane.finish(&ctx);
    }
}

/// How a page view ended.
pub(super) struct View {
    /// The page and every asset got a full response (any status).
    pub ok: bool,
    /// When its last response (or failure) ended.
    pub last: Instant,
    /// A request was still unanswered when the run ended: the visitor must stop.
    pub cut: bool,
}

/// One page view of `requests` requests: request 0, the page, on the first lane, then —
/// if it completed, as a browser does — the assets (1..requests) over the lanes in
/// parallel, each lane taking the next one not yet fetched. `fetch(lane, slot, i)` runs
/// request `i` of the view on `lane` (page mode: URL `i`; a visit: its page's `i`-th).
pub(super) async fn view<T: Transport>(
    lanes: &mut [Lane<T>],
    requests: usize,
    page: &Slot,
    fetch: &impl AsyncFn(&mut Lane<T>, &Slot, usize) -> Fate,
) -> View {
    let (mut ok, mut last) = match fetch(&mut lanes[0], page, 0).await {
        Fate::InFlight => return View { ok: false, last: page.start, cut: true },
        Fate::Failed(end) => (false, end),
        Fate::Completed { end, .. } => (true, end),
    };
    // A browser that did not get the page does not fetch its assets.
    if ok && requests > 1 {
        let next = Cell::new(1);
        let busy = lanes.len().min(requests - 1);
        let fetches = lanes[..busy].iter_mut().map(|lane| assets(lane, requests, &next, page, fetch)).collect();
        for (lane_ok, lane_last, cut) in join_all(fetches).await {
            if cut {
                return View { ok: false, last, cut: true };
            }
            ok &= lane_ok;
            last = last.max(lane_last);
        }
    }
    View { ok, last, cut: false }
}

/// One lane's share of the assets: takes the next unfetched one until none is left.
/// Returns (all completed, last end, cut off by the end of the run).
async fn assets<T: Transport>(
    lane: &mut Lane<T>,
    requests: usize,
    next: &Cell<usize>,
    page: &Slot,
    fetch: &impl AsyncFn(&mut Lane<T>, &Slot, usize) -> Fate,
) -> (bool, Instant, bool) {
    let (mut ok, mut last) = (true, page.start);
    loop {
        let i = next.get();
        if i >= requests {
            return (ok, last, false);
        }
        next.set(i + 1);
        let slot = Slot { start: Instant::now(), intended: None, ..*page };
        match fetch(lane, &slot, i).await {
            Fate::Completed { end, .. } => last = last.max(end),
            Fate::Failed(end) => {
                ok = false;
                last = last.max(end);
            }
            Fate::InFlight => return (false, last, true),
        }
    }
}
