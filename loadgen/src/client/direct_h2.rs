//! HTTP/2 on the direct loop: closed-loop `--http2` runs, each connection's frames
//! spoken by this loop (protocol/h2/client.rs, hpack.rs) over rustls's records
//! (direct_tls.rs) — no h2 crate, no task per connection or per stream.
//!
//! Why: on the task loop an HTTP/2 request cost as much client CPU as h2load's
//! (bench/RESULTS.md: 0.96–1.05×), a fifth of it in the h2 crate's machinery (its
//! stream store, header maps, wakers) and tokio's. Here every stream slot of a
//! connection is a closed-loop client of its own, as on the task loop (the
//! schedule, the statistics and the per-request rules, rules.rs, are the same
//! code); what the slots queue in a turn of the loop leaves in one record and one
//! write.
//!
//! The connection is handled as on the task loop (h2.rs): the first slot that needs
//! it opens it (its request pays the connect); the others wait for it, and for a
//! stream when the server's SETTINGS_MAX_CONCURRENT_STREAMS is reached. What ends a
//! request is counted by rules.rs: a graceful GOAWAY, or a connection closed before
//! a request's response began, is retried once on a new connection; a GOAWAY with an
//! error code fails what it cut off (h2_goaway), a RST_STREAM its stream
//! (h2_rst_stream), a protocol error of the server every stream of the connection
//! (parse). If the server's ALPN picks HTTP/1.1, the slots take turns on that
//! connection, as the task loop's fallback of one connection does.
//!
//! Here the connections: opened, handshaken, written, read, set aside after a GOAWAY,
//! lost; direct_h2/slots.rs has the stream slots' requests, direct_h2/receive.rs what
//! a connection's plaintext says (HTTP/2 frames' events, or an HTTP/1.1 response).

mod receive;
mod slots;

use std::collections::VecDeque;
use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::AsRawFd;
use std::time::Instant;

use super::pacer;
use super::context::{SCRATCH_BYTES, ThreadContext};
use super::direct_loop::{self, Machine, Readiness, Samples};
use super::direct_tls::{Ending, Session, Took};
use super::rules::{Cause, Failure, connect_failed};
use receive::{Ev, offer};
use slots::StreamSlot;
use crate::net::Endpoint;
use crate::protocol::Reader;
use crate::protocol::h2::client::Connection;
use crate::tls::{self, Alpn};

pub fn run(ctx: &ThreadContext, connections: u32) -> io::Result<Samples> {
    let Endpoint::Tcp(addr) = ctx.cfg.endpoint else { unreachable!("https targets are TCP") };
    let ep = direct_loop::epoll()?;
    let now = Instant::now();
    let per = ctx.cfg.streams.max(1) as usize;
    let slots = connections as usize * per;
    let mut lp = H2Loop {
        ctx,
        addr,
        ep: ep.as_raw_fd(),
        per,
        conns: (0..connections).map(|_| Conn::new(now)).collect(),
        slots: (0..slots).map(|k| StreamSlot::new(ctx, k / per, now)).collect(),
        todo: (0..slots).rev().collect(),
        to_open: Vec::new(),
        aside: Vec::new(),
        dirty: Vec::new(),
        plain: Vec::new(),
        events: Vec::new(),
        fields: Vec::new(),
        running: slots,
    };
    let samples = direct_loop::drive(ctx, lp.ep, &mut lp);
    drop(lp);
    samples
}

enum State {
    Closed,
    Connecting,
    Handshaking,
    H2(Box<Connection>),
    /// ALPN said HTTP/1.1: one request at a time, `current`'s.
    Http1 { reader: Box<Reader>, current: Option<usize>, uses: u32 },
}

/// One connection and what its slots share.
struct Conn {
    sock: Option<TcpStream>,
    tls: Option<Box<Session>>,
    state: State,
    /// Slots whose request waits for this connection (to open, or for a stream), in order.
    waiting: VecDeque<usize>,
    /// Slots with a request on it: (stream id, slot); id 0 on HTTP/1.1.
    in_flight: Vec<(u32, usize)>,
    /// The slot whose request opens the connection.
    opener: Option<usize>,
    tcp_done: Instant,
    /// The server chose HTTP/1.1 once: later connections offer it alone (the task
    /// loop's fallback connector), so a reconnect cannot switch protocol under the slots.
    http1: bool,
    /// A GOAWAY's error code, for streams its connection's end cuts off.
    goaway: Option<u32>,
    /// Bytes moved on the connection (after TLS) not yet counted in a request's
    /// transfer: each request that ends takes them (h2.rs, IoCount).
    received: u64,
    sent: u64,
    /// In the loop's `dirty` list: has frames to send.
    dirty: bool,
    /// The socket had no room: the rest goes at EPOLLOUT.
    blocked: bool,
}

impl Conn {
    fn new(now: Instant) -> Conn {
        Conn {
            sock: None,
            tls: None,
            state: State::Closed,
            waiting: VecDeque::new(),
            in_flight: Vec::new(),
            opener: None,
            tcp_done: now,
            http1: false,
            goaway: None,
            received: 0,
            sent: 0,
            dirty: false,
            blocked: false,
        }
    }
}

struct H2Loop<'a> {
    ctx: &'a ThreadContext,
    addr: SocketAddr,
    ep: i32,
    /// Stream slots a connection (--streams): slot k is on connection k / per.
    per: usize,
    conns: Vec<Conn>,
    slots: Vec<StreamSlot>,
    /// Slots to start their next request.
    todo: Vec<usize>,
    /// Connections to open for the slots waiting on them.
    to_open: Vec<usize>,
    /// Connections going away with slots waiting: set aside, then opened anew.
    aside: Vec<usize>,
    /// Connections with frames to send.
    dirty: Vec<usize>,
    /// Plaintext of the last read.
    plain: Vec<u8>,
    events: Vec<Ev>,
    fields: Vec<u8>,
    running: usize,
}

impl Machine for H2Loop<'_> {
    fn start_queued(&mut self) {
        let mut batch = std::mem::take(&mut self.todo);
        for k in batch.drain(..) {
            self.begin(k);
        }
        for ci in std::mem::take(&mut self.aside) {
            if matches!(&self.conns[ci].state, State::H2(h2) if h2.going_away()) {
                self.set_aside(ci);
                if !self.to_open.contains(&ci) {
                    self.to_open.push(ci);
                }
            }
        }
        for ci in std::mem::take(&mut self.to_open) {
            self.open(ci);
        }
        for ci in std::mem::take(&mut self.dirty) {
            self.conns[ci].dirty = false;
            self.flush(ci);
        }
        if self.todo.is_empty() {
            self.todo = batch; // its allocation, for the next turn
        }
    }

    fn queued(&self) -> bool {
        // `dirty`: frames queued by what the flushes themselves set off (a lost
        // connection's request retried on another).
        !self.todo.is_empty() || !self.to_open.is_empty() || !self.aside.is_empty() || !self.dirty.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        for k in 0..self.slots.len() {
            match self.slots[k].lane.overdue(now) {
                None => {}
                Some(true) => {
                    self.withdraw(k);
                    self.slots[k].lane.cut_off(self.ctx);
                    self.stop(k);
                }
                Some(false) => self.judge(k, Cause::Timeout, false),
            }
        }
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        direct_loop::earliest(self.ctx, now, self.slots.iter().filter_map(|s| s.lane.due()))
    }

    fn running(&self) -> usize {
        self.running
    }

    fn ready(&mut self, ci: usize, Readiness { readable, ended, writable }: Readiness) {
        let c = &mut self.conns[ci];
        if c.sock.is_none() {
            return;
        }
        if matches!(c.state, State::Connecting) {
            if writable {
                self.connected(ci);
            }
            return;
        }
        if writable && c.blocked {
            self.flush(ci);
        }
        if readable {
            self.read(ci, ended);
        }
    }
}

impl H2Loop<'_> {
    /// Opens connection `ci` for the first slot waiting on it (which pays the connect).
    fn open(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let Some(&k) = c.waiting.front() else { return };
        if !matches!(c.state, State::Closed) {
            return;
        }
        c.opener = Some(k);
        match direct_loop::connect(self.addr, &self.ctx.cfg.connect, pacer::pacing(&self.ctx.cfg)) {
            Ok(sock) => {
                if let Err(e) = direct_loop::watch(self.ep, &sock, ci, libc::EPOLL_CTL_ADD) {
                    return self.refused(ci, connect_failed(&e));
                }
                c.sock = Some(sock);
                c.state = State::Connecting;
                c.goaway = None;
                c.blocked = false;
            }
            Err(e) => self.refused(ci, connect_failed(&e)),
        }
    }

    /// The TCP connect of `ci` ended: the TLS handshake starts.
    fn connected(&mut self, ci: usize) {
        let ctx = self.ctx;
        let c = &mut self.conns[ci];
        match c.sock.as_ref().expect("connecting").take_error() {
            Ok(Some(e)) | Err(e) => return self.refused(ci, connect_failed(&e)),
            Ok(None) => {}
        }
        let tls = ctx.tls.as_ref().expect("https");
        let connector = if c.http1 { &tls.http11 } else { &tls.connector };
        match Session::new(connector.config(), &tls.name) {
            Ok(session) => c.tls = Some(Box::new(session)),
            Err(failure) => return self.refused(ci, failure),
        }
        c.tcp_done = Instant::now();
        c.state = State::Handshaking;
        self.flush(ci);
    }

    /// The connection of `ci` could not be opened: its opener's request fails; the
    /// others wait on for the next try (the task loop's `Opening` guard).
    fn refused(&mut self, ci: usize, failure: Failure) {
        let c = &mut self.conns[ci];
        let opener = c.opener.take();
        self.close(ci);
        if let Some(k) = opener {
            self.judge(k, Cause::Refused(failure), false);
        }
        if !self.conns[ci].waiting.is_empty() && !self.to_open.contains(&ci) {
            self.to_open.push(ci);
        }
    }

    /// The handshake of `ci` is done: HTTP/2 or, as ALPN says, HTTP/1.1.
    fn handshaken(&mut self, ci: usize, now: Instant) {
        let c = &mut self.conns[ci];
        let tls = c.tls.as_ref().expect("a handshake");
        let tcp_from = c.opener.map_or(c.tcp_done, |k| self.slots[k].lane.connect_from);
        let handshake = tls::handshake_of(tls.connection(), c.tcp_done.saturating_duration_since(tcp_from), now - c.tcp_done);
        if let Some(k) = c.opener.take() {
            let lane = &mut self.slots[k].lane;
            lane.opened(now);
            lane.t.handshake = Some(handshake);
        }
        let c = &mut self.conns[ci];
        c.received = 0;
        c.sent = 0;
        if handshake.negotiated.alpn == Alpn::H2 {
            c.state = State::H2(Box::default());
            self.mark(ci);
        } else {
            // HTTP/1.1 (or no ALPN, which means HTTP/1.1).
            c.http1 = true;
            let ctx = self.ctx;
            let reader = Reader::new(ctx.cfg.protocol, ctx.cfg.keepalive, ctx.watch.clone(), &ctx.head_memo);
            c.state = State::Http1 { reader: Box::new(reader), current: None, uses: 0 };
        }
        self.pump(ci);
    }

    /// Moves connection `ci` (going away, streams still in flight) to a place of its
    /// own past the home connections, so `ci` can open anew; closes it if nothing is
    /// in flight. Its slots in flight follow it (`on`); it closes with its last one.
    fn set_aside(&mut self, ci: usize) {
        if self.conns[ci].in_flight.is_empty() {
            return self.close(ci);
        }
        let homes = self.slots.len() / self.per;
        let d = match self.conns[homes..].iter().position(|c| c.sock.is_none() && !c.dirty) {
            Some(i) => homes + i,
            None => {
                self.conns.push(Conn::new(Instant::now()));
                self.conns.len() - 1
            }
        };
        self.conns.swap(ci, d);
        // What stays home: the slots waiting, and which protocol the server chose.
        let (waiting, http1) = (std::mem::take(&mut self.conns[d].waiting), self.conns[d].http1);
        let home = &mut self.conns[ci];
        home.waiting = waiting;
        home.http1 = http1;
        for &(_, k) in &self.conns[d].in_flight {
            self.slots[k].on = d;
        }
        if self.conns[d].dirty {
            self.conns[d].dirty = false;
            self.mark(d);
        }
        if let Some(sock) = &self.conns[d].sock
            && let Err(e) = direct_loop::watch(self.ep, sock, d, libc::EPOLL_CTL_MOD)
        {
            self.lost(d, Cause::Read(e.kind()));
        }
    }

    /// A connection set aside closes when its last request is done.
    fn drained(&mut self, ci: usize) {
        if ci >= self.slots.len() / self.per && self.conns[ci].in_flight.is_empty() && self.conns[ci].sock.is_some() {
            self.close(ci);
        }
    }

    fn mark(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        if !c.dirty {
            c.dirty = true;
            self.dirty.push(ci);
        }
    }

    /// Writes what connection `ci` has to send: the frames queued this turn as one
    /// record, then whatever rustls holds.
    fn flush(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        let (Some(sock), Some(tls)) = (c.sock.as_mut(), c.tls.as_mut()) else { return };
        if let State::H2(h2) = &mut c.state
            && !h2.out.is_empty()
        {
            c.sent += h2.out.len() as u64;
            tls.queue(&h2.out);
            h2.out.clear();
        }
        match tls.send(sock) {
            Ok(done) => c.blocked = !done,
            Err(e) if matches!(c.state, State::Handshaking) => self.refused(ci, tls::classify(&e)),
            Err(e) => self.lost(ci, Cause::Write(e.kind())),
        }
    }

    /// Reads what the socket of `ci` holds: records, then frames or an HTTP/1.1 response.
    fn read(&mut self, ci: usize, ended: bool) {
        let ctx = self.ctx;
        loop {
            let c = &mut self.conns[ci];
            let (Some(sock), Some(tls)) = (c.sock.as_mut(), c.tls.as_mut()) else { return };
            let plain = &mut self.plain;
            plain.clear();
            let mut scratch = ctx.scratch.borrow_mut();
            let read = tls.read(sock, &mut scratch, |p| plain.extend_from_slice(p));
            drop(scratch);
            let Took { n, landed, taken, handshaken } = match read {
                Ok(Some(took)) => took,
                Ok(None) => return,
                Err(Ending::Refused(failure)) => return self.refused(ci, failure),
                Err(Ending::Eof) => return self.end(ci),
                Err(Ending::Failed(cause)) => return self.lost(ci, cause),
            };
            if handshaken {
                // Its end when the client is done with the server's last flight, as on
                // the task loop.
                self.handshaken(ci, Instant::now());
            } else if matches!(self.conns[ci].state, State::Handshaking) {
                self.flush(ci);
            }
            if !self.plain.is_empty() {
                self.conns[ci].received += self.plain.len() as u64;
                if !self.take_plain(ci, landed) {
                    return;
                }
            }
            if taken.closed {
                return self.end(ci);
            }
            if n < SCRATCH_BYTES && !ended {
                return;
            }
        }
    }

    /// Connection `ci` is gone (`why`: what ended it): its requests in flight are
    /// retried or fail (rules.rs), the waiting ones get a new connection.
    fn lost(&mut self, ci: usize, why: Cause) {
        let c = &self.conns[ci];
        let why = match (&c.state, why) {
            // The connection's I/O, not one request's: as the h2 crate tells the task
            // loop's streams (h2.rs, `cause`).
            (State::H2(_), Cause::Read(kind) | Cause::Write(kind)) => Cause::H2Io(kind),
            (_, why) => why,
        };
        let why = why.after_goaway(c.goaway);
        let retry_conn = self.retry_conn(ci);
        let cut = std::mem::take(&mut self.conns[ci].in_flight);
        self.close(ci);
        for (_, k) in cut {
            self.judge(k, why, retry_conn);
        }
        if !self.conns[ci].waiting.is_empty() && !self.to_open.contains(&ci) {
            self.to_open.push(ci);
        }
    }

    /// Whether a request cut off connection `ci` may be retried (rules.rs, `Attempt`):
    /// on HTTP/1.1 if the connection is a kept-alive one, on HTTP/2 any.
    fn retry_conn(&self, ci: usize) -> bool {
        match &self.conns[ci].state {
            State::Http1 { uses, .. } => *uses > 0,
            _ => true,
        }
    }

    /// The server ended connection `ci` (a TCP end, or its close_notify). On HTTP/1.1 the
    /// end may complete the response in flight (a body until close), or fail it by the
    /// HTTP/1.1 rules (rules.rs); on HTTP/2 it cuts off what is in flight (`lost`).
    fn end(&mut self, ci: usize) {
        let retry_conn = self.retry_conn(ci);
        let c = &mut self.conns[ci];
        let State::Http1 { reader, current: Some(k), .. } = &mut c.state else { return self.lost(ci, Cause::Gone) };
        let k = *k;
        let ended = reader.eof();
        let body = reader.body_bytes();
        c.in_flight.clear();
        let outcome = match ended {
            Ok(done) => {
                let s = &mut self.slots[k];
                s.lane.t.body += body;
                s.status = done.status;
                if let State::Http1 { reader, .. } = &self.conns[ci].state {
                    offer(&mut s.captures, reader, &self.ctx.watch);
                }
                Ok(())
            }
            Err(e) => Err(Cause::Eof(e)),
        };
        // Closed before the request ends or is retried: no request may start on it.
        self.close(ci);
        match outcome {
            Ok(()) => self.complete(k, Instant::now()),
            Err(cause) => self.judge(k, cause, retry_conn),
        }
        if !self.conns[ci].waiting.is_empty() && !self.to_open.contains(&ci) {
            self.to_open.push(ci);
        }
    }

    fn close(&mut self, ci: usize) {
        let c = &mut self.conns[ci];
        // Closing the socket takes it out of the epoll set.
        c.sock = None;
        c.tls = None;
        c.state = State::Closed;
        c.blocked = false;
        c.opener = None;
    }
}
