//! The clock probe (`--clock`), the synchronised start (`--start-at`), and the
//! remote engine's lifeline (`--watch-stdin`).
//!
//! A lab driving engines on several hosts asks each host's clock over its own
//! channel (SSH): it writes a line, this answers with the wall clock, and the lab keeps
//! the round trip with the least delay (its offset is known to ± half that round trip,
//! as in NTP). It then gives every engine the same instant, in that engine's clock.

use std::io::{BufRead, Write};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Answers each stdin line with `now_unix_us`, until stdin closes.
pub fn serve() -> std::io::Result<()> {
    let stdin = std::io::stdin();
    let mut out = std::io::stdout().lock();
    for line in stdin.lock().lines() {
        line?;
        writeln!(out, "{}", now_unix_us())?;
        out.flush()?;
    }
    Ok(())
}

/// `--watch-stdin`: a thread watches stdin and the parent; when stdin reaches its end,
/// or the process that started the engine is gone (it was re-parented), the process
/// ends (exit status 1, a line on stderr). Over SSH the parent is sshd's session and
/// stdin its channel: a lab that dies takes its master connection along, and either
/// tells the engine, five times a second at most.
pub fn exit_when_stdin_closes() {
    // SAFETY: getppid has no preconditions.
    let parent = unsafe { libc::getppid() };
    std::thread::spawn(move || {
        let mut sink = [0u8; 512];
        let why = loop {
            let mut fd = libc::pollfd { fd: 0, events: libc::POLLIN, revents: 0 };
            // SAFETY: one valid pollfd, for the duration of the call.
            let ready = unsafe { libc::poll(&mut fd, 1, 200) };
            if ready > 0 {
                // SAFETY: reads into a buffer of the length given.
                let n = unsafe { libc::read(0, sink.as_mut_ptr().cast(), sink.len()) };
                if n == 0 || (n < 0 && std::io::Error::last_os_error().kind() != std::io::ErrorKind::Interrupted) {
                    break "stdin closed";
                }
            }
            // SAFETY: as above.
            if unsafe { libc::getppid() } != parent {
                break "its parent is gone";
            }
        };
        // Not eprintln!: with the lab gone stderr has no reader either, and eprintln!
        // panics on the error — a panic that would end this thread, not the load.
        let _ = writeln!(std::io::stderr(), "stackbench-load: {why} (--watch-stdin): stopping");
        std::process::exit(1);
    });
}

pub fn now_unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Sleeps until the wall clock reaches `at_unix_us` and returns when it did (µs since
/// the epoch). A sleep ends up to the timer slack late (50 µs by default), so the
/// slack is set to 1 ns and the last 2 ms are spun. Without the spin, engines on
/// different cores began 50–200 µs apart in the median, with it 0 µs; engines sharing
/// one core 0.2 ms (at worst 1.8 ms: the second waits for the first to yield the
/// core), 1.5 ms without (bench/multi-host, bench/RESULTS.md).
pub fn wait_until(at_unix_us: u64) -> u64 {
    const SPIN: u64 = 2_000;
    // SAFETY: PR_SET_TIMERSLACK takes a value and touches only this thread's settings.
    unsafe {
        libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0);
    }
    let now = now_unix_us();
    if at_unix_us > now + SPIN {
        std::thread::sleep(Duration::from_micros(at_unix_us - now - SPIN));
    }
    loop {
        let now = now_unix_us();
        if now >= at_unix_us {
            return now;
        }
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_until_the_instant_and_not_much_longer() {
        let at = now_unix_us() + 20_000;
        let began = wait_until(at);
        assert!(began >= at && began - at < 5_000, "began {} µs late", began.saturating_sub(at));
    }

    #[test]
    fn an_instant_already_past_starts_at_once() {
        let at = now_unix_us() - 1_000_000;
        assert!(wait_until(at) - at >= 1_000_000);
    }
}
