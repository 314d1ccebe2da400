//! xorshift64*: tiny and deterministic, so a run with `--seed` repeats exactly.

pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        // Never zero (xorshift's fixed point); mixed so that nearby seeds differ.
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in 0..n (0 when n is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 { 0 } else { (self.next() % n as u64) as usize }
    }

    /// True with probability 1/n.
    pub fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }

    /// Sizes that matter most often small, sometimes at the bounds: 1..=n with a
    /// bias towards the low end (log-uniform).
    pub fn size(&mut self, n: usize) -> usize {
        let bits = usize::BITS - n.max(1).leading_zeros();
        let cap = 1usize << self.below(bits as usize + 1);
        1 + self.below(cap.min(n.max(1)))
    }
}
