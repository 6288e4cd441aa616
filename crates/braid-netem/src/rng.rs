//! The only source of randomness of the link models and the simulator: a small seeded PRNG.
//!
//! xoshiro256++ (Blackman and Vigna, "Scrambled Linear Pseudorandom Number Generators", ACM TOMS
//! 2021), seeded through SplitMix64 as the authors recommend. It is fast (a few adds, shifts and
//! rotates per draw), has a 2^256 − 1 period and passes BigCrush, which is plenty for loss and
//! jitter draws. Written here rather than taken from a crate so that a dependency update can never
//! change the numbers a seed produces: a scenario's results are frozen by its seed alone.

/// One SplitMix64 step: the state advances by the golden-ratio increment and the output is mixed.
/// Also used on its own to derive independent seeds (`derive_seed`).
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A seed for sub-stream `stream` of `seed`: different streams of one seed, and the same stream of
/// different seeds, give unrelated sequences. Used so that each link, and each random process on a
/// link (loss, jitter, duplication), draws from its own stream: turning jitter on does not change
/// which packets are lost.
pub fn derive_seed(seed: u64, stream: u64) -> u64 {
    let mut state = seed;
    let a = splitmix64(&mut state);
    let mut state = a ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03);
    splitmix64(&mut state)
}

/// xoshiro256++.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rng {
    s: [u64; 4],
}

impl Rng {
    /// A generator whose whole sequence is determined by `seed`.
    pub fn new(seed: u64) -> Rng {
        let mut state = seed;
        let s =
            [splitmix64(&mut state), splitmix64(&mut state), splitmix64(&mut state), splitmix64(&mut state)];
        // SplitMix64 never yields four zero words in a row, so the all-zero state cannot occur.
        Rng { s }
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// Uniform in [0, 1), 53 bits of precision.
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform in [0, bound] (inclusive), by Lemire's multiply-shift; the bias is at most
    /// bound / 2^64, far below anything a simulation can observe.
    pub fn up_to(&mut self, bound: u64) -> u64 {
        if bound == u64::MAX {
            return self.next_u64();
        }
        ((self.next_u64() as u128 * (bound as u128 + 1)) >> 64) as u64
    }

    /// True with probability `chance`.
    pub fn chance(&mut self, chance: Chance) -> bool {
        match chance.0 {
            0 => false,
            u64::MAX => true,
            threshold => self.next_u64() < threshold,
        }
    }
}

/// A probability precomputed as a 64-bit threshold, so a Bernoulli draw is one compare on the hot
/// path instead of an integer-to-float conversion.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Chance(u64);

impl Chance {
    pub const NEVER: Chance = Chance(0);

    /// `p` is clamped to [0, 1]; NaN counts as 0.
    pub fn new(p: f64) -> Chance {
        if p.is_nan() || p <= 0.0 {
            Chance(0)
        } else if p >= 1.0 {
            Chance(u64::MAX)
        } else {
            // p · 2^64, strictly below 2^64 because p < 1; a threshold of u64::MAX is reserved for 1.
            Chance(((p * 18_446_744_073_709_551_616.0) as u64).min(u64::MAX - 1))
        }
    }

    pub fn is_never(self) -> bool {
        self.0 == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_sequence_different_seed_different() {
        let mut a = Rng::new(7);
        let mut b = Rng::new(7);
        let mut c = Rng::new(8);
        let xs: Vec<u64> = (0..16).map(|_| a.next_u64()).collect();
        let ys: Vec<u64> = (0..16).map(|_| b.next_u64()).collect();
        let zs: Vec<u64> = (0..16).map(|_| c.next_u64()).collect();
        assert_eq!(xs, ys);
        assert_ne!(xs, zs);
    }

    #[test]
    fn derived_streams_differ() {
        assert_ne!(derive_seed(1, 0), derive_seed(1, 1));
        assert_ne!(derive_seed(1, 0), derive_seed(2, 0));
        assert_eq!(derive_seed(5, 9), derive_seed(5, 9));
    }

    #[test]
    fn floats_and_bounds_are_in_range() {
        let mut rng = Rng::new(1);
        let mut sum = 0.0;
        for _ in 0..100_000 {
            let x = rng.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
            assert!(rng.up_to(10) <= 10);
        }
        let mean = sum / 100_000.0;
        assert!((mean - 0.5).abs() < 0.01, "mean {mean}");
    }

    #[test]
    fn chance_extremes() {
        let mut rng = Rng::new(3);
        assert!((0..1000).all(|_| rng.chance(Chance::new(1.0))));
        assert!((0..1000).all(|_| !rng.chance(Chance::new(0.0))));
        assert!(Chance::new(f64::NAN).is_never());
    }
}
