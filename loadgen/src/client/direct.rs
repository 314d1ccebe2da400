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
//! response reader, the schedule and the statistics are shared, and the per-request
//! rules — the deadline, each failure's class, the one retry of a kept-alive
//! connection the server had closed, keep-alive after a response — are rules.rs's,
//! which both loops ask. Runs it cannot carry (`eligible`) run on the task loop;
//! STACKBENCH_LOAD_LOOP=tasks sends every run there (the A/B; the engine's tests run
//! their loads on both loops, tests/common/mod.rs).

use std::io::{self, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use super::arrival;
use super::pacer::{self, Pacer};
use super::context::{SCRATCH_BYTES, ThreadContext};
use super::direct_tls::Session;
use super::exchange::{DISCARD_AT_LEAST, HEAD_READ, failed};
use super::lane::Tally;
use super::rules::{self, Attempt, Cause, Deadline, Failure, Verdict, connect_failed};
use crate::config::Config;
use crate::uring::IoMode;
use crate::cpu::{self, CpuTimes};
use crate::net::{self, Endpoint};
use crate::protocol::reader::Protocol;
use crate::protocol::reading::{ParseError, Progress};
use crate::protocol::Reader;
use crate::schedule::{Next, Plan, Slot};
use crate::stats::{Outcome, Sample, Transfer};
use crate::tls;
use crate::urls::Shape;

/// `tasks`: every run on the task loop; anything else (`direct`): the default, the
/// direct loop where it carries the run.
pub const LOOP_ENV: &str = "STACKBENCH_LOAD_LOOP";

/// Whether this run is one the direct loop carries: closed loop, HTTP/1.1 over TCP
/// (clear or TLS) or HTTP/2 (direct_h2.rs) on epoll, one URL or a mix, all
/// connections from start to end (no stages), no slow readers. Everything else
/// (FastCGI, unix sockets, open loop, stages, page mode, --read-rate, io_uring) runs
/// on the task loop.
pub fn eligible(cfg: &Config, plan: &Plan) -> bool {
    std::env::var(LOOP_ENV).as_deref() != Ok("tasks")
        && cfg.io == IoMode::Epoll
        && matches!(cfg.endpoint, Endpoint::Tcp(_))
        && cfg.protocol == Protocol::Http
        && plan.rate.is_none()
        && plan.stages.is_empty()
        && matches!(cfg.shape, Shape::Single | Shape::Mix)
        && cfg.read_bytes_per_s.is_none()
}

/// Events taken from the kernel at a time.
const EVENTS: usize = 256;

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
    slot: Option<Slot>,
    url: usize,
    t: Transfer,
    /// The current attempt started on a connection already open (a kept-alive one).
    reused: bool,
    /// The one retry of a kept-alive connection closed by the server is still unused.
    may_retry: bool,
    connect_from: Instant,
    /// https: the TCP connect's end, the handshake's start.
    tcp_done: Instant,
    connected_at: Instant,
    connect_us: u64,
    written_at: Instant,
    first_byte: Option<Instant>,
    /// The low-water mark is raised for a discard (lowered before any other read).
    raised: bool,
    /// An edge said the socket was readable (Some(true): with the peer's end or an
    /// error) and nothing read it yet: it came while connecting or writing, or behind
    /// the bytes that ended the last response. Read as soon as the request is out —
    /// edge-triggered, that edge will not come again.
    unread: Option<bool>,
    /// Requests completed on this TCP connection (--keepalive-requests).
    uses: u32,
    /// The request fails with Timeout here (or is cut off: the run's end).
    deadline: Deadline,
    stopped: bool,
    tally: Tally,
}

/// How an attempt ended, for `Client::end`: a whole response (its status, and
/// whether it closes the connection), or what failed it (judged by rules.rs:
/// counted, or tried again on a new connection).
enum End {
    Completed(u16, bool),
    Failed(Cause),
}

/// The thread's clock and CPU time when counting started (if it did) and at its end.
pub type Samples = (Option<(Instant, CpuTimes)>, (Instant, CpuTimes));

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

/// A new epoll instance.
pub(super) fn epoll() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 returns a new descriptor (or -1), owned from here.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ep) })
}

/// What the loop asks of the connections it drives: the HTTP/1.1 clients here, the
/// HTTP/2 connections and their streams in direct_h2.rs.
pub(super) trait Machine {
    /// Starts what is queued (next requests) and writes what is pending.
    fn start_queued(&mut self);
    /// Something is queued: it failed at once (a refused connect) or ended in this turn
    /// (a timeout). The loop then polls epoll without waiting, so the others' events and
    /// the clock are still seen, and such a request fails as fast as it is refused.
    fn queued(&self) -> bool;
    /// Requests past their deadline: failed (Timeout), or cut off by the run's end.
    fn expire(&mut self, now: Instant);
    /// No request in flight has a deadline before this; every request begun from `now`
    /// on has a later one (its start + the timeout, or the run's end).
    fn next_deadline(&self, now: Instant) -> Instant;
    /// Clients not stopped.
    fn running(&self) -> usize;
    /// An epoll event for `token`.
    fn ready(&mut self, token: usize, flags: u32);
}

/// What an epoll event says of a socket.
pub(super) struct Readiness {
    /// Not on a bare EPOLLOUT: a read would find nothing.
    pub readable: bool,
    /// The peer's end (or an error) came on this edge: reads go on past a short read
    /// to reach it, no later edge would say it again.
    pub ended: bool,
    pub writable: bool,
}

impl Readiness {
    pub fn of(flags: u32) -> Readiness {
        Readiness {
            readable: flags & !(libc::EPOLLOUT as u32) != 0,
            ended: flags & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0,
            writable: flags & (libc::EPOLLOUT | libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0,
        }
    }
}

/// Watches `sock` in `ep` under `token` (`op`: EPOLL_CTL_ADD, or _MOD for a new token),
/// edge-triggered for reads, writes and the peer's end.
pub(super) fn watch(ep: RawFd, sock: &TcpStream, token: usize, op: i32) -> io::Result<()> {
    let mut ev = libc::epoll_event {
        events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET) as u32,
        u64: token as u64,
    };
    // SAFETY: a live socket of the caller's, an epoll descriptor of ours.
    if unsafe { libc::epoll_ctl(ep, op, sock.as_raw_fd(), &mut ev) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// One `epoll_wait` for up to EVENTS events, waiting up to `ms` (-1 with errno set).
fn poll(ep: RawFd, events: &mut [libc::epoll_event], ms: i32) -> i32 {
    // SAFETY: `events` has room for as many entries as it says.
    unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), events.len() as i32, ms) }
}

/// The earliest of the `deadlines` of the requests in flight; with none, the earliest
/// a request begun from `now` on can have.
pub(super) fn earliest(ctx: &ThreadContext, now: Instant, deadlines: impl Iterator<Item = Instant>) -> Instant {
    deadlines.min().unwrap_or_else(|| Deadline::of(now, ctx.cfg.timeout, ctx.run_end).at)
}

/// The loop: starts what is queued, checks deadlines when the earliest can have passed
/// (so a turn costs nothing per connection), waits for events, hands them out.
pub(super) fn drive(ctx: &ThreadContext, ep: RawFd, m: &mut impl Machine) -> io::Result<Samples> {
    let mut start = None;
    let mut next_check = Instant::now();
    let mut events = vec![libc::epoll_event { events: 0, u64: 0 }; EVENTS];
    let mut pacer = Pacer::for_run(next_check, &ctx.cfg);
    loop {
        m.start_queued();
        let now = Instant::now();
        if let Some(p) = pacer.as_mut() {
            p.saw(ctx.ended.get(), now);
        }
        if start.is_none() && now >= ctx.measure_start {
            start = Some((now, cpu::this_thread()));
            if let Some(p) = pacer.as_mut() {
                p.count_from_here();
            }
        }
        if now >= next_check {
            m.expire(now);
            next_check = m.next_deadline(now);
        }
        if m.running() == 0 {
            break;
        }
        // Also at the start of counting, to sample the thread's CPU there.
        let wake = if start.is_none() { next_check.min(ctx.measure_start) } else { next_check };
        let ms = if m.queued() {
            0
        } else {
            wake.saturating_duration_since(now).as_micros().div_ceil(1000).min(i32::MAX as u128) as i32
        };
        // Blocking has a price on loopback: a server whose next response finds us asleep
        // pays for the wake-up inside its write. While responses come fast, a short
        // timed sleep first (pacer.rs: by default where a read carries several HTTP/2
        // streams' responses); what landed is timed when it landed (arrival.rs).
        let mut n = 0;
        let mut slept = false;
        if let Some(p) = pacer.as_mut()
            && ms > 0
            && p.worth_it(m.running())
        {
            n = poll(ep, &mut events, 0);
            if n == 0 {
                p.sleep();
                slept = true;
                n = poll(ep, &mut events, 0);
                p.found(n.max(0) as u32);
            }
        }
        if pacer.is_some() {
            // A sleep that found nothing leaves nothing waiting: the next turn's reads
            // are a blocking wake-up's, at their own time.
            arrival::after_sleep(slept && n > 0);
        }
        if n == 0 {
            n = poll(ep, &mut events, ms);
        }
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        for ev in &events[..n as usize] {
            let flags = ev.events;
            m.ready(ev.u64 as usize, flags);
        }
    }
    ctx.stats.borrow_mut().waits = pacer.filter(|_| start.is_some()).map(|p| p.waits());
    Ok((start, (Instant::now(), cpu::this_thread())))
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
            let c = &self.clients[i];
            if c.stopped || c.slot.is_none() || now < c.deadline.at {
                continue;
            }
            if c.deadline.run_end {
                self.close(i);
                let slot = self.clients[i].slot.take().expect("checked");
                self.clients[i].phase = Phase::Idle;
                self.in_flight(i, &slot);
            } else {
                self.end(i, End::Failed(Cause::Timeout));
            }
        }
    }

    fn next_deadline(&self, now: Instant) -> Instant {
        earliest(self.ctx, now, self.clients.iter().filter(|c| !c.stopped && c.slot.is_some()).map(|c| c.deadline.at))
    }

    fn running(&self) -> usize {
        self.running
    }

    fn ready(&mut self, i: usize, flags: u32) {
        let c = &mut self.clients[i];
        if c.sock.is_none() {
            return;
        }
        let Readiness { readable, ended, writable } = Readiness::of(flags);
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
            slot: None,
            url: 0,
            t: Transfer::default(),
            reused: false,
            may_retry: true,
            connect_from: now,
            tcp_done: now,
            connected_at: now,
            connect_us: 0,
            written_at: now,
            first_byte: None,
            raised: false,
            unread: None,
            uses: 0,
            deadline: Deadline { at: now, run_end: false },
            stopped: false,
            tally: Tally::default(),
        }
    }
}

impl Loop<'_> {
    /// The next request of client `i`, or its end when the schedule says stop.
    fn begin(&mut self, i: usize) {
        let ctx = self.ctx;
        let c = &mut self.clients[i];
        // A closed loop without stages: a request at once, or the end (eligible()).
        let Next::Go(slot) = ctx.scheduler.next_closed(i as u32) else { return self.stop(i) };
        c.deadline = Deadline::of(slot.start, ctx.cfg.timeout, ctx.run_end);
        c.url = ctx.picker.pick();
        c.t = Transfer::default();
        c.may_retry = true;
        c.connect_from = slot.start;
        c.slot = Some(slot);
        self.attempt(i);
    }

    /// Starts (or starts again, after a retry) the current request: connect if needed, write.
    fn attempt(&mut self, i: usize) {
        let c = &mut self.clients[i];
        c.reused = c.sock.is_some();
        if c.reused {
            c.connect_us = 0;
            c.connected_at = c.slot.as_ref().map_or(c.connect_from, |s| s.start);
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
        let request = &ctx.cfg.request_bytes[c.url];
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
        c.t.sent += request.len() as u64;
        c.written_at = Instant::now();
        c.first_byte = None;
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
                        c.t.received += n as u64;
                        c.first_byte.get_or_insert(now);
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
            let max = if discard && c.first_byte.is_none() { HEAD_READ } else { SCRATCH_BYTES };
            let mut scratch = ctx.scratch.borrow_mut();
            match arrival::read(sock.as_raw_fd(), &mut scratch[..max]) {
                Ok((0, _)) => {
                    drop(scratch);
                    return self.eof(i);
                }
                Ok((n, now)) => {
                    // When the read's bytes landed: the first byte's time, and the end's
                    // when they end the response.
                    c.t.received += n as u64;
                    c.first_byte.get_or_insert(now);
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
        let c = &mut self.clients[i];
        c.connected_at = now;
        c.connect_us = now.saturating_duration_since(c.connect_from).as_micros() as u64;
        c.t.connections_opened += 1;
        self.write(i);
    }

    /// https: the TCP connect is done; the ClientHello goes.
    fn start_tls(&mut self, i: usize) {
        let tls = self.ctx.tls.as_ref().expect("https");
        let c = &mut self.clients[i];
        match Session::new(tls.connector.config(), &tls.name) {
            Ok(session) => c.tls = Some(Box::new(session)),
            Err(e) => return self.refused(i, tls::classify_tls(&e)),
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
            let handshaking = tls.handshaking();
            let mut scratch = ctx.scratch.borrow_mut();
            let (n, landed) = match read_all(sock, &mut scratch) {
                Ok(Some(read)) => read,
                Ok(None) => return,
                Err(e) => {
                    drop(scratch);
                    return if handshaking {
                        // The server closed or reset during the handshake (tls::classify).
                        self.refused(i, tls::classify(&e))
                    } else if e.kind() == io::ErrorKind::UnexpectedEof {
                        // A clean close_notify or not, the reader says what the end means.
                        self.eof(i)
                    } else {
                        self.read_error(i, &e)
                    };
                }
            };
            let reader = &mut c.reader;
            let mut fed = Ok(Progress::More);
            // No plaintext before the handshake's end (no early data is offered).
            let taken = tls.take(&scratch[..n], |plain| {
                fed = match fed {
                    Ok(Progress::More) => reader.feed(plain),
                    // Plaintext behind a whole response (or a refused one).
                    Ok(Progress::Done(_)) => Err(ParseError::TrailingBytes),
                    Err(e) => Err(e),
                };
            });
            drop(scratch);
            let taken = match taken {
                Ok(taken) => taken,
                Err(e) if handshaking => {
                    // The alert rustls queued for the server, if the socket takes it.
                    let _ = tls.send(sock);
                    return self.refused(i, tls::classify_tls(&e));
                }
                // A bad record: the stream is unreadable, as a failed read on the task loop.
                Err(_) => return self.end(i, End::Failed(Cause::BadRecord)),
            };
            // Bytes left behind this edge (or the server's end) are read once the
            // request is out.
            let behind = ended || taken.closed || n == SCRATCH_BYTES;
            if handshaking {
                if !tls.handshaking() {
                    // Its end when the client is done with the server's last flight
                    // (its checks and keys included), as on the task loop.
                    let now = Instant::now();
                    c.t.handshake = Some(tls::handshake_of(tls.connection(), c.tcp_done - c.connect_from, now - c.tcp_done));
                    if behind {
                        c.unread = Some(ended || taken.closed);
                    }
                    return self.connected(i, now);
                }
                if taken.closed {
                    return self.refused(i, tls::classify(&io::ErrorKind::UnexpectedEof.into()));
                }
                if let Err(e) = tls.send(sock) {
                    return self.refused(i, tls::classify(&e));
                }
            } else if taken.plaintext > 0 {
                let now = landed;
                c.t.received += taken.plaintext as u64;
                c.first_byte.get_or_insert(now);
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

    /// The attempt of client `i` ended at `now`: retried, or recorded (lane.rs) and the
    /// next one queued.
    fn end_at(&mut self, i: usize, end: End, now: Instant) {
        let ctx = self.ctx;
        let c = &mut self.clients[i];
        let outcome = match end {
            End::Failed(cause) => {
                let attempt = Attempt { may_retry: c.reused && c.may_retry, nothing_yet: !c.reader.started() };
                self.close(i);
                match rules::judge(cause, attempt) {
                    Verdict::Retry => {
                        let c = &mut self.clients[i];
                        c.may_retry = false;
                        c.connect_from = now;
                        return self.attempt(i);
                    }
                    Verdict::Failed(failure) => failed(&mut self.clients[i].t, failure),
                }
            }
            End::Completed(status, close) => {
                c.t.body += c.reader.body_bytes();
                c.uses += 1;
                if !rules::keep_open(&ctx.cfg, close, c.uses) {
                    self.close(i);
                }
                let c = &self.clients[i];
                let slot = c.slot.as_ref().expect("a request in flight");
                let (first_byte, end) = arrival::bounded(c.written_at, c.first_byte, now);
                Outcome::Completed(Sample::timed(status, slot.intended, slot.start, end, c.connect_us, c.written_at,
                                                 first_byte, c.connected_at))
            }
        };
        let c = &mut self.clients[i];
        c.phase = Phase::Idle;
        let slot = c.slot.take().expect("a request in flight");
        if !rules::counted(now, ctx.run_end) {
            // Answered after the end of the run: not counted, the window stays exact.
            return self.in_flight(i, &slot);
        }
        c.tally.record(ctx, &slot, c.url, &outcome, &c.t, now, Some(c.reader.captures()));
        self.todo.push(i);
    }

    /// A request still unanswered at the run's end: counted in `in_flight_at_end`, and
    /// the client stops (lane.rs, Fate::InFlight).
    fn in_flight(&mut self, i: usize, slot: &Slot) {
        self.clients[i].tally.in_flight(self.ctx, slot);
        self.stop(i);
    }

    fn stop(&mut self, i: usize) {
        self.close(i);
        let c = &mut self.clients[i];
        if !c.stopped {
            c.stopped = true;
            self.running -= 1;
            c.tally.finish(self.ctx);
        }
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

/// One read of what the socket holds, up to `buf`'s size: Some(bytes read, when they
/// landed), None (nothing there: an edge will say when), or the end of stream as
/// UnexpectedEof.
pub(super) fn read_all(sock: &mut TcpStream, buf: &mut [u8]) -> io::Result<Option<(usize, Instant)>> {
    loop {
        return match arrival::read(sock.as_raw_fd(), buf) {
            Ok((0, _)) => Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(read) => Ok(Some(read)),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => Err(e),
        };
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

/// A non-blocking TCP connect (in progress or done), with the run's socket options.
/// `stamped`: the loop may sleep (pacer.rs), so its responses may wait and need the
/// kernel's arrival stamp (every stamp is taken on the sender's core: the server's).
pub(super) fn connect(addr: SocketAddr, opts: &net::ConnectOptions, stamped: bool) -> io::Result<TcpStream> {
    let domain = if addr.is_ipv4() { socket2::Domain::IPV4 } else { socket2::Domain::IPV6 };
    let socket = socket2::Socket::new(domain, socket2::Type::STREAM.nonblocking().cloexec(), None)?;
    if let Some(bytes) = opts.rcvbuf {
        // Before connect(): the window scale is fixed in the SYN (net.rs, connect_tcp).
        socket.set_recv_buffer_size(bytes as usize)?;
    }
    if opts.nodelay {
        socket.set_tcp_nodelay(true)?;
    }
    if stamped {
        arrival::stamp(socket.as_raw_fd())?;
    }
    match socket.connect(&addr.into()) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EINPROGRESS) => {}
        Err(e) => return Err(e),
    }
    Ok(socket.into())
}
