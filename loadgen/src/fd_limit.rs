//! File descriptors for 10,000+ connections. Each connection holds one socket, and
//! the soft limit on open files (`ulimit -n`) is often 1024 even where the hard
//! limit allows far more. So at start, when the run needs more than the soft
//! limit, the engine raises it to the hard limit (an unprivileged process may, see
//! setrlimit(2)); when even the hard limit is too low it refuses the run with
//! advice, instead of counting thousands of EMFILE failures as connect errors.

use crate::config::Config;
use crate::error::Error;
use crate::urls::Shape;

/// Descriptors each engine thread's event loop holds: measured with
/// `ls /proc/PID/fd` on Linux (tokio 1.x current-thread runtime with I/O and
/// time): two epoll instances and one eventfd per thread.
const PER_THREAD: u64 = 3;
/// Room for what the process opens on its way (reading /proc/self/fd, say) and for
/// what the estimate does not know about.
const SPARE: u64 = 8;
/// Descriptors assumed open at start when /proc/self/fd cannot be read (stdio).
const STDIO: u64 = 3;

/// What to do about the soft limit.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Decision {
    Enough,
    /// Raise the soft limit to this.
    Raise(libc::rlim_t),
    /// Even the hard limit is too low.
    TooLow,
}

/// Raises the soft RLIMIT_NOFILE if the run needs it; a usage error if it cannot.
pub fn ensure(cfg: &Config) -> Result<(), Error> {
    let need = needed(cfg, open_now());
    let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: getrlimit writes one rlimit into the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } != 0 {
        // Unknowable: let the run go; EMFILE would show as connect errors.
        return Ok(());
    }
    match decide(need, limit.rlim_cur, limit.rlim_max) {
        Decision::Enough => Ok(()),
        Decision::Raise(to) => {
            let raised = libc::rlimit { rlim_cur: to, rlim_max: limit.rlim_max };
            // SAFETY: setrlimit reads one rlimit from a struct we own.
            if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } == 0 {
                Ok(())
            } else {
                Err(Error::Fatal(format!(
                    "cannot raise the open-file limit (ulimit -n) from {} to {to}: {}",
                    limit.rlim_cur,
                    std::io::Error::last_os_error()
                )))
            }
        }
        Decision::TooLow => Err(Error::Usage(too_low(cfg, need, limit.rlim_max))),
    }
}

/// Descriptors the run needs at most at once: one socket per connection, the event
/// loops, what is already open, and a little spare.
fn needed(cfg: &Config, open_now: u64) -> u64 {
    cfg.sockets() + PER_THREAD * u64::from(cfg.threads) + open_now + SPARE
}

/// Descriptors open now (stdio and whatever the parent passed on).
fn open_now() -> u64 {
    std::fs::read_dir("/proc/self/fd").map_or(STDIO, |dir| dir.count() as u64)
}

// rlim_t is u64 on 64-bit Linux, but not on every target the libc crate knows.
#[allow(clippy::unnecessary_cast)]
fn decide(need: u64, soft: libc::rlim_t, hard: libc::rlim_t) -> Decision {
    let fits = |limit: libc::rlim_t| limit == libc::RLIM_INFINITY || need <= limit as u64;
    if fits(soft) {
        Decision::Enough
    } else if hard == libc::RLIM_INFINITY {
        // Linux refuses an infinite RLIMIT_NOFILE (it is capped by fs.nr_open):
        // ask for what is needed.
        Decision::Raise(need as libc::rlim_t)
    } else if fits(hard) {
        Decision::Raise(hard)
    } else {
        Decision::TooLow
    }
}

fn too_low(cfg: &Config, need: u64, hard: libc::rlim_t) -> String {
    let what = match cfg.shape {
        Shape::Page { conns } | Shape::Visit { conns } => format!("-c {} × --page-conns {conns}", cfg.connections),
        _ => format!("-c {}", cfg.connections),
    };
    format!(
        "{what} needs about {} file descriptors; this process may open at most {hard} (ulimit -n): lower -c or \
         raise the limit",
        thousands(need)
    )
}

/// 30022 → "30,022".
fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (k, c) in digits.chars().enumerate() {
        if k > 0 && (digits.len() - k) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::from_words;

    #[test]
    fn decides_from_the_need_and_both_limits() {
        assert_eq!(decide(1000, 1024, 4096), Decision::Enough);
        assert_eq!(decide(1024, 1024, 4096), Decision::Enough);
        assert_eq!(decide(1025, 1024, 4096), Decision::Raise(4096));
        assert_eq!(decide(4097, 1024, 4096), Decision::TooLow);
        assert_eq!(decide(50_000, 1024, libc::RLIM_INFINITY), Decision::Raise(50_000));
        assert_eq!(decide(50_000, libc::RLIM_INFINITY, libc::RLIM_INFINITY), Decision::Enough);
    }

    #[test]
    fn counts_connections_threads_and_what_is_open() {
        let cfg = from_words(&["-c", "30000", "-t", "2", "http://127.0.0.1:1/"]).unwrap();
        assert_eq!(needed(&cfg, 3), 30_000 + 6 + 3 + SPARE);
        let page = from_words(&["-c", "100", "--page", "/", "--assets", "/a", "http://127.0.0.1:1"]).unwrap();
        assert_eq!(page.sockets(), 600);
        assert_eq!(
            too_low(&cfg, 30_017, 20_000),
            "-c 30000 needs about 30,017 file descriptors; this process may open at most 20000 (ulimit -n): lower \
             -c or raise the limit"
        );
        assert!(too_low(&page, 617, 256).starts_with("-c 100 × --page-conns 6 needs about 617 "));
    }

    #[test]
    fn groups_thousands() {
        for (n, text) in [(0, "0"), (999, "999"), (1000, "1,000"), (30_022, "30,022"), (1_234_567, "1,234,567")] {
            assert_eq!(thousands(n), text);
        }
    }
}
