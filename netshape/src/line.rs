//! The delay line: packets waiting for their due time, earliest first (ties in arrival
//! order), bounded in bytes so that a fast sender cannot make the forwarder eat the
//! machine's memory (150 ms at 1 Gbit/s is 19 MB; the bound is well above that).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

pub const MAX_LINE_BYTES: usize = 64 << 20;

pub struct Pending {
    pub due: u64,
    seq: u64,
    pub data: Vec<u8>,
}

impl PartialEq for Pending {
    fn eq(&self, other: &Self) -> bool {
        (self.due, self.seq) == (other.due, other.seq)
    }
}
impl Eq for Pending {}
impl PartialOrd for Pending {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Pending {
    // Reversed: BinaryHeap is a max-heap and the earliest due must come out first.
    fn cmp(&self, other: &Self) -> Ordering {
        (other.due, other.seq).cmp(&(self.due, self.seq))
    }
}

pub struct DelayLine {
    heap: BinaryHeap<Pending>,
    bytes: usize,
    limit: usize,
    seq: u64,
}

impl DelayLine {
    pub fn new(limit: usize) -> DelayLine {
        DelayLine { heap: BinaryHeap::new(), bytes: 0, limit, seq: 0 }
    }

    /// False (and the packet dropped) when the line is full.
    pub fn push(&mut self, due: u64, data: Vec<u8>) -> bool {
        if self.bytes + data.len() > self.limit {
            return false;
        }
        self.bytes += data.len();
        self.seq += 1;
        self.heap.push(Pending { due, seq: self.seq, data });
        true
    }

    pub fn next_due(&self) -> Option<u64> {
        self.heap.peek().map(|p| p.due)
    }

    /// The earliest packet if it is due by `now`.
    pub fn pop_due(&mut self, now: u64) -> Option<Pending> {
        if self.next_due()? > now {
            return None;
        }
        let p = self.heap.pop()?;
        self.bytes -= p.data.len();
        Some(p)
    }

    pub fn len(&self) -> usize {
        self.heap.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_ties_in_arrival_order() {
        let mut l = DelayLine::new(MAX_LINE_BYTES);
        for (due, tag) in [(30, 1u8), (10, 2), (20, 3), (10, 4), (20, 5)] {
            assert!(l.push(due, vec![tag]));
        }
        assert!(l.pop_due(9).is_none());
        let order: Vec<(u64, u8)> = std::iter::from_fn(|| l.pop_due(25)).map(|p| (p.due, p.data[0])).collect();
        assert_eq!(order, vec![(10, 2), (10, 4), (20, 3), (20, 5)]);
        assert_eq!(l.len(), 1);
        assert_eq!(l.next_due(), Some(30));
    }

    #[test]
    fn bounded_in_bytes() {
        let mut l = DelayLine::new(3000);
        assert!(l.push(1, vec![0; 1500]));
        assert!(l.push(2, vec![0; 1500]));
        assert!(!l.push(3, vec![0; 1]));
        l.pop_due(1).unwrap();
        assert!(l.push(3, vec![0; 1500]));
    }
}
