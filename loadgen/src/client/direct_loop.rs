//! The direct loop's turn, for both of its machines — the HTTP/1.1 clients
//! (direct.rs) and the HTTP/2 connections with their stream slots (direct_h2.rs):
//! which runs it carries (`eligible`), its own epoll instance and wait, deadlines
//! checked only when the earliest can have passed, coalesced waits (pacer.rs), and
//! the non-blocking connect its sockets start with.

use std::io;
use std::net::{SocketAddr, TcpStream};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Instant;

use super::arrival;
use super::context::ThreadContext;
use super::pacer::Pacer;
use super::rules::Deadline;
use crate::config::Config;
use crate::cpu::{self, CpuTimes};
use crate::net::{self, Endpoint};
use crate::protocol::reader::Protocol;
use crate::schedule::Plan;
use crate::uring::IoMode;
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

/// The thread's clock and CPU time when counting started (if it did) and at its end.
pub type Samples = (Option<(Instant, CpuTimes)>, (Instant, CpuTimes));

/// A new epoll instance.
pub fn epoll() -> io::Result<OwnedFd> {
    // SAFETY: epoll_create1 returns a new descriptor (or -1), owned from here.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a new descriptor nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(ep) })
}

/// What the loop asks of the connections it drives: the HTTP/1.1 clients of direct.rs,
/// the HTTP/2 connections and their streams of direct_h2.rs.
pub trait Machine {
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
    fn ready(&mut self, token: usize, readiness: Readiness);
}

/// What an epoll event says of a socket.
pub struct Readiness {
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
pub fn watch(ep: RawFd, sock: &TcpStream, token: usize, op: i32) -> io::Result<()> {
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
pub fn earliest(ctx: &ThreadContext, now: Instant, deadlines: impl Iterator<Item = Instant>) -> Instant {
    deadlines.min().unwrap_or_else(|| Deadline::of(now, ctx.cfg.timeout, ctx.run_end).at)
}

/// The loop: starts what is queued, checks deadlines when the earliest can have passed
/// (so a turn costs nothing per connection), waits for events, hands them out.
pub fn drive(ctx: &ThreadContext, ep: RawFd, m: &mut impl Machine) -> io::Result<Samples> {
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
            m.ready(ev.u64 as usize, Readiness::of(flags));
        }
    }
    ctx.stats.borrow_mut().waits = pacer.filter(|_| start.is_some()).map(|p| p.waits());
    Ok((start, (Instant::now(), cpu::this_thread())))
}

/// A non-blocking TCP connect (in progress or done), with the run's socket options.
/// `stamped`: the loop may sleep (pacer.rs), so its responses may wait and need the
/// kernel's arrival stamp (every stamp is taken on the sender's core: the server's).
pub fn connect(addr: SocketAddr, opts: &net::ConnectOptions, stamped: bool) -> io::Result<TcpStream> {
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
