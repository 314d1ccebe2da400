//! HTTP/2 (`--http2`): one connection carries up to `--streams` requests at once.
//! Each stream slot is a lane (lane.rs) of its own — a client of the closed or
//! open loop, or one of a page-mode visitor's fetchers — and all the lanes of a
//! connection share one `H2Conn`. Frames, HPACK and flow control are the `h2`
//! crate's; its connection driver runs as a task of the thread's LocalSet.
//!
//! The connection is opened by the first lane that needs it (its request pays
//! the connect, as on HTTP/1.1); lanes that need it meanwhile wait. If the
//! server's ALPN picks HTTP/1.1 (Apache prefork), the connection becomes an
//! HTTP/1.1 connection that the lanes take turns on — a result, recorded in the
//! negotiated ALPN and in `protocol`, not an error.
//!
//! A graceful GOAWAY (NO_ERROR: nginx after `keepalive_requests` streams) and a
//! connection closed while idle are not failures: the request that finds the
//! connection gone is retried once on a new one, as browsers do.

use std::cell::{Cell, RefCell};
use std::io;
use std::pin::Pin;
use std::rc::{Rc, Weak};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use h2::client::SendRequest;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::Notify;

use super::connect;
use super::context::ThreadContext;
use super::deadline::Watchdog;
use super::exchange::{self, Conn, Ended};
use super::rules::{self, Attempt, Cause, Deadline, Failure, Verdict};
use super::slow_read::{ReadRate, SlowReader};
use crate::protocol::capture::Captures;
use crate::net::Stream;
use crate::schedule::Slot;
use crate::protocol::h2::frame::NO_ERROR;
use crate::stats::{Outcome, Sample, Transfer};
use crate::tls::Alpn;

/// Flow-control windows we announce, per stream and per connection: 2^30 − 1,
/// h2load's defaults (-w 30, -W 30), so the server is never held back by our
/// window and the comparison with h2load is like for like.
const WINDOW: u32 = (1 << 30) - 1;

/// --read-rate: the protocol's default window (RFC 9113 §6.9.2), per stream and
/// per stream slot on the connection, so that a slow reader holds the server
/// back (window exhausted) instead of having its responses buffered here.
const SLOW_WINDOW: u32 = 65_535;

/// Bytes moved on the current connection and not yet attributed to a request.
/// Each request that ends takes what accumulated, so the run's totals are the
/// connection's (frames, HPACK and all), split among requests in end order.
#[derive(Default)]
struct IoCount {
    received: Cell<u64>,
    sent: Cell<u64>,
}

enum State {
    Closed,
    /// A lane is opening the connection; the others wait for `changed`.
    Connecting,
    H2 { send: SendRequest<Bytes>, generation: u64 },
    /// The server chose HTTP/1.1: one request at a time per connection, up to the
    /// H2Conn's `http1_limit` connections (`open` of them, `idle` not lent out).
    Http1 { idle: Vec<Conn>, open: u32 },
}

/// One HTTP/2 connection shared by its lanes.
pub struct H2Conn {
    state: RefCell<State>,
    changed: Notify,
    io: Rc<IoCount>,
    generation: Cell<u64>,
    /// The GOAWAY error code that ended connection `generation`, if one did: h2
    /// reports it from the connection's driver, while the streams it cut off
    /// only see the connection close (a broken pipe).
    goaway: Cell<Option<(u64, h2::Reason)>>,
    /// The newest generation whose driver has ended.
    ended: Cell<u64>,
    /// HTTP/1.1 connections a fallback may open: what the client would have without
    /// HTTP/2 — a browser's 6 per host in page mode (the visitor's --page-conns), one
    /// for a client connection — so a server that picks HTTP/1.1 is loaded as an
    /// HTTP/1.1 client loads it, not through one connection for all the streams.
    http1_limit: u32,
}

impl H2Conn {
    pub fn new(http1_limit: u32) -> Rc<H2Conn> {
        Rc::new(H2Conn {
            http1_limit: http1_limit.max(1),
            state: RefCell::new(State::Closed),
            changed: Notify::new(),
            io: Rc::default(),
            generation: Cell::new(0),
            goaway: Cell::new(None),
            ended: Cell::new(0),
        })
    }

    /// Closes the connection (its lanes are idle in this stage). Streams still in
    /// flight keep the h2 connection alive until they end.
    pub fn close(&self) {
        let mut state = self.state.borrow_mut();
        if !matches!(*state, State::Connecting) {
            *state = State::Closed;
        }
        drop(state);
        self.changed.notify_waiters();
    }

    /// The h2 connection `generation` failed or ended: the next request reconnects.
    fn lost(&self, generation: u64) {
        let mut state = self.state.borrow_mut();
        if matches!(*state, State::H2 { generation: g, .. } if g == generation) {
            *state = State::Closed;
        }
    }

    fn set(&self, state: State) {
        *self.state.borrow_mut() = state;
        self.changed.notify_waiters();
    }

    /// A lent HTTP/1.1 connection back to the pool (dropped when the connection was
    /// closed or lost meanwhile).
    fn give_back(&self, conn: Conn) {
        if let State::Http1 { idle, .. } = &mut *self.state.borrow_mut() {
            idle.push(conn);
        }
        self.changed.notify_waiters();
    }

    /// An HTTP/1.1 connection that could not be opened: its place in the pool is free.
    fn not_opened(&self) {
        if let State::Http1 { open, .. } = &mut *self.state.borrow_mut() {
            *open = open.saturating_sub(1);
        }
        self.changed.notify_waiters();
    }

    fn take_bytes(&self, t: &mut Transfer) {
        t.received += self.io.received.replace(0);
        t.sent += self.io.sent.replace(0);
    }
}

/// One stream slot of a connection: what a lane sends on (lane.rs), with its own
/// --count-header values, as an HTTP/1.1 connection has.
pub struct StreamSlot {
    pub shared: Rc<H2Conn>,
    pub captures: Captures,
    /// --read-rate: this stream slot's pacing (a slow reader per client, as on HTTP/1.1).
    pub slow: Option<SlowReader>,
}

impl StreamSlot {
    pub fn new(ctx: &ThreadContext, shared: Rc<H2Conn>) -> StreamSlot {
        StreamSlot {
            shared,
            captures: Captures::new(ctx.watch.clone()),
            slow: ctx.cfg.read_bytes_per_s.map(|bytes_per_s| SlowReader::new(ReadRate { bytes_per_s })),
        }
    }
}

/// What a lane got to send its request on.
enum Got<'a> {
    H2 { send: SendRequest<Bytes>, generation: u64, opened: Option<Instant> },
    Http1(Lease<'a>),
    /// The connection is closed and this lane is to open it (get() only).
    Open,
    /// HTTP/1.1 fallback with room in the pool: this lane opens another connection.
    OpenHttp1,
}

/// The HTTP/1.1 connection of a fallback, lent to one lane; given back on drop.
/// Dropped before the exchange finished (its timeout): the connection is in an
/// unknown state and is closed, as exchange.rs does on a timeout.
struct Lease<'a> {
    shared: &'a H2Conn,
    conn: Option<Conn>,
    finished: bool,
}

impl Drop for Lease<'_> {
    fn drop(&mut self) {
        if let Some(mut conn) = self.conn.take() {
            if !self.finished {
                conn.close();
            }
            self.shared.give_back(conn);
        }
    }
}

/// Resets the state if the lane opening the connection is dropped (its timeout).
struct Opening<'a> {
    shared: &'a H2Conn,
    armed: bool,
}

impl Drop for Opening<'_> {
    fn drop(&mut self) {
        if self.armed {
            self.shared.set(State::Closed);
        }
    }
}

/// Sends request `url` for `slot` on the shared connection and reads its response
/// (exchange.rs's contract: bounded by the timeout and the end of the run).
pub async fn exchange(ctx: &ThreadContext, lane: &mut StreamSlot, watchdog: &mut Watchdog, slot: &Slot, url: usize) -> Ended {
    let StreamSlot { shared, captures, slow } = lane;
    let deadline = Deadline::of(slot.start, ctx.cfg.timeout, ctx.run_end);
    let mut transfer = Transfer { h2: true, ..Transfer::default() };
    let result = watchdog.run(deadline.at.into(), attempt(ctx, shared, captures, slow, slot, url, &mut transfer)).await;
    match result {
        Some((outcome, end)) => Ended::Done { outcome, transfer, end },
        // The stream's future was dropped: h2 resets it (CANCEL); the connection stays.
        None => {
            if !deadline.run_end {
                shared.take_bytes(&mut transfer);
            }
            Ended::past(deadline, transfer)
        }
    }
}

fn us(d: Duration) -> u64 {
    d.as_micros() as u64
}

async fn get<'a>(ctx: &ThreadContext, shared: &'a Rc<H2Conn>, t: &mut Transfer) -> Result<Got<'a>, Failure> {
    loop {
        // Made before looking at the state, so a change in between still wakes us.
        let notified = shared.changed.notified();
        // The borrow ends inside this block: nothing holds it across an await.
        let got = {
            let mut state = shared.state.borrow_mut();
            match &mut *state {
                State::H2 { send, generation } => {
                    Some(Got::H2 { send: send.clone(), generation: *generation, opened: None })
                }
                State::Http1 { idle, open } => match idle.pop() {
                    Some(conn) => Some(Got::Http1(Lease { shared, conn: Some(conn), finished: false })),
                    None if *open < shared.http1_limit => {
                        *open += 1;
                        Some(Got::OpenHttp1)
                    }
                    None => None,
                },
                State::Connecting => None,
                State::Closed => {
                    *state = State::Connecting;
                    Some(Got::Open)
                }
            }
        };
        match got {
            Some(Got::Open) => return open(ctx, shared, t).await,
            Some(Got::OpenHttp1) => return open_http1(ctx, shared, t).await,
            Some(got) => return Ok(got),
            None => notified.await,
        }
    }
}

/// Opens one more HTTP/1.1 connection of a fallback (get() counted it in `open`).
async fn open_http1<'a>(ctx: &ThreadContext, shared: &'a Rc<H2Conn>, t: &mut Transfer) -> Result<Got<'a>, Failure> {
    let opened = match connect::open(ctx, false).await {
        Ok(opened) => opened,
        Err(refused) => {
            shared.not_opened();
            return Err(refused);
        }
    };
    t.connections_opened += 1;
    t.handshake = opened.handshake;
    t.h2 = false;
    let conn = Conn::fallback(ctx, opened.stream);
    Ok(Got::Http1(Lease { shared, conn: Some(conn), finished: false }))
}

/// Opens the connection (this lane set the state to Connecting).
async fn open<'a>(ctx: &ThreadContext, shared: &'a Rc<H2Conn>, t: &mut Transfer) -> Result<Got<'a>, Failure> {
    let mut opening = Opening { shared, armed: true };
    let opened = connect::open(ctx, false).await?;
    t.connections_opened += 1;
    t.handshake = opened.handshake;
    if opened.handshake.is_none_or(|h| h.negotiated.alpn != Alpn::H2) {
        // HTTP/1.1 (or no ALPN, which means HTTP/1.1): this lane goes first.
        opening.armed = false;
        *shared.state.borrow_mut() = State::Http1 { idle: Vec::new(), open: 1 };
        shared.changed.notify_waiters(); // the others may open theirs now
        t.h2 = false;
        let conn = Conn::fallback(ctx, opened.stream);
        return Ok(Got::Http1(Lease { shared, conn: Some(conn), finished: false }));
    }
    shared.io.received.set(0);
    shared.io.sent.set(0);
    let io = Counted { inner: opened.stream, io: shared.io.clone() };
    let (stream_window, connection_window) = match ctx.cfg.read_bytes_per_s {
        None => (WINDOW, WINDOW),
        Some(_) => (SLOW_WINDOW, SLOW_WINDOW.saturating_mul(ctx.cfg.streams.max(1))),
    };
    let (send, connection) = h2::client::Builder::new()
        .initial_window_size(stream_window)
        .initial_connection_window_size(connection_window)
        .enable_push(false)
        .handshake::<_, Bytes>(io)
        .await
        .map_err(|e| classify(&e))?;
    let generation = shared.generation.get() + 1;
    shared.generation.set(generation);
    let weak: Weak<H2Conn> = Rc::downgrade(shared);
    // The driver reads and writes the frames of every stream; when it ends (closed,
    // GOAWAY, error) the next request reconnects. It holds no statistics.
    tokio::task::spawn_local(async move {
        let ended = connection.await;
        if let Some(shared) = weak.upgrade() {
            if let Err(e) = ended
                && e.is_go_away()
                && e.is_remote()
                && let Some(reason) = e.reason()
            {
                shared.goaway.set(Some((generation, reason)));
            }
            shared.ended.set(shared.ended.get().max(generation));
            shared.lost(generation);
        }
    });
    opening.armed = false;
    shared.set(State::H2 { send: send.clone(), generation });
    Ok(Got::H2 { send, generation, opened: Some(Instant::now()) })
}

/// What failed a request, in rules.rs's terms, from the h2 crate's error.
fn cause(e: &h2::Error) -> Cause {
    let code = || e.reason().map_or(NO_ERROR, u32::from);
    if e.is_go_away() && e.is_remote() {
        return Cause::GoAway(code());
    }
    if e.is_reset() && e.is_remote() {
        return Cause::StreamReset(code());
    }
    if let Some(io_error) = e.get_io() {
        return Cause::H2Io(io_error.kind());
    }
    // The connection is gone (closed by the server while idle, or by our side).
    if e.is_library() && e.reason().is_none() {
        return Cause::Gone;
    }
    // A protocol error the h2 crate detected in what the server sent.
    Cause::Protocol(e.reason().map(u32::from))
}

fn classify(e: &h2::Error) -> Failure {
    rules::final_class(cause(e), false)
}

/// A stream cut off by the connection's end may see it before the driver has
/// told why (it runs as another task): give the driver a few turns first. Error
/// path only.
async fn settle(shared: &H2Conn, generation: u64, e: &h2::Error) {
    if e.is_io() {
        for _ in 0..8 {
            if shared.ended.get() >= generation {
                break;
            }
            tokio::task::yield_now().await;
        }
    }
}

/// What h2 error `e` on connection `generation` means for the request it failed;
/// the connection is lost for the next requests unless only this stream was reset.
async fn lost_to(shared: &H2Conn, generation: u64, e: &h2::Error) -> Cause {
    settle(shared, generation, e).await;
    if !e.is_reset() || e.is_go_away() {
        shared.lost(generation);
    }
    let goaway = shared.goaway.get().filter(|&(g, _)| g == generation).map(|(_, reason)| u32::from(reason));
    cause(e).after_goaway(goaway)
}

/// One request on the shared connection, retried or counted as rules.rs says.
async fn attempt(
    ctx: &ThreadContext,
    shared: &Rc<H2Conn>,
    captures: &mut Captures,
    slow: &mut Option<SlowReader>,
    slot: &Slot,
    url: usize,
    t: &mut Transfer,
) -> (Outcome, Instant) {
    // Off (no --count-header): one branch per response.
    if captures.active() {
        captures.clear();
    }
    let mut may_retry = true;
    let mut connect_from = slot.start;
    loop {
        // One attempt: a stream on the shared connection (opened if need be), or a turn
        // on the HTTP/1.1 fallback's connections; what ended it if it failed, and whether
        // that was before any of its response. (A block, as in exchange.rs.)
        let (cause, nothing_yet) = 'attempt: {
            let got = match get(ctx, shared, t).await {
                Ok(got) => got,
                Err(refused) => break 'attempt (Cause::Refused(refused), true),
            };
            let (send, generation, opened) = match got {
                Got::Http1(mut lease) => {
                    t.h2 = false;
                    let conn = lease.conn.as_mut().expect("a lease holds its connection");
                    let result = exchange::attempt(ctx, conn, slot, &ctx.cfg.request_bytes[url], t).await;
                    lease.finished = true;
                    if captures.active() {
                        let seen = conn.captures();
                        for i in 0..seen.watched() {
                            for value in seen.values(i) {
                                captures.offer(&ctx.watch[i], value);
                            }
                        }
                    }
                    return result;
                }
                Got::H2 { send, generation, opened } => (send, generation, opened),
                Got::Open | Got::OpenHttp1 => unreachable!("get() opens the connection itself"),
            };
            let connected_at = opened.unwrap_or(slot.start);
            let connect_us = opened.map_or(0, |at| us(at - connect_from));
            // Waits for a stream the server allows (its SETTINGS_MAX_CONCURRENT_STREAMS).
            let sent = match send.ready().await {
                Ok(mut ready) => ready.send_request(ctx.cfg.h2_requests[url].request(), true),
                Err(e) => Err(e),
            };
            let response = match sent {
                Ok((response, _stream)) => response,
                Err(e) => break 'attempt (lost_to(shared, generation, &e).await, true),
            };
            let written = Instant::now();
            let response = match response.await {
                Ok(r) => r,
                Err(e) => break 'attempt (lost_to(shared, generation, &e).await, true),
            };
            let first_byte = Instant::now();
            if let Some(slow) = slow {
                slow.begin(written);
            }
            let status = response.status().as_u16();
            if captures.active() {
                for (name, value) in response.headers() {
                    captures.offer(name.as_str(), value.as_bytes());
                }
            }
            let mut body = response.into_body();
            loop {
                if let Some(slow) = slow {
                    slow.wait().await;
                }
                let Some(chunk) = body.data().await else { break };
                match chunk {
                    Ok(data) => {
                        t.body += data.len() as u64;
                        if let Some(slow) = slow {
                            slow.consumed(data.len(), Instant::now());
                        }
                        // Consumed: give the window back so the server goes on (a slow
                        // reader gives it back only at its pace, through the wait above).
                        let _ = body.flow_control().release_capacity(data.len());
                    }
                    Err(e) => break 'attempt (lost_to(shared, generation, &e).await, false),
                }
            }
            let end = Instant::now();
            shared.take_bytes(t);
            let sample = Sample::timed(status, slot.intended, slot.start, end, connect_us, written, first_byte, connected_at);
            return (Outcome::Completed(sample), end);
        };
        match rules::judge(cause, Attempt { may_retry, nothing_yet }) {
            Verdict::Retry => {
                may_retry = false;
                connect_from = Instant::now();
            }
            Verdict::Failed(failure) => {
                shared.take_bytes(t);
                return (rules::failed(t, failure), Instant::now());
            }
        }
    }
}

/// The connection's stream, counting the bytes that cross it (after TLS).
struct Counted {
    inner: Stream,
    io: Rc<IoCount>,
}

impl AsyncRead for Counted {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let result = match Pin::new(&mut this.inner).poll_read(cx, buf) {
            // rustls: the TCP connection ended without a TLS close_notify. Passed on
            // as the end of the connection it is, so that h2 still reports why the
            // server went away (a GOAWAY it sent just before) rather than an I/O error.
            Poll::Ready(Err(e)) if e.kind() == io::ErrorKind::UnexpectedEof => Poll::Ready(Ok(())),
            other => other,
        };
        let io = &this.io.received;
        io.set(io.get() + (buf.filled().len() - before) as u64);
        result
    }
}

impl AsyncWrite for Counted {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = result {
            this.io.sent.set(this.io.sent.get() + n as u64);
        }
        result
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}
