//! The clock probe (`--clock`) and the synchronised start (`--start-at`).
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

pub fn now_unix_us() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_micros() as u64)
}

/// Sleeps until the wall clock reaches `at_unix_us` and returns when it did (µs since
/// the epoch). The last 2 ms are spun: a sleep overshoots by 50–100 µs, which would
/// be most of the synchronisation error between engines on one host. It does not
/// yield the core while it spins: engines sharing one (a lab's local clients) then
/// began 1.5 ms apart in the median, since a yield hands the core to the lab's own
/// threads for a whole slice; spinning, 0.24 ms (bench/multi-host).
pub fn wait_until(at_unix_us: u64) -> u64 {
    const SPIN: u64 = 2_000;
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
