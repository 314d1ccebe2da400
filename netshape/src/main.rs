//! stackbench-netshape: a link with delay, jitter, loss and a rate limit between two
//! network namespaces, emulated in user space on two TUN devices — for kernels without
//! netem (this lab's has none, and cannot load modules).
//!
//! parse arguments → open both TUN devices (each in its namespace) → one thread per
//! direction → report on stderr until SIGTERM/SIGINT → final summary.
//! Exit status: 0 stopped by a signal, 1 fatal (a device failed), 2 usage.

mod cli;
mod forward;
mod line;
mod link;
mod rng;
mod shape;
mod stats;
mod tun;

use std::io::Write;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::thread::JoinHandle;

use forward::{Direction, now_ns};
use stats::{DirStats, cpu_seconds, json_str};

/// How often the main thread looks at the workers when no stats line is due.
const CHECK_NS: u64 = 200_000_000;

fn main() {
    let opts = match cli::parse(std::env::args().skip(1)) {
        Ok(cli::Parsed::Run(o)) => o,
        Ok(cli::Parsed::Help) => {
            println!("{}", cli::USAGE);
            return;
        }
        Ok(cli::Parsed::Version) => {
            println!("stackbench-netshape {}", env!("CARGO_PKG_VERSION"));
            return;
        }
        Err(e) => fail(2, &e),
    };
    // Blocked here, before any thread starts, so every thread inherits the mask and the
    // signals wait for sigtimedwait in this thread: no async handler, no lost signal.
    let signals = block_signals();
    let a = tun::open_in(&opts.a.netns, &opts.a.tun).unwrap_or_else(|e| fail(1, &e));
    let b = tun::open_in(&opts.b.netns, &opts.b.tun).unwrap_or_else(|e| fail(1, &e));
    let wake = eventfd().unwrap_or_else(|e| fail(1, &e));
    let seed = opts.seed.unwrap_or_else(|| now_ns() ^ ((std::process::id() as u64) << 32));
    let stop = Arc::new(AtomicBool::new(false));
    let (ab, ba) = (Arc::new(DirStats::default()), Arc::new(DirStats::default()));
    let spawn = |src: &OwnedFd, dst: &OwnedFd, shape: &shape::Shape, stats: &Arc<DirStats>, seed: u64, name: &str| {
        let dir = Direction {
            src: src.as_raw_fd(),
            dst: dst.as_raw_fd(),
            wake: wake.as_raw_fd(),
            link: link::Link::new(shape.clone(), seed),
            stats: stats.clone(),
            spin_ns: opts.spin_ns,
            stop: stop.clone(),
        };
        std::thread::Builder::new().name(name.into()).spawn(move || dir.run()).expect("spawn a thread")
    };
    // Two streams from one seed: each direction's losses do not depend on the other's traffic.
    let workers = [
        spawn(&a, &b, &opts.a_to_b, &ab, seed, "a-to-b"),
        spawn(&b, &a, &opts.b_to_a, &ba, seed ^ 0x5DEE_CE66_D1CE_4E5B, "b-to-a"),
    ];
    emit(&format!(
        "{{\"event\":\"attached\",\"pid\":{},\"seed\":{seed},\"a\":{},\"b\":{},\"a_to_b\":{},\"b_to_a\":{}}}",
        std::process::id(),
        json_str(&format!("{}:{}", opts.a.netns.display(), opts.a.tun)),
        json_str(&format!("{}:{}", opts.b.netns.display(), opts.b.tun)),
        json_str(&opts.a_to_b.describe()),
        json_str(&opts.b_to_a.describe()),
    ));
    let started = now_ns();
    let mut seq = 0u64;
    let mut report = |event: &str, extra: &str| {
        seq += 1;
        let (user, sys) = cpu_seconds();
        emit(&format!(
            "{{\"event\":\"{event}\",\"seq\":{seq},\"t_s\":{:.3},\"cpu_user_s\":{user:.3},\"cpu_sys_s\":{sys:.3},\"a_to_b\":{},\"b_to_a\":{}{extra}}}",
            (now_ns() - started) as f64 / 1e9,
            ab.json(),
            ba.json()
        ));
    };
    let mut next_stats = opts.stats_every_ns.map(|every| started + every);
    let why = loop {
        // A worker ends before the stop flag only on a fatal error: stop and report it.
        if workers.iter().any(|h| h.is_finished()) {
            break "error";
        }
        let now = now_ns();
        let wait = next_stats.map_or(CHECK_NS, |t| t.saturating_sub(now).min(CHECK_NS));
        match wait_signal(&signals, wait) {
            Some(libc::SIGUSR1) => report("stats", ""),
            Some(_) => break "signal",
            None => {}
        }
        if let (Some(t), Some(every)) = (next_stats, opts.stats_every_ns) {
            if now_ns() >= t {
                report("stats", "");
                next_stats = Some(t + every);
            }
        }
    };
    stop.store(true, Relaxed);
    let one: u64 = 1;
    unsafe { libc::write(wake.as_raw_fd(), (&one as *const u64).cast(), 8) };
    let errors: Vec<String> = workers.into_iter().filter_map(|h: JoinHandle<Result<(), String>>| match h.join() {
        Ok(Ok(())) => None,
        Ok(Err(e)) => Some(e),
        Err(_) => Some("a forwarding thread panicked".into()),
    }).collect();
    let error = errors.first().map_or(String::new(), |e| format!(",\"error\":{}", json_str(e)));
    report("summary", &format!(",\"exit\":\"{why}\"{error}"));
    if let Some(e) = errors.first() {
        fail(1, e);
    }
}

/// One line on stderr, flushed at once (the lab reads it while we run).
fn emit(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = writeln!(err, "{line}");
    let _ = err.flush();
}

fn fail(status: i32, message: &str) -> ! {
    emit(&format!("stackbench-netshape: error: {message}"));
    std::process::exit(status);
}

fn block_signals() -> libc::sigset_t {
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for sig in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP, libc::SIGUSR1] {
            libc::sigaddset(&mut set, sig);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        set
    }
}

/// The signal that arrived within `timeout_ns`, if any.
fn wait_signal(set: &libc::sigset_t, timeout_ns: u64) -> Option<i32> {
    let ts = libc::timespec { tv_sec: (timeout_ns / 1_000_000_000) as _, tv_nsec: (timeout_ns % 1_000_000_000) as _ };
    let sig = unsafe { libc::sigtimedwait(set, std::ptr::null_mut(), &ts) };
    (sig > 0).then_some(sig)
}

fn eventfd() -> Result<OwnedFd, String> {
    let fd = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) };
    if fd < 0 {
        return Err(format!("eventfd failed: {}", std::io::Error::last_os_error()));
    }
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
