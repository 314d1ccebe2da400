//! Creating a thread's ring, and the probe that decides, once per run, whether the
//! io_uring path can run at all (else the run falls back to epoll, saying why).
//!
//! Set-up flags (measured, see loadgen/README.md "I/O path"): SINGLE_ISSUER (one
//! thread per ring), COOP_TASKRUN (completions are run when the thread next
//! enters the kernel instead of interrupting it) and TASKRUN_FLAG (the ring says
//! when such work waits, so an enter is made only then). DEFER_TASKRUN runs that
//! work only in an io_uring_enter with GETEVENTS and never wakes the ring fd's
//! pollers, so with it the thread waits on an eventfd the kernel signals instead.

use std::io;
use std::os::fd::{FromRawFd, OwnedFd};

use io_uring::IoUring;

use super::bufs::BufRing;

/// Receive buffers: as large as the epoll path's read buffer (a large body in few
/// completions). Only the pages a response fills are touched, so small responses
/// keep the resident size small whatever the count.
pub const BUFFER_BYTES: u32 = 64 * 1024;

/// Test hook (and a way to compare without editing sysctls): when set to an errno
/// number, the ring's set-up fails with it, as on a kernel with io_uring disabled.
pub const FAIL_ENV: &str = "STACKBENCH_LOAD_URING_SETUP_ERRNO";

/// Experiments only: `coop` (default), `defer`, `plain` (no flags).
const FLAVOUR_ENV: &str = "STACKBENCH_LOAD_URING_FLAVOUR";

/// How the driver learns that completions wait.
pub enum Notify {
    /// The ring fd polls readable when its CQ is not empty.
    RingFd,
    /// DEFER_TASKRUN: an eventfd registered with the ring.
    EventFd(OwnedFd),
}

pub struct Built {
    pub uring: IoUring,
    pub notify: Notify,
    pub buffers: u16,
    pub buffer_bytes: u32,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Flavour {
    Coop,
    Defer,
    Plain,
}

fn flavour() -> Flavour {
    match std::env::var(FLAVOUR_ENV).as_deref() {
        Ok("defer") => Flavour::Defer,
        Ok("plain") => Flavour::Plain,
        _ => Flavour::Coop,
    }
}

/// Multishot receives (armed once per connection) unless the connections are slow
/// readers: a multishot receive drains the socket into the shared buffers as fast
/// as data comes, which would defeat --read-rate's closed window.
/// Experiments: STACKBENCH_LOAD_URING_RECV=single|multi.
pub fn multishot(slow_readers: bool) -> bool {
    match std::env::var("STACKBENCH_LOAD_URING_RECV").as_deref() {
        Ok("single") => false,
        Ok("multi") => !slow_readers,
        _ => !slow_readers,
    }
}

/// A ring for a thread running `connections` connections.
pub fn build(connections: u32) -> io::Result<Built> {
    if let Some(errno) = std::env::var(FAIL_ENV).ok().and_then(|v| v.parse::<i32>().ok()) {
        return Err(io::Error::from_raw_os_error(errno));
    }
    // Room for a send and a receive per connection in one pass; a fuller queue is
    // submitted early (ring.rs), never lost.
    let sq = (connections.saturating_mul(2)).clamp(64, 4096).next_power_of_two();
    let flavour = flavour();
    let mut builder = IoUring::builder();
    builder.setup_cqsize(sq * 4);
    match flavour {
        Flavour::Coop => {
            builder.setup_single_issuer().setup_coop_taskrun().setup_taskrun_flag();
        }
        Flavour::Defer => {
            builder.setup_single_issuer().setup_defer_taskrun().setup_taskrun_flag();
        }
        Flavour::Plain => {}
    }
    let uring = match builder.build(sq) {
        Ok(u) => u,
        // An older kernel that does not know a flag: the plain set-up still works.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && flavour != Flavour::Plain => {
            IoUring::builder().setup_cqsize(sq * 4).build(sq)?
        }
        Err(e) => return Err(e),
    };
    let notify = if uring.params().is_setup_single_issuer() && flavour == Flavour::Defer {
        // SAFETY: eventfd returns a new fd we own (or -1).
        let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: fd is valid and ours.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        uring.submitter().register_eventfd(std::os::fd::AsRawFd::as_raw_fd(&fd))?;
        Notify::EventFd(fd)
    } else {
        Notify::RingFd
    };
    // A receive's bytes are copied out (and the buffer given back) when its task
    // next runs, so buffers in use at once are about the connections answered in
    // one pass (a large body: a few each). Each buffer used touches at least a page,
    // and the kernel takes them round the ring: 512 × 4 KB is the resident floor
    // under many connections. More arrivals at once than buffers: those receives
    // are asked again with the next pass (stream.rs), never given a buffer of their own.
    let buffers = connections.saturating_mul(4).clamp(64, 512).next_power_of_two() as u16;
    Ok(Built { uring, notify, buffers, buffer_bytes: BUFFER_BYTES })
}

/// The most connections one engine thread runs on the io_uring path: as many as its
/// shared receive buffers (512). Above it, arrivals outnumber the buffers, receives
/// come back ENOBUFS and are asked again, and at 10,000 connections 2,923 of them
/// went without a response in 4 s where epoll served all (bench/RESULTS.md, "I/O
/// path"): the engine, not the server, would fail them.
pub const MAX_CONNECTIONS_PER_THREAD: u32 = 512;

/// Why the io_uring path will not run `per_thread` connections a thread, if it will not.
pub fn refusal(per_thread: u32) -> Option<String> {
    (per_thread > MAX_CONNECTIONS_PER_THREAD).then(|| {
        format!(
            "the io_uring path runs at most {MAX_CONNECTIONS_PER_THREAD} connections a thread (its shared receive \
             buffers), this run {per_thread}: the run used epoll (add threads with -t to keep io_uring)"
        )
    })
}

/// Whether this process can run the io_uring path: a small ring with a provided
/// buffer ring (Linux 5.19+) is set up and dropped. Err: the sentence saying why not.
pub fn probe() -> Result<(), String> {
    let attempt = build(1).and_then(|built| {
        let bufs = BufRing::register(&built.uring, 16, 4096)?;
        drop(built); // the ring first: the kernel lets go of the buffers
        drop(bufs);
        Ok(())
    });
    attempt.map_err(|e| {
        let sysctl = std::fs::read_to_string("/proc/sys/kernel/io_uring_disabled")
            .ok()
            .map(|v| format!(", kernel.io_uring_disabled = {}", v.trim()))
            .unwrap_or_default();
        format!("io_uring is not available here ({e}{sysctl}): the run used epoll")
    })
}
