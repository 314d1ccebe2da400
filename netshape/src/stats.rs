//! Counters of one direction, shared between its forwarding thread (which adds) and the
//! main thread (which prints), and the JSON lines printed on stderr.

use std::sync::atomic::{AtomicU64, Ordering::Relaxed};

/// Upper bounds (µs) of the lateness buckets: how long after its due time a packet was
/// written. This is the forwarder's own timing error, reported so that a run can show it.
const LATE_BOUNDS_US: [u64; 10] = [10, 25, 50, 100, 250, 500, 1000, 2500, 5000, u64::MAX];

#[derive(Default)]
pub struct DirStats {
    pub received: AtomicU64,
    pub received_bytes: AtomicU64,
    pub packets: AtomicU64,
    pub bytes: AtomicU64,
    pub dropped_loss: AtomicU64,
    pub dropped_queue: AtomicU64,
    pub dropped_line: AtomicU64,
    pub write_errors: AtomicU64,
    pub max_queue_bytes: AtomicU64,
    pub max_line_packets: AtomicU64,
    pub in_line: AtomicU64,
    late_sum_ns: AtomicU64,
    late_max_ns: AtomicU64,
    late_buckets: [AtomicU64; LATE_BOUNDS_US.len()],
}

impl DirStats {
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Relaxed);
    }

    pub fn record_late(&self, late_ns: u64) {
        self.late_sum_ns.fetch_add(late_ns, Relaxed);
        self.late_max_ns.fetch_max(late_ns, Relaxed);
        let us = late_ns / 1000;
        let i = LATE_BOUNDS_US.iter().position(|&b| us < b).unwrap_or(LATE_BOUNDS_US.len() - 1);
        self.late_buckets[i].fetch_add(1, Relaxed);
    }

    /// The smallest bucket bound that `share` of the written packets were within (µs);
    /// None before any packet, or when it is beyond the last finite bound.
    fn late_quantile_le_us(&self, share: f64) -> Option<u64> {
        let counts: Vec<u64> = self.late_buckets.iter().map(|c| c.load(Relaxed)).collect();
        let total: u64 = counts.iter().sum();
        if total == 0 {
            return None;
        }
        let need = (share * total as f64).ceil() as u64;
        let mut seen = 0;
        for (count, bound) in counts.iter().zip(LATE_BOUNDS_US) {
            seen += count;
            if seen >= need {
                return (bound != u64::MAX).then_some(bound);
            }
        }
        None
    }

    pub fn json(&self) -> String {
        let n = self.packets.load(Relaxed);
        let mean = if n > 0 { Some(self.late_sum_ns.load(Relaxed) as f64 / n as f64 / 1000.0) } else { None };
        let opt = |v: Option<u64>| v.map_or("null".to_string(), |v| v.to_string());
        format!(
            concat!(
                "{{\"received\":{},\"received_bytes\":{},\"packets\":{},\"bytes\":{},",
                "\"dropped_loss\":{},\"dropped_queue\":{},\"dropped_line\":{},\"write_errors\":{},",
                "\"max_queue_bytes\":{},\"max_line_packets\":{},\"in_line\":{},",
                "\"late_us\":{{\"mean\":{},\"max\":{},\"p50_le\":{},\"p99_le\":{}}}}}"
            ),
            self.received.load(Relaxed),
            self.received_bytes.load(Relaxed),
            n,
            self.bytes.load(Relaxed),
            self.dropped_loss.load(Relaxed),
            self.dropped_queue.load(Relaxed),
            self.dropped_line.load(Relaxed),
            self.write_errors.load(Relaxed),
            self.max_queue_bytes.load(Relaxed),
            self.max_line_packets.load(Relaxed),
            self.in_line.load(Relaxed),
            mean.map_or("null".to_string(), |m| format!("{m:.1}")),
            if n > 0 { format!("{:.1}", self.late_max_ns.load(Relaxed) as f64 / 1000.0) } else { "null".into() },
            opt(self.late_quantile_le_us(0.5)),
            opt(self.late_quantile_le_us(0.99)),
        )
    }
}

/// A JSON string literal (names and error messages: quotes, backslashes, control bytes).
pub fn json_str(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// User and system CPU seconds of this process (all its threads), from getrusage.
pub fn cpu_seconds() -> (f64, f64) {
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    (secs(ru.ru_utime), secs(ru.ru_stime))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lateness_quantiles_are_bucket_bounds() {
        let s = DirStats::default();
        assert_eq!(s.late_quantile_le_us(0.5), None);
        for _ in 0..98 {
            s.record_late(3_000); // 3 µs
        }
        s.record_late(300_000); // 300 µs
        s.record_late(9_000_000); // 9 ms: beyond the last finite bound
        assert_eq!(s.late_quantile_le_us(0.5), Some(10));
        assert_eq!(s.late_quantile_le_us(0.99), Some(500));
        assert_eq!(s.late_quantile_le_us(1.0), None);
    }

    #[test]
    fn json_is_one_line_with_nulls_before_traffic() {
        let s = DirStats::default();
        let j = s.json();
        assert!(!j.contains('\n'));
        assert!(j.contains("\"mean\":null"));
        assert_eq!(json_str("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}
