//! The model of one direction of the link, pure (time is given, never read), so that the
//! arithmetic is tested without a network: a packet arriving at `now` is dropped or gets
//! the time it is due at the far end.
//!
//! The order is a real path's: a bottleneck router's queue and its serialisation at the
//! rate (drop-tail when the queue is full), then the wire, which may lose the packet (it
//! used the link's time all the same), then the propagation delay with its jitter.
//!
//! The rate limit is a token bucket one packet deep, i.e. a link that sends one packet at
//! a time: a packet starts when the one before it has finished and takes len·8/rate to
//! send. A deeper bucket would let a burst through at full speed (the tbf burst trap in
//! docs/servers.md, "Network shaping"). The queue is the backlog in bytes still to be
//! sent, exactly what a router holds: at time t it is (busy_until − t)·rate/8.

use crate::rng::Rng;
use crate::shape::Shape;

#[derive(Debug, PartialEq)]
pub enum Verdict {
    /// Write it to the far TUN device at this time (ns, same clock as `now`).
    Deliver(u64),
    /// The rate queue was full (drop-tail).
    DropQueue,
    /// The wire lost it (random loss).
    DropLoss,
}

pub struct Link {
    shape: Shape,
    queue_bytes: Option<u64>,
    rng: Rng,
    /// When the link finishes sending what it has accepted so far (ns).
    busy_until: u64,
    /// The latest due time handed out: with order kept no packet is due before it.
    last_due: u64,
}

impl Link {
    pub fn new(shape: Shape, seed: u64) -> Link {
        let queue_bytes = shape.queue_bytes();
        Link { shape, queue_bytes, rng: Rng::new(seed), busy_until: 0, last_due: 0 }
    }

    /// Bytes accepted but not yet sent at `now` (the router's queue, including the packet
    /// being sent).
    pub fn backlog_bytes(&self, now: u64) -> u64 {
        match self.shape.rate_bit_s {
            Some(rate) => crate::shape::bytes_in(self.busy_until.saturating_sub(now), rate),
            None => 0,
        }
    }

    pub fn admit(&mut self, now: u64, len: usize) -> Verdict {
        let sent_at = match self.shape.rate_bit_s {
            None => now,
            Some(rate) => {
                let backlog = self.backlog_bytes(now);
                if backlog + len as u64 > self.queue_bytes.unwrap_or(u64::MAX) {
                    return Verdict::DropQueue;
                }
                let start = self.busy_until.max(now);
                // Rounded up: never faster than asked.
                let send_ns = ((len as u128 * 8 * 1_000_000_000).div_ceil(rate as u128)) as u64;
                self.busy_until = start + send_ns;
                self.busy_until
            }
        };
        if self.shape.loss > 0.0 && self.rng.unit() < self.shape.loss {
            return Verdict::DropLoss;
        }
        let mut due = sent_at + self.delay_sample();
        if !self.shape.reorder {
            due = due.max(self.last_due);
        }
        self.last_due = self.last_due.max(due);
        Verdict::Deliver(due)
    }

    /// delay ± jitter, uniform (netem's default distribution); never below 0 because the
    /// shape refuses jitter > delay.
    fn delay_sample(&mut self) -> u64 {
        let (d, j) = (self.shape.delay_ns, self.shape.jitter_ns);
        if j == 0 {
            return d;
        }
        let offset = (self.rng.unit() * (2 * j + 1) as f64) as u64; // 0 ..= 2j
        d - j + offset.min(2 * j)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(text: &str) -> Link {
        Link::new(Shape::parse(text).unwrap(), 42)
    }

    const MS: u64 = 1_000_000;

    #[test]
    fn plain_delay_is_exact() {
        let mut l = link("delay=20ms");
        assert_eq!(l.admit(5 * MS, 100), Verdict::Deliver(25 * MS));
        assert_eq!(l.admit(6 * MS, 1500), Verdict::Deliver(26 * MS));
    }

    #[test]
    fn rate_serialises_back_to_back_packets() {
        // 1500 B at 1.2 Mbit/s = 10 ms each: three packets arriving together leave at
        // 10, 20 and 30 ms, then the delay.
        let mut l = link("rate=1.2mbit,delay=5ms");
        let dues: Vec<Verdict> = (0..3).map(|_| l.admit(0, 1500)).collect();
        assert_eq!(dues, vec![Verdict::Deliver(15 * MS), Verdict::Deliver(25 * MS), Verdict::Deliver(35 * MS)]);
        assert_eq!(l.backlog_bytes(0), 4500);
        assert_eq!(l.backlog_bytes(20 * MS), 1500);
        // An idle link sends at once: the bucket does not save up a burst.
        assert_eq!(l.admit(100 * MS, 1500), Verdict::Deliver(115 * MS));
    }

    #[test]
    fn full_queue_drops_tail_and_long_run_rate_is_the_rate() {
        // 1 Mbit/s, queue 15000 B (10 packets): offer 100 packets at once.
        let mut l = link("rate=1mbit,queue=15000B");
        let verdicts: Vec<Verdict> = (0..100).map(|_| l.admit(0, 1500)).collect();
        let delivered = verdicts.iter().filter(|v| matches!(v, Verdict::Deliver(_))).count();
        assert_eq!(delivered, 10);
        assert!(verdicts[10..].iter().all(|v| *v == Verdict::DropQueue));
        // Offered exactly at the rate, nothing is dropped and the last packet is due one
        // packet-time after it arrived.
        let mut l = link("rate=1mbit");
        let gap = 12 * MS; // 1500 B at 1 Mbit/s
        let mut last = 0;
        for i in 0..1000 {
            match l.admit(i * gap, 1500) {
                Verdict::Deliver(due) => last = due,
                v => panic!("{v:?}"),
            }
        }
        assert_eq!(last, 999 * gap + gap);
    }

    #[test]
    fn jitter_stays_in_bounds_and_order_is_kept() {
        let mut l = link("delay=20ms,jitter=5ms");
        let mut prev = 0;
        let mut spread = (u64::MAX, 0);
        for i in 0..10_000u64 {
            let now = i * 10 * MS; // far apart: order keeping never bites
            let Verdict::Deliver(due) = l.admit(now, 100) else { panic!() };
            let d = due - now;
            assert!((15 * MS..=25 * MS).contains(&d), "{d}");
            assert!(due >= prev);
            prev = due;
            spread = (spread.0.min(d), spread.1.max(d));
        }
        assert!(spread.0 < 16 * MS && spread.1 > 24 * MS, "{spread:?}");
    }

    #[test]
    fn close_packets_with_jitter_never_overtake_unless_asked() {
        let mut keep = link("delay=20ms,jitter=5ms");
        let mut free = link("delay=20ms,jitter=5ms,order=free");
        let (mut prev, mut overtaken) = (0, 0);
        let mut prev_free = 0;
        for i in 0..1000u64 {
            let now = i * 100_000; // 0.1 ms apart, far below the jitter
            let Verdict::Deliver(due) = keep.admit(now, 100) else { panic!() };
            assert!(due >= prev);
            prev = due;
            let Verdict::Deliver(due) = free.admit(now, 100) else { panic!() };
            if due < prev_free {
                overtaken += 1;
            }
            prev_free = due;
        }
        assert!(overtaken > 100, "order=free reorders: {overtaken}");
    }

    #[test]
    fn loss_is_binomial() {
        let mut l = link("loss=10%");
        let n = 100_000;
        let lost = (0..n).filter(|_| l.admit(0, 100) == Verdict::DropLoss).count() as f64;
        // Binomial(1e5, 0.1): sd = 95; 5 sd.
        assert!((lost - 10_000.0).abs() < 475.0, "{lost}");
    }

    #[test]
    fn lost_packets_used_the_link() {
        // Loss is on the wire, behind the bottleneck: a lost packet took its send time.
        let mut l = Link::new(Shape::parse("rate=1.2mbit,loss=50%,queue=1MB").unwrap(), 1);
        for _ in 0..20 {
            l.admit(0, 1500);
        }
        assert_eq!(l.backlog_bytes(0), 20 * 1500);
    }

    #[test]
    fn same_seed_same_fate() {
        let fate = |seed| {
            let mut l = Link::new(Shape::parse("delay=10ms,jitter=3ms,loss=20%").unwrap(), seed);
            (0..200).map(|i| l.admit(i * MS, 100)).collect::<Vec<_>>()
        };
        assert_eq!(fate(3), fate(3));
        assert_ne!(fate(3), fate(4));
    }
}
