//! Visits (`--journey`): each of `-c` visitor slots runs one visit after another —
//! closed loop, a new visitor as soon as the last one left — or takes the next visit
//! due (open loop: `--rate` visits a second, each from its intended start). `-n` counts
//! visits. A visit is a new visitor: an empty cookie jar and connections of its own (up
//! to `--page-conns`, opened as needed and kept for the visit, closed when it ends).
//!
//! It logs in first if the journey says so (the form's page, the form posted, the
//! answer's redirect followed), then takes each step: it thinks (not before the visit's
//! first request), draws the step's page (or leaves), and views it as page mode does
//! (page.rs `view`: the page, then its assets over its connections in parallel — those
//! its browser has not got yet in this visit, unless the journey says otherwise). Every
//! request carries the Cookie header of the visitor's jar, which takes each response's
//! Set-Cookie as it comes (journey/jar.rs). A request that fails ends the visit, failed
//! (the visitor leaves); one cut off by the end of the run, or a think time that would
//! pass it, ends it in flight.
//!
//! Requests are counted as every request is (measured if they began in the measured
//! phase), per URL of the journey and per page view; a visit is counted if it was due
//! in the measured phase, its duration from its intended start to the last byte of its
//! last page. The visitor slot, not each visit's connections, is the client the
//! statistics ask "was it served?" of (stats/clients.rs).

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::context::ThreadContext;
use super::exchange::Conn;
use super::lane::{Fate, Lane, Tally};
use super::page::{View, view};
use crate::config::VisitSetup;
use crate::journey::jar::Jar;
use crate::journey::random::{Rng, Think};
use crate::journey::{Login, MAX_REDIRECTS, redirect_path};
use crate::protocol::http::request;
use crate::schedule::{Next, Pacer, Slot};
use crate::stats::visits::VisitEnd;
use crate::target::Url;

/// A request of a visit outside the run's URL table (a redirect's target): counted in
/// the run's figures, in no `per_url` row.
const NO_URL: usize = usize::MAX;

pub async fn run(ctx: Rc<ThreadContext>, visitor: u32, conns: u32) {
    let setup = ctx.cfg.visits.as_ref().expect("a run of visits has a journey");
    let mut rng = Rng::for_visitor(ctx.thread, visitor);
    let mut pacer = Pacer::new();
    let mut tally = Tally::default();
    loop {
        let slot = match ctx.scheduler.next(visitor, &mut pacer).await {
            Next::Go(slot) => slot,
            Next::Idle(until) => {
                pacer.until(until).await;
                continue;
            }
            Next::Stop => break,
        };
        let mut lanes: Vec<Lane<Conn>> = (0..conns.max(1)).map(|_| Lane::new(&ctx)).collect();
        let visit = Visit {
            ctx: &ctx,
            setup,
            jar: RefCell::new(Jar::new(&setup.cookie_host, setup.https)),
            requests: Cell::new(0),
            cached: RefCell::new(vec![false; setup.journey.urls.len()]),
        };
        let end = visit.run(&slot, &mut lanes, &mut rng, &mut pacer).await;
        for lane in &lanes {
            tally.absorb(lane.tally());
        }
        if slot.measured
            && let Some(visits) = &mut ctx.stats.borrow_mut().visits
        {
            visits.record(end);
        }
        if end == VisitEnd::CutOff {
            break;
        }
    }
    tally.finish(&ctx);
}

/// One visitor's visit: what its requests share.
struct Visit<'a> {
    ctx: &'a ThreadContext,
    setup: &'a VisitSetup,
    jar: RefCell<Jar>,
    /// Requests made so far.
    requests: Cell<u64>,
    /// By URL: an asset its browser got (journey `cache_assets`).
    cached: RefCell<Vec<bool>>,
}

/// How a step of the visit ended.
enum Stepped {
    /// Its last response ended then.
    Done(Instant),
    Failed,
    CutOff,
}

impl Visit<'_> {
    async fn run(&self, first: &Slot, lanes: &mut [Lane<Conn>], rng: &mut Rng, pacer: &mut Pacer) -> VisitEnd {
        let journey = &self.setup.journey;
        let origin = first.intended.unwrap_or(first.start);
        // The visit's first request is `first`'s (its latency from the visit's intended
        // start); each later one is timed from its own.
        let mut next_slot = Some(*first);
        let mut slot = |visit: &Self| next_slot.take().unwrap_or_else(|| visit.slot(first.stage));
        let mut last = origin;
        if let Some(login) = &journey.login {
            match self.login(login, lanes, &mut slot, rng, pacer).await {
                Stepped::Done(end) => last = end,
                Stepped::Failed => return VisitEnd::Failed,
                Stepped::CutOff => return VisitEnd::CutOff,
            }
        }
        let mut pages = 0;
        for (i, step) in journey.steps.iter().enumerate() {
            if (i > 0 || journey.login.is_some()) && !self.think(step.think.unwrap_or(journey.think), rng, pacer).await {
                return VisitEnd::CutOff;
            }
            let pick = if step.options.len() == 1 { 0 } else { rng.pick(&step.weights) };
            let Some(page) = step.options[pick] else { break }; // the visitor leaves
            // The page, then the assets its visitor's browser has not got yet.
            let urls: Vec<usize> = {
                let cached = self.cached.borrow();
                let all = journey.pages[page].urls.iter().enumerate();
                all.filter(|&(k, &url)| k == 0 || !cached[url]).map(|(_, &url)| url).collect()
            };
            let fetch = async |lane: &mut Lane<Conn>, s: &Slot, k: usize| {
                let url = urls[k];
                let fate = self.send(lane, s, url, &self.setup.heads[url], &journey.urls[url].path, None).await;
                if k > 0 && journey.cache_assets && matches!(fate, Fate::Completed { status: 200..=299, .. }) {
                    self.cached.borrow_mut()[url] = true;
                }
                fate
            };
            let at = slot(self);
            let seen = view(lanes, urls.len(), &at, &fetch).await;
            if seen.cut {
                return VisitEnd::CutOff;
            }
            self.record_view(journey.row_of_page(page), &at, &seen, true);
            if !seen.ok {
                return VisitEnd::Failed;
            }
            last = seen.last;
            pages += 1;
        }
        let duration_us = last.saturating_duration_since(origin).as_micros() as u64;
        VisitEnd::Completed { duration_us, pages, requests: self.requests.get() }
    }

    /// The login: its form's page (if asked), a think, the form posted, and the
    /// answer's redirects followed (if asked). One row of `visit_pages`, from its first
    /// request's start to its last response.
    async fn login(&self, login: &Login, lanes: &mut [Lane<Conn>], slot: &mut impl FnMut(&Self) -> Slot,
                   rng: &mut Rng, pacer: &mut Pacer) -> Stepped {
        let journey = &self.setup.journey;
        let lane = &mut lanes[0];
        let begun = slot(self);
        let mut at = begun;
        if let Some(form) = login.form_page {
            match self.send(lane, &at, form, &self.setup.heads[form], &journey.urls[form].path, None).await {
                Fate::Completed { .. } => {}
                Fate::Failed(end) => return self.login_ended(&begun, end, false),
                Fate::InFlight => return Stepped::CutOff,
            }
            if !self.think(journey.think, rng, pacer).await {
                return Stepped::CutOff;
            }
            at = slot(self);
        }
        let (mut url, mut path) = (login.post, journey.urls[login.post].path.clone());
        let mut head = self.setup.heads[url].to_vec();
        // An account for this visit, when the journey has several.
        let account = if login.bodies.len() > 1 { (rng.next_u64() % login.bodies.len() as u64) as usize } else { 0 };
        let mut body = Some(&login.bodies[account][..]);
        let mut hops = 0;
        loop {
            let (end, status) = match self.send(lane, &at, url, &head, &path, body).await {
                Fate::Completed { end, status } => (end, status),
                Fate::Failed(end) => return self.login_ended(&begun, end, false),
                Fate::InFlight => return Stepped::CutOff,
            };
            let location = self.location(lane);
            let next = location.and_then(|l| redirect_path(&l, &path, &self.setup.server, &self.setup.cookie_host));
            let redirect = matches!(status, 301 | 302 | 303 | 307 | 308);
            let Some(next) = next.filter(|_| login.follow_redirect && redirect && hops < MAX_REDIRECTS) else {
                return self.login_ended(&begun, end, true);
            };
            // 307 and 308 keep the method and body (RFC 9110 §15.4); the others are a GET.
            if !matches!(status, 307 | 308) {
                body = None;
            }
            let method = if body.is_some() { "POST" } else { "GET" };
            let target = Url { path: next.clone(), ..self.setup.server.clone() };
            head = request::head(method, &target, &self.setup.headers, self.ctx.cfg.keepalive);
            (url, path, hops) = (NO_URL, next, hops + 1);
            at = slot(self);
        }
    }

    fn login_ended(&self, begun: &Slot, end: Instant, ok: bool) -> Stepped {
        let seen = View { ok, last: end, cut: false };
        self.record_view(0, begun, &seen, false);
        if ok { Stepped::Done(end) } else { Stepped::Failed }
    }

    /// A request of the visit now, counted if it begins in the measured phase.
    fn slot(&self, stage: usize) -> Slot {
        let now = Instant::now();
        Slot { start: now, intended: None, measured: now >= self.ctx.measure_start, stage }
    }

    /// Sends request `url` — `head`, then the jar's Cookie for `path`, then `body` as a
    /// form — and takes the response's cookies into the jar.
    async fn send(&self, lane: &mut Lane<Conn>, slot: &Slot, url: usize, head: &[u8], path: &str,
                  body: Option<&[u8]>) -> Fate {
        let mut bytes = Vec::with_capacity(head.len() + 128 + body.map_or(0, <[u8]>::len));
        bytes.extend_from_slice(head);
        if let Some(cookie) = self.jar.borrow().header(path, unix_now_s()) {
            bytes.extend_from_slice(format!("Cookie: {cookie}\r\n").as_bytes());
        }
        if let Some(body) = body {
            let length = body.len();
            bytes.extend_from_slice(
                format!("Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {length}\r\n").as_bytes(),
            );
        }
        bytes.extend_from_slice(b"\r\n");
        bytes.extend_from_slice(body.unwrap_or_default());
        self.requests.set(self.requests.get() + 1);
        let fate = lane.send_bytes(self.ctx, slot, url, &bytes).await;
        if matches!(fate, Fate::Completed { .. })
            && let Some(captures) = lane.captures()
        {
            let (now, at) = (unix_now_s(), self.ctx.cfg.count_headers.len());
            let mut jar = self.jar.borrow_mut();
            for value in captures.values(at) {
                jar.store(value, path, now);
            }
        }
        fate
    }

    /// The last response's Location, if it had one.
    fn location(&self, lane: &Lane<Conn>) -> Option<String> {
        let captures = lane.captures()?;
        let value = captures.values(self.ctx.cfg.count_headers.len() + 1).next()?;
        std::str::from_utf8(value).ok().map(str::to_string)
    }

    /// Thinks for a draw of `think`; false if the run ends first (the visit is cut off).
    async fn think(&self, think: Think, rng: &mut Rng, pacer: &mut Pacer) -> bool {
        let pause = think.draw(rng);
        if pause.is_zero() {
            return true;
        }
        let wake = Instant::now() + pause;
        match self.ctx.run_end {
            Some(end) if wake >= end => {
                pacer.until(end).await;
                false
            }
            _ => {
                pacer.until(wake).await;
                true
            }
        }
    }

    /// A page view (or the login) seen from `at`: its row, and — a page — the run's page
    /// views; counted if it began in the measured phase.
    fn record_view(&self, row: usize, at: &Slot, seen: &View, page: bool) {
        if !at.measured {
            return;
        }
        let load_us = seen.last.saturating_duration_since(at.start).as_micros() as u64;
        let mut stats = self.ctx.stats.borrow_mut();
        if page && let Some(pages) = &mut stats.pages {
            pages.record(seen.ok, load_us);
        }
        if let Some(visits) = &mut stats.visits {
            visits.rows[row].record(seen.ok, load_us);
        }
    }
}

fn unix_now_s() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
