//! The simulator's only source of randomness: SplitMix64, seeded from the
//! scenario. A tiny generator written here (rather than a crate) keeps the
//! sequence fixed forever, so a scenario and a seed give the same run on
//! every machine and every version of the toolchain.

/// SplitMix64 (Steele, Lea and Flood), as in `java.util.SplittableRandom`.
#[derive(Clone, Debug)]
pub struct SplitMix64 {
    state: u64,
}

impl SplitMix64 {
    pub fn new(seed: u64) -> SplitMix64 {
        SplitMix64 { state: seed }
    }

    /// A generator for one purpose (`stream`), independent of the others
    /// drawn from the same seed: adding random draws for one machine must
    /// not shift every other machine's.
    pub fn derive(seed: u64, stream: u64) -> SplitMix64 {
        let mut g = SplitMix64::new(seed ^ stream.wrapping_mul(0xD1B5_4A32_D192_ED03));
        g.next_u64();
        g
    }

    pub fn next_u64(&mut self) -> u64 {
        self.state = self.state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Uniform integer in [lo, hi] (inclusive).
    pub fn range(&mut self, lo: i64, hi: i64) -> i64 {
        if hi <= lo {
            return lo;
        }
        let span = (hi - lo) as u64 + 1;
        lo + (self.next_u64() % span) as i64
    }

    /// Exponentially distributed with this mean (at least 1).
    pub fn exponential(&mut self, mean: f64) -> i64 {
        let u = 1.0 - self.next_f64(); // (0, 1]
        ((-u.ln() * mean).round() as i64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_sequence_is_splitmix64s() {
        // The reference values of SplitMix64 seeded with 1234567.
        let mut g = SplitMix64::new(1_234_567);
        assert_eq!(g.next_u64(), 6_457_827_717_110_365_317);
        assert_eq!(g.next_u64(), 3_203_168_211_198_807_973);
    }

    #[test]
    fn ranges_stay_in_bounds() {
        let mut g = SplitMix64::new(7);
        for _ in 0..1000 {
            let v = g.range(3, 9);
            assert!((3..=9).contains(&v));
            assert!(g.exponential(10.0) >= 1);
        }
    }
}
