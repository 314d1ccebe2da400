//! One direction's shape, from the text of `--a-to-b` / `--b-to-a`:
//! `delay=20ms,jitter=2ms,loss=0.1%,rate=5mbit,queue=100ms,order=keep` (every key optional;
//! the empty string is a plain wire). The Python side (stackbench/network/shape.py) writes
//! this text from a checked `Shape`; the grammar here is the same one, so a person can
//! also type it.

/// Bytes of one full-size packet on the TUN link (its MTU): the unit of the queue's floor.
pub const FULL_PACKET: u64 = 1500;
/// Default queue: this much time at the rate (a router's "100 ms of buffer" rule of thumb,
/// e.g. 62.5 kB at 5 Mbit/s) — deep enough that TCP's slow start does not overflow it at
/// once (a too-small queue collapses cwnd: docs/servers.md, "Network shaping"), shallow
/// enough not to bloat RTT.
pub const DEFAULT_QUEUE_NS: u64 = 100_000_000;
/// … but never fewer than this many full packets (at 1.6 Mbit/s 100 ms is 13 packets).
pub const MIN_DEFAULT_QUEUE_PACKETS: u64 = 10;
const MAX_DELAY_NS: u64 = 10_000_000_000;
const MIN_RATE: u64 = 1_000;
const MAX_RATE: u64 = 100_000_000_000;
const MAX_QUEUE_BYTES: u64 = 1 << 30;

#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Queue {
    /// Bytes that this much time at the rate carries.
    Time(u64),
    Bytes(u64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Shape {
    pub delay_ns: u64,
    pub jitter_ns: u64,
    pub loss: f64,
    pub rate_bit_s: Option<u64>,
    pub queue: Option<Queue>,
    /// Jitter may reorder packets (true) or a packet never leaves before the one ahead of
    /// it (false, the default: TCP reads reordering as loss and shrinks its window).
    pub reorder: bool,
}

impl Default for Shape {
    fn default() -> Shape {
        Shape { delay_ns: 0, jitter_ns: 0, loss: 0.0, rate_bit_s: None, queue: None, reorder: false }
    }
}

impl Shape {
    pub fn parse(text: &str) -> Result<Shape, String> {
        let mut shape = Shape::default();
        let mut seen: Vec<&str> = Vec::new();
        for item in text.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let (key, value) = item
                .split_once('=')
                .ok_or_else(|| format!("{item:?} is not key=value (e.g. delay=20ms)"))?;
            let (key, value) = (key.trim(), value.trim());
            if seen.contains(&key) {
                return Err(format!("{key} is given twice"));
            }
            seen.push(key);
            let bad = |e: String| format!("{key}: {e}");
            match key {
                "delay" => shape.delay_ns = parse_duration_ns(value).map_err(bad)?,
                "jitter" => shape.jitter_ns = parse_duration_ns(value).map_err(bad)?,
                "loss" => shape.loss = parse_loss(value).map_err(bad)?,
                "rate" => shape.rate_bit_s = Some(parse_rate(value).map_err(bad)?),
                "queue" => shape.queue = Some(parse_queue(value).map_err(bad)?),
                "order" => {
                    shape.reorder = match value {
                        "keep" => false,
                        "free" => true,
                        _ => return Err(format!("order takes keep or free, not {value:?}")),
                    }
                }
                _ => return Err(format!("unknown key {key:?} (keys: delay, jitter, loss, rate, queue, order)")),
            }
        }
        shape.check()?;
        Ok(shape)
    }

    fn check(&self) -> Result<(), String> {
        if self.delay_ns > MAX_DELAY_NS {
            return Err("delay must be at most 10s".into());
        }
        // A delay below zero is impossible; clamping it would skew the distribution.
        if self.jitter_ns > self.delay_ns {
            return Err("jitter must not exceed delay (the delay is uniform in delay ± jitter)".into());
        }
        if let Some(rate) = self.rate_bit_s {
            if !(MIN_RATE..=MAX_RATE).contains(&rate) {
                return Err("rate must be between 1kbit and 100gbit".into());
            }
        } else if self.queue.is_some() {
            return Err("queue needs a rate (packets only queue behind a rate limit)".into());
        }
        if let Some(Queue::Bytes(b)) = self.queue {
            if !(FULL_PACKET..=MAX_QUEUE_BYTES).contains(&b) {
                return Err(format!("queue must hold at least one packet ({FULL_PACKET}B) and at most 1GiB"));
            }
        }
        if let (Some(rate), Some(Queue::Time(ns))) = (self.rate_bit_s, self.queue) {
            if bytes_in(ns, rate) < FULL_PACKET {
                return Err(format!("queue of {ns} ns at {rate} bit/s holds less than one packet ({FULL_PACKET}B)"));
            }
            if bytes_in(ns, rate) > MAX_QUEUE_BYTES {
                return Err("queue must be at most 1GiB".into());
            }
        }
        Ok(())
    }

    /// The rate queue's capacity in bytes; None without a rate (no queue at all).
    pub fn queue_bytes(&self) -> Option<u64> {
        let rate = self.rate_bit_s?;
        Some(match self.queue {
            Some(Queue::Bytes(b)) => b,
            Some(Queue::Time(ns)) => bytes_in(ns, rate),
            None => bytes_in(DEFAULT_QUEUE_NS, rate).max(MIN_DEFAULT_QUEUE_PACKETS * FULL_PACKET),
        })
    }

    /// The shape as canonical key=value text (echoed in the start event).
    pub fn describe(&self) -> String {
        let mut parts = vec![format!("delay={}us", self.delay_ns / 1000), format!("jitter={}us", self.jitter_ns / 1000)];
        parts.push(format!("loss={}", self.loss));
        if let Some(rate) = self.rate_bit_s {
            parts.push(format!("rate={rate}bit"));
            parts.push(format!("queue={}B", self.queue_bytes().unwrap_or(0)));
        }
        parts.push(format!("order={}", if self.reorder { "free" } else { "keep" }));
        parts.join(",")
    }
}

/// Bytes that `ns` nanoseconds at `rate` bit/s carry.
pub fn bytes_in(ns: u64, rate_bit_s: u64) -> u64 {
    (ns as u128 * rate_bit_s as u128 / 8 / 1_000_000_000) as u64
}

/// A number and its unit suffix, split where the digits end.
fn split_number(text: &str) -> Result<(f64, &str), String> {
    let end = text.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(text.len());
    let (num, unit) = text.split_at(end);
    let value: f64 = num.parse().map_err(|_| format!("{text:?} does not start with a number"))?;
    if !value.is_finite() {
        return Err(format!("{text:?} is not a finite number"));
    }
    Ok((value, unit.trim()))
}

/// "20ms", "500us", "1.5s", "0" -> nanoseconds.
pub fn parse_duration_ns(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let factor = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        "" if value == 0.0 => 0.0,
        _ => return Err(format!("{text:?} is not a duration (e.g. 20ms, 500us, 1s)")),
    };
    Ok((value * factor).round() as u64)
}

/// "5mbit", "100kbit", "1.6mbit", "2500000bit" -> bit/s (decimal prefixes, as tc writes them).
/// "bps" forms are refused: tc reads "kbps" as kilobytes per second, most people as bits.
pub fn parse_rate(text: &str) -> Result<u64, String> {
    let (value, unit) = split_number(text)?;
    let unit = unit.to_ascii_lowercase();
    let factor = match unit.trim_end_matches("/s") {
        "bit" => 1.0,
        "kbit" => 1e3,
        "mbit" => 1e6,
        "gbit" => 1e9,
        _ => return Err(format!("{text:?} is not a rate (write bits: e.g. 5mbit, 100kbit, 1gbit)")),
    };
    Ok((value * factor).round() as u64)
}

/// "0.1%" or "0.001" -> a probability in [0, 1).
pub fn parse_loss(text: &str) -> Result<f64, String> {
    let (value, unit) = split_number(text)?;
    let p = match unit {
        "%" => value / 100.0,
        "" => value,
        _ => return Err(format!("{text:?} is not a share (e.g. 0.1% or 0.001)")),
    };
    if !(0.0..1.0).contains(&p) {
        return Err(format!("{text:?} must be at least 0 and below 100%"));
    }
    Ok(p)
}

/// "100ms" (time at the rate) or bytes: "64kB", "150000B", "1MB", "64KiB".
pub fn parse_queue(text: &str) -> Result<Queue, String> {
    let (value, unit) = split_number(text)?;
    let bytes = match unit {
        "B" => 1.0,
        "kB" | "KB" => 1e3,
        "MB" => 1e6,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        _ => {
            return parse_duration_ns(text)
                .map(Queue::Time)
                .map_err(|_| format!("{text:?} is neither a time at the rate (100ms) nor bytes (64kB, 150000B)"));
        }
    };
    Ok(Queue::Bytes((value * bytes).round() as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn full_shape_parses() {
        let s = Shape::parse("delay=20ms, jitter=2ms,loss=0.1%,rate=5mbit,queue=50ms,order=free").unwrap();
        assert_eq!(s.delay_ns, 20_000_000);
        assert_eq!(s.jitter_ns, 2_000_000);
        assert!((s.loss - 0.001).abs() < 1e-12);
        assert_eq!(s.rate_bit_s, Some(5_000_000));
        assert_eq!(s.queue, Some(Queue::Time(50_000_000)));
        assert_eq!(s.queue_bytes(), Some(31_250));
        assert!(s.reorder);
    }

    #[test]
    fn empty_is_a_plain_wire() {
        assert_eq!(Shape::parse("").unwrap(), Shape::default());
        assert_eq!(Shape::default().queue_bytes(), None);
    }

    #[test]
    fn units() {
        assert_eq!(parse_duration_ns("500us").unwrap(), 500_000);
        assert_eq!(parse_duration_ns("12.5ms").unwrap(), 12_500_000);
        assert_eq!(parse_duration_ns("0").unwrap(), 0);
        assert_eq!(parse_rate("1.6mbit").unwrap(), 1_600_000);
        assert_eq!(parse_rate("100Mbit/s").unwrap(), 100_000_000);
        assert_eq!(parse_rate("2500000bit").unwrap(), 2_500_000);
        assert_eq!(parse_loss("10%").unwrap(), 0.1);
        assert_eq!(parse_loss("0").unwrap(), 0.0);
        assert_eq!(parse_queue("64kB").unwrap(), Queue::Bytes(64_000));
        assert_eq!(parse_queue("64KiB").unwrap(), Queue::Bytes(65_536));
        assert_eq!(parse_queue("100ms").unwrap(), Queue::Time(100_000_000));
    }

    #[test]
    fn default_queue_is_100ms_at_the_rate_but_ten_packets_at_least() {
        let s = Shape::parse("rate=5mbit").unwrap();
        assert_eq!(s.queue_bytes(), Some(62_500));
        let slow = Shape::parse("rate=100kbit").unwrap();
        assert_eq!(slow.queue_bytes(), Some(10 * FULL_PACKET));
    }

    #[test]
    fn bad_values_say_what_is_wrong() {
        for (text, needle) in [
            ("delay=20", "not a duration"),
            ("delay=-5ms", "does not start with a number"),
            ("delay=11s", "at most 10s"),
            ("delay=5ms,jitter=6ms", "jitter must not exceed delay"),
            ("loss=100%", "below 100%"),
            ("loss=1.5", "below 100%"),
            ("loss=abc", "does not start with a number"),
            ("rate=5mbps", "write bits"),
            ("rate=10bit", "between 1kbit"),
            ("queue=64kB", "queue needs a rate"),
            ("rate=5mbit,queue=100B", "at least one packet"),
            ("rate=1mbit,queue=1ms", "less than one packet"),
            ("rate=1mbit,queue=64 bananas", "neither a time"),
            ("delay=1ms,delay=2ms", "twice"),
            ("speed=1", "unknown key"),
            ("delay", "not key=value"),
            ("order=random", "keep or free"),
        ] {
            let err = Shape::parse(text).unwrap_err();
            assert!(err.contains(needle), "{text}: {err}");
            assert!(!err.contains('\n'), "one line: {err}");
        }
    }

    #[test]
    fn describe_round_trips() {
        let s = Shape::parse("delay=20ms,jitter=2ms,loss=0.5%,rate=5mbit").unwrap();
        assert_eq!(Shape::parse(&s.describe()).unwrap().queue_bytes(), s.queue_bytes());
        assert_eq!(Shape::parse(&s.describe()).unwrap().delay_ns, s.delay_ns);
    }
}
