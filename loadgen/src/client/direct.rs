//! The direct loop: closed-loop HTTP/1.1 over TCP, clear or TLS, on an epoll loop of
//! the thread's own, each connection a small state machine, no tokio task per connection.
//!
//! Why: on a server faster than a core's worth of client (h2o, lighttpd, nginx on a
//! 12-byte file) the engine's CPU a request is the limit of what the lab can measure,
//! and the task loop spent ~0.6 µs a request in tokio's machinery — the I/O driver's
//! readiness and wake, the LocalSet's queue, polling each connection's future chain,
//! the time driver's park — on top of the system calls every client makes. This loop
//! makes the same calls (one send, one recv and a share of epoll_wait a request; large
//! bodies discarded in the kernel under a raised low-water mark) and little else: 7 %
//! less CPU a request than the task loop, within 3 % of a bare C client
//! (bench/RESULTS.md, "The direct loop"). https runs here too: rustls's records read
//! and written by this loop (direct_tls.rs), the handshake a phase of the connection.
//!
//! What a request does is the task loop's (exchange.rs), by the same code: the
//! response reader, the schedule and the statistics are shared; how a request begins,
//! ends and counts is direct_lane.rs's, by the per-request rules of rules.rs — the
//! deadline, each failure's class, the one retry of a kept-alive connection the
//! server had closed, keep-alive after a response — which both loops ask. The turn of
//! the loop (epoll, deadlines, coalesced waits) is direct_loop.rs's, shared with
//! HTTP/2 (direct_h2.rs). Runs it cannot carry (direct_loop.rs, `eligible`) run on
//! the task loop; STACKBENCH_LOAD_LOOP=tasks sends every run there (the A/B; the
//! engine's tests run their loads on both loops, tests/common/mod.rs).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Instant;

use super::arrival;
use super::context::{SCRATCH_BYTES, ThreadContext};
use super::direct_lane::DirectLane;
use super::direct_loop::{Machine, Readiness, Samples, connect, drive, earliest, epoll, watch};
use super::direct_tls::{Ending, Session, Took};
use super::exchange::{DISCARD_AT_LEAST, HEAD_READ};
use super::pacer;
use super::rules::{self, Cause, Failure, connect_failed};
use crate::net::{self, Endpoint};
use crate::protocol::Reader;
use crate::protocol::reading::{ParseError, Progress};
use crate::tls;

enum Phase {
    /// Between requests (or stopped: `stopped`).
    Idle,
    /// A non-blocking connect in progress.
    Connecting,
    /// https: the TLS handshake in progress (the TCP connect is done).
    Handshaking,
    /// The request's bytes from `written` on are still to go.
    Writing { written: usize },
    /// The request is out; the response is being read.
    Reading,
}

/// One client connection: the lane of the task loop (lane.rs), and its exchange.
struct Client {
    sock: Option<TcpStream>,
    /// https: the connection's TLS session (boxed: clear-text clients carry 8 bytes).
    tls: Option<Box<Session>>,
    phase: Phase,
    reader: Reader,
    /// Its request in flight and its tally.
    lane: DirectLane,
    /// The current attempt started on a connection already open (a kept-alive one).
    reused: bool,
    /// https: the TCP connect's end, the handshake's start.
    tcp_done: Instant,
    /// The low-water mark is raised for a discard (lowered before any other read).
    raised: bool,
    /// An edge said the socket was readable (Some(true): with the peer's end or an
    /// error) and nothing read it yet: it came while connecting or writing, or behind
    /// the bytes that ended the last response. Read as soon as the request is out —
    /// edge-triggered, that edge will not come again.
    unread: Option<bool>,
    /// Requests completed on this TCP connection (--keepalive-requests).
    uses: u32,
}

/// How an attempt ended, for `Client::end`: a whole response (its status, and
/// whether it closes the connection), or what failed it (judged by rules.rs:
/// counted, or tried again on a new connection).
enum End {
    Completed(u16, bool),
    Failed(Cause),
}

pub fn run(ctx: &ThreadContext, connections: u32) -> io::Result<Samples> {
    let Endpoint::Tcp(addr) = ctx.cfg.endpoint else { unreachable!("eligible() takes TCP only") };
    let ep = epoll()?;
    let now = Instant::now();
    let mut lp = Loop {
        ctx,
        addr,
        ep: ep.as_raw_fd(),
        clients: (0..connections).map(|_| Client::new(ctx, now)).collect(),
        todo: (0..connections as usize).rev().collect(),
        running: connections as usize,
    };
    let samples = drive(ctx, lp.ep, &mut lp);
    drop(lp);
    samples
}

impl Machine for Loop<'_> {
    fn start_queued(&mut self) {
        // Clients whose last request ended start their next one; one that fails at
        // once goes back on the list for the next turn.
        let mut batch = std::mem::take(&mut self.todo);
        for i in batch.drain(..) {
            self.begin(i);
        }
        if self.todo.is_empty() {
            self.todo = batch; // its allocation, for the next turn
        }
    }

    fn queued(&self) -> bool {
        !self.todo.is_empty()
    }

    fn expire(&mut self, now: Instant) {
        for i in 0..self.clients.len() {
            match self.clients[i].lane.overdue(now) {
                None => {}
                Some(true) => {
                    self.clients[i].lane.cut_off(self.ctx);
                    self.stop(i);
                }
                Some(false) => self.end(i, End::Failed(Cause::Timeout)),
            }
        }
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        earliest(self.ctx, now, self.clients.iter().filter_map(|c| c.lane.due()))
    }

    fn running(&self) -> usize {
        self.running
    }

    fn ready(&mut self, i: usize, Readiness { readable, ended, writable }: Readiness) {
        let c = &mut self.clients[i];
        if c.sock.is_none() {
            return;
        }
        if readable && !matches!(c.phase, Phase::Reading | Phase::Handshaking) {
            c.unread = Some(ended || c.unread == Some(true));
        }
        match c.phase {
            Phase::Connecting if writable => {
                // As tokio decides a connect: the socket's pending error, else connected
                // (a later write or read then fails with its own class).
                match c.sock.as_ref().expect("checked above").take_error() {
                    Ok(Some(e)) | Err(e) => return self.refused(i, connect_failed(&e)),
                    Ok(None) => {}
                }
                if self.ctx.tls.is_some() {
                    return self.start_tls(i);
                }
                self.connected(i, Instant::now());
            }
            Phase::Handshaking => {
                // The rest of a flight the socket had no room for, then the server's.
                if writable {
                    self.send_tls(i);
                }
                if readable && matches!(self.clients[i].phase, Phase::Handshaking) {
                    self.read(i, ended);
                }
            }
            Phase::Writing { .. } if writable => self.write(i),
            Phase::Reading if readable => {
                let ended = ended || c.unread.take() == Some(true);
                self.read(i, ended)
            }
            _ => {}
        }
    }
}

struct Loop<'a> {
    ctx: &'a ThreadContext,
    addr: SocketAddr,
    ep: RawFd,
    clients: Vec<Client>,
    /// Clients to start their next request (after the events of this turn).
    todo: Vec<usize>,
    /// Clients not stopped.
    running: usize,
}

impl Client {
    fn new(ctx: &ThreadContext, now: Instant) -> Client {
        Client {
            sock: None,
            tls: None,
            phase: Phase::Idle,
            reader: Reader::new(ctx.cfg.protocol, ctx.cfg.keepalive, ctx.watch.clone(), &ctx.head_memo),
            lane: DirectLane::new(now),
            reused: false,
            tcp_done: now,
            raised: false,
            unread: None,
            uses: 0,
        }
    }
}

impl Loop<'_> {
    /// The next request of client `i`, or its end when the schedule says stop.
    fn begin(&mut self, i: usize) {
        if self.clients[i].lane.begin(self.ctx, i as u32, false) {
            self.attempt(i);
        } else {
            self.stop(i);
        }
    }

    /// Starts (or starts again, after a retry) the current request: connect if needed, write.
    fn attempt(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.reused = c.sock.is_some();
        if c.reused {
            c.lane.reuse();
            return self.write(i);
        }
        match connect(self.addr, &self.ctx.cfg.connect, pacer::pacing(&self.ctx.cfg)) {
            Ok(sock) => {
                if let Err(e) = watch(self.ep, &sock, i, libc::EPOLL_CTL_ADD) {
                    return self.refused(i, connect_failed(&e));
                }
                c.reader.reset();
                c.uses = 0;
                c.raised = false;
                c.sock = Some(sock);
                c.phase = Phase::Connecting;
            }
            Err(e) => self.refused(i, connect_failed(&e)),
        }
    }

    fn write(&mut self, i: usize) {
        let ctx = self.ctx;
        let c = &mut self.clients[i];
        let request = &ctx.cfg.request_bytes[c.lane.url];
        let mut done = match c.phase {
            Phase::Writing { written } => written,
            _ => {
                c.reader.start(ctx.head_request);
                if let Some(tls) = &mut c.tls {
                    // Into records at once; what is written below is rustls's to send.
                    tls.queue(request);
                }
                0
            }
        };
        let sock = c.sock.as_mut().expect("a connection to write on");
        let sent = match &mut c.tls {
            Some(tls) => tls.send(sock),
            None => write_some(sock, request, &mut done),
        };
        match sent {
            Ok(true) => {}
            Ok(false) => {
                c.phase = Phase::Writing { written: done };
                return;
            }
            Err(e) => return self.end(i, End::Failed(Cause::Write(e.kind()))),
        }
        c.lane.t.sent += request.len() as u64;
        c.lane.written_at = Instant::now();
        c.lane.first_byte = None;
        // The response comes with an event (edge-triggered: bytes that arrive from
        // now on make one), not with a read tried now that would find nothing —
        // unless an edge already came and was not read.
        c.phase = Phase::Reading;
        if let Some(ended) = c.unread.take() {
            self.read(i, ended);
        }
    }

    /// Reads what is there, as exchange.rs does: the first read at most HEAD_READ bytes
    /// when bodies are discarded, large rests of a body dropped in the kernel.
    fn read(&mut self, i: usize, ended: bool) {
        if self.clients[i].tls.is_some() {
            return self.read_tls(i, ended);
        }
        let ctx = self.ctx;
        let discard = ctx.cfg.discard_bodies;
        loop {
            let c = &mut self.clients[i];
            if !matches!(c.phase, Phase::Reading) {
                return;
            }
            let Some(sock) = c.sock.as_mut() else { return };
            let skippable = c.reader.skippable();
            if discard && skippable >= DISCARD_AT_LEAST {
                let fd = sock.as_raw_fd();
                let discarded = arrival::discard(fd, skippable.min(i32::MAX as u64) as usize);
                if c.raised && !matches!(&discarded, Err(e) if e.kind() == io::ErrorKind::WouldBlock) {
                    // Lowered before anything else is read: the next response's head
                    // would be held back under it (net.rs, poll_discard).
                    c.raised = false;
                    if let Err(e) = net::set_rcvlowat(fd, 1) {
                        return self.read_error(i, &e);
                    }
                }
                match discarded {
                    Ok((0, _)) => return self.eof(i),
                    Ok((n, now)) => {
                        c.lane.t.received += n as u64;
                        c.lane.first_byte.get_or_insert(now);
                        let progress = c.reader.skipped(n as u64);
                        if self.progressed(i, progress, now) {
                            if ended {
                                self.remember_unread(i, ended);
                            }
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if !c.raised {
                            // Wake once when the rest is in (net.rs, poll_discard).
                            if let Err(e) = net::raise_rcvlowat(fd, skippable.min(i32::MAX as u64) as usize) {
                                return self.read_error(i, &e);
                            }
                            c.raised = true;
                        }
                        return;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return self.read_error(i, &e),
                }
                continue;
            }
            let max = if discard && c.lane.first_byte.is_none() { HEAD_READ } else { SCRATCH_BYTES };
            let mut scratch = ctx.scratch.borrow_mut();
            match arrival::read(sock.as_raw_fd(), &mut scratch[..max]) {
                Ok((0, _)) => {
                    drop(scratch);
                    return self.eof(i);
                }
                Ok((n, now)) => {
                    // When the read's bytes landed: the first byte's time, and the end's
                    // when they end the response.
                    c.lane.t.received += n as u64;
                    c.lane.first_byte.get_or_insert(now);
                    let fed = c.reader.feed(&scratch[..n]);
                    drop(scratch);
                    match fed {
                        Ok(progress) => {
                            if self.progressed(i, progress, now) {
                                // Past this response: the peer's end, or more bytes behind a
                                // full read, are read once the next request is out.
                                if ended || n == max {
                                    self.remember_unread(i, ended);
                                }
                                return;
                            }
                        }
                        Err(e) => return self.end(i, End::Failed(Cause::Malformed(e))),
                    }
                    // A short read drained the socket: the next bytes bring an event.
                    if n < max && !ended {
                        return;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    drop(scratch);
                    return self.read_error(i, &e);
                }
            }
        }
    }

    /// Client `i`'s connection is open (and its TLS handshake done): the request goes.
    fn connected(&mut self, i: usize, now: Instant) {
        self.clients[i].lane.opened(now);
        self.write(i);
    }

    /// https: the TCP connect is done; the ClientHello goes.
    fn start_tls(&mut self, i: usize) {
        let tls = self.ctx.tls.as_ref().expect("https");
        let c = &mut self.clients[i];
        match Session::new(tls.connector.config(), &tls.name) {
            Ok(session) => c.tls = Some(Box::new(session)),
            Err(failure) => return self.refused(i, failure),
        }
        c.tcp_done = Instant::now();
        c.phase = Phase::Handshaking;
        self.send_tls(i);
        // An edge that came while connecting (the server's end, say) is not seen again.
        let c = &mut self.clients[i];
        if matches!(c.phase, Phase::Handshaking)
            && let Some(ended) = c.unread.take()
        {
            self.read(i, ended);
        }
    }

    /// Writes what the handshake has to send.
    fn send_tls(&mut self, i: usize) {
        let c = &mut self.clients[i];
        let (Some(sock), Some(tls)) = (c.sock.as_mut(), c.tls.as_mut()) else { return };
        if let Err(e) = tls.send(sock) {
            self.refused(i, tls::classify(&e));
        }
    }

    /// The connection of client `i` could not be opened: its request failed with `class`.
    fn refused(&mut self, i: usize, failure: Failure) {
        self.end(i, End::Failed(Cause::Refused(failure)));
    }

    /// Reads over TLS: the socket read whole into the thread's buffer, its records
    /// decrypted — the server's handshake flight (answered; at its end the request
    /// leaves on the same write as the client's last flight), or the response, whose
    /// plaintext goes to the reader. Bodies are read, not discarded: they are only in
    /// the records.
    fn read_tls(&mut self, i: usize, ended: bool) {
        let ctx = self.ctx;
        loop {
            let c = &mut self.clients[i];
            let (Some(sock), Some(tls)) = (c.sock.as_mut(), c.tls.as_mut()) else { return };
            let reader = &mut c.reader;
            let mut fed = Ok(Progress::More);
            let mut scratch = ctx.scratch.borrow_mut();
            let read = tls.read(sock, &mut scratch, |plain| {
                fed = match fed {
                    Ok(Progress::More) => reader.feed(plain),
                    // Plaintext behind a whole response (or a refused one).
                    Ok(Progress::Done(_)) => Err(ParseError::TrailingBytes),
                    Err(e) => Err(e),
                };
            });
            drop(scratch);
            let Took { n, landed, taken, handshaken } = match read {
                Ok(Some(took)) => took,
                Ok(None) => return,
                Err(Ending::Refused(failure)) => return self.refused(i, failure),
                // A clean close_notify or not, the reader says what the end means.
                Err(Ending::Eof) => return self.eof(i),
                Err(Ending::Failed(cause)) => return self.end(i, End::Failed(cause)),
            };
            // Bytes left behind this edge (or the server's end) are read once the
            // request is out.
            let behind = ended || taken.closed || n == SCRATCH_BYTES;
            if handshaken {
                // Its end when the client is done with the server's last flight (its
                // checks and keys included), as on the task loop.
                let now = Instant::now();
                let (tcp_us, tls_us) = (c.tcp_done - c.lane.connect_from, now - c.tcp_done);
                c.lane.t.handshake = Some(tls::handshake_of(tls.connection(), tcp_us, tls_us));
                if behind {
                    c.unread = Some(ended || taken.closed);
                }
                return self.connected(i, now);
            }
            if tls.handshaking() {
                if let Err(e) = tls.send(sock) {
                    return self.refused(i, tls::classify(&e));
                }
            } else if taken.plaintext > 0 {
                let now = landed;
                c.lane.t.received += taken.plaintext as u64;
                c.lane.first_byte.get_or_insert(now);
                match fed {
                    Ok(progress) => {
                        if self.progressed(i, progress, now) {
                            if behind {
                                self.remember_unread(i, ended || taken.closed);
                            }
                            return;
                        }
                    }
                    Err(e) => return self.end(i, End::Failed(Cause::Malformed(e))),
                }
            }
            if taken.closed {
                // close_notify: nothing more will come on this connection.
                return self.eof(i);
            }
            if n < SCRATCH_BYTES && !ended {
                return;
            }
        }
    }

    /// True when the response is complete (and client `i` has moved on).
    fn progressed(&mut self, i: usize, progress: Progress, now: Instant) -> bool {
        match progress {
            Progress::More => false,
            Progress::Done(done) => {
                self.end_at(i, End::Completed(done.status, done.close), now);
                true
            }
        }
    }

    /// The server ended the connection: the end of a body framed by it, or a failure.
    fn eof(&mut self, i: usize) {
        let end = match self.clients[i].reader.eof() {
            Ok(done) => End::Completed(done.status, true),
            Err(e) => End::Failed(Cause::Eof(e)),
        };
        self.end(i, end);
    }

    fn read_error(&mut self, i: usize, e: &io::Error) {
        self.end(i, End::Failed(Cause::Read(e.kind())));
    }

    fn end(&mut self, i: usize, end: End) {
        self.end_at(i, end, Instant::now());
    }

    /// The attempt of client `i` ended at `now`: retried, or recorded (direct_lane.rs)
    /// and the next one queued.
    fn end_at(&mut self, i: usize, end: End, now: Instant) {
        let ctx = self.ctx;
        let c = &mut self.clients[i];
        let outcome = match end {
            End::Failed(cause) => {
                let (retry_conn, nothing_yet) = (c.reused, !c.reader.started());
                self.close(i);
                match self.clients[i].lane.failed(cause, retry_conn, nothing_yet) {
                    Some(outcome) => outcome,
                    None => return self.attempt(i),
                }
            }
            End::Completed(status, close) => {
                c.lane.t.body += c.reader.body_bytes();
                c.uses += 1;
                if !rules::keep_open(&ctx.cfg, close, c.uses) {
                    self.close(i);
                }
                self.clients[i].lane.completed(status, now)
            }
        };
        let c = &mut self.clients[i];
        c.phase = Phase::Idle;
        if c.lane.record(ctx, &outcome, now, c.reader.captures()) {
            self.todo.push(i);
        } else {
            self.stop(i);
        }
    }

    /// Client `i` stopped (its lane says why): its connection closes.
    fn stop(&mut self, i: usize) {
        self.close(i);
        self.clients[i].phase = Phase::Idle;
        self.running -= 1;
    }

    /// An edge of client `i` not read to its end: read after its next request is written
    /// (if that request is on the same connection: `close` forgets it).
    fn remember_unread(&mut self, i: usize, ended: bool) {
        let c = &mut self.clients[i];
        if c.sock.is_some() {
            c.unread = Some(ended || c.unread == Some(true));
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.clients[i];
        // Closing the socket takes it out of the epoll set.
        c.sock = None;
        c.tls = None;
        c.unread = None;
        c.raised = false;
        c.reader.reset();
    }
}

/// Writes `request` from `done` on. Ok(true): all of it is out; Ok(false): the socket
/// is full (the rest waits for EPOLLOUT).
fn write_some(sock: &mut TcpStream, request: &[u8], done: &mut usize) -> io::Result<bool> {
    while *done < request.len() {
        match sock.write(&request[*done..]) {
            Ok(n) => *done += n,
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}
