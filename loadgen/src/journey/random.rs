//! What a journey leaves to chance, drawn from a fixed-seed generator per visitor slot
//! (runs are reproducible): the time a visitor thinks before the next page, and which
//! option of a weighted choice it takes.

use std::time::Duration;

/// How long a visitor reads before its next request.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Think {
    /// None: the next page at once.
    None,
    Fixed(Duration),
    /// Exponential with this mean (a memoryless reader, as in queueing models of web
    /// users), a draw above `max` taking `max`: no visitor thinks for ever.
    Exponential { mean: Duration, max: Duration },
    /// Uniform between the two (Locust's `between`).
    Uniform { min: Duration, max: Duration },
}

impl Think {
    pub fn draw(&self, rng: &mut Rng) -> Duration {
        match *self {
            Think::None => Duration::ZERO,
            Think::Fixed(d) => d,
            Think::Exponential { mean, max } => {
                // Inverse transform: −mean · ln U, U in (0, 1].
                let d = Duration::from_secs_f64(-mean.as_secs_f64() * rng.unit().ln());
                d.min(max)
            }
            Think::Uniform { min, max } => min + (max - min).mul_f64(1.0 - rng.unit()),
        }
    }
}

/// xorshift64* (Vigna 2016): fast, and plenty for think times and page choices.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator of its own for each visitor slot of each engine thread.
    pub fn for_visitor(thread: u32, visitor: u32) -> Rng {
        // splitmix64 of (thread, visitor): neighbouring slots get unrelated streams.
        let mut z = (u64::from(thread) << 32 | u64::from(visitor)).wrapping_add(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    /// Uniform in (0, 1], 53 bits.
    pub fn unit(&mut self) -> f64 {
        ((self.next_u64() >> 11) + 1) as f64 / (1u64 << 53) as f64
    }

    /// An index into `weights` (each ≥ 1), drawn with probability weight / sum.
    pub fn pick(&mut self, weights: &[u32]) -> usize {
        let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
        if total == 0 {
            return 0;
        }
        // The modulo bias is below 2^-32 for any sane total.
        let mut r = self.next_u64() % total;
        for (i, &w) in weights.iter().enumerate() {
            if r < u64::from(w) {
                return i;
            }
            r -= u64::from(w);
        }
        weights.len() - 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const N: usize = 100_000;

    fn ms(v: u64) -> Duration {
        Duration::from_millis(v)
    }

    #[test]
    fn fixed_and_none_are_exact() {
        let mut rng = Rng::for_visitor(0, 0);
        assert_eq!(Think::None.draw(&mut rng), Duration::ZERO);
        assert_eq!(Think::Fixed(ms(250)).draw(&mut rng), ms(250));
    }

    #[test]
    fn exponential_has_its_mean_and_never_passes_its_cap() {
        let mut rng = Rng::for_visitor(1, 7);
        let draw_many = |think: Think, rng: &mut Rng| -> Vec<Duration> { (0..N).map(|_| think.draw(rng)).collect() };
        let mean_s = |d: &[Duration]| d.iter().map(Duration::as_secs_f64).sum::<f64>() / N as f64;
        // Capped far out (10 means: e^-10 of the draws), the mean is the mean.
        let far = draw_many(Think::Exponential { mean: ms(1000), max: ms(10_000) }, &mut rng);
        assert!(far.iter().all(|&d| d <= ms(10_000)));
        assert!((mean_s(&far) - 1.0).abs() < 0.01, "mean {}", mean_s(&far));
        // Exponential: P(X > mean) = 1/e.
        let above = far.iter().filter(|&&d| d > ms(1000)).count() as f64 / N as f64;
        assert!((above - (-1.0f64).exp()).abs() < 0.01, "{above}");
        // Capped at 3 means, the e^-3 of the draws above take the cap: the mean is
        // E[min(X, 3m)] = m (1 − e^-3).
        let near = draw_many(Think::Exponential { mean: ms(1000), max: ms(3000) }, &mut rng);
        assert!(near.iter().all(|&d| d <= ms(3000)));
        let at_cap = near.iter().filter(|&&d| d == ms(3000)).count() as f64 / N as f64;
        assert!((at_cap - (-3.0f64).exp()).abs() < 0.005, "{at_cap}");
        assert!((mean_s(&near) - (1.0 - (-3.0f64).exp())).abs() < 0.01, "mean {}", mean_s(&near));
    }

    #[test]
    fn uniform_stays_within_its_bounds() {
        let mut rng = Rng::for_visitor(2, 3);
        let think = Think::Uniform { min: ms(1000), max: ms(3000) };
        let draws: Vec<Duration> = (0..N).map(|_| think.draw(&mut rng)).collect();
        assert!(draws.iter().all(|&d| (ms(1000)..=ms(3000)).contains(&d)));
        let mean = draws.iter().map(Duration::as_secs_f64).sum::<f64>() / N as f64;
        assert!((mean - 2.0).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn choices_follow_their_weights() {
        let mut rng = Rng::for_visitor(0, 1);
        let mut counts = [0usize; 3];
        for _ in 0..N {
            counts[rng.pick(&[3, 1, 6])] += 1;
        }
        for (count, share) in counts.iter().zip([0.3, 0.1, 0.6]) {
            assert!((*count as f64 / N as f64 - share).abs() < 0.01, "{counts:?}");
        }
        assert_eq!(rng.pick(&[5]), 0);
    }

    #[test]
    fn each_visitor_slot_has_its_own_stream() {
        let first = |t, v| Rng::for_visitor(t, v).next_u64();
        assert_ne!(first(0, 0), first(0, 1));
        assert_ne!(first(0, 1), first(1, 0));
        assert_eq!(first(3, 4), first(3, 4), "reproducible");
        let mut rng = Rng::for_visitor(0, 0);
        assert!((0..N).all(|_| {
            let u = rng.unit();
            u > 0.0 && u <= 1.0
        }));
    }
}
