//! Random numbers of the workloads. `Npb` is the NAS Parallel Benchmarks'
//! linear congruential generator (NPB 2.4 report, the paper's ref. [25]):
//! `x_{k+1} = 5^13 x_k mod 2^46`, value `x_{k+1} / 2^46`, seed 314159265,
//! which FT and MG use for their initial data; computed here in exact
//! integer arithmetic, which gives the same values as NPB's `randlc`
//! (exact by construction in double arithmetic). `SplitMix64` drives larson
//! and xmalloc-test: its stream is a function of the seed alone, so the
//! operations they do can be replayed without memory to check them.

/// NPB's `randlc`/`vranlc` generator.
pub struct Npb {
    x: u64,
}

const NPB_A: u64 = 1_220_703_125; // 5^13
const NPB_MASK: u64 = (1 << 46) - 1;
/// NPB's seed for FT and MG.
pub const NPB_SEED: u64 = 314_159_265;

impl Npb {
    pub fn new(seed: u64) -> Self {
        Npb { x: seed }
    }

    /// The next value in (0, 1), as `randlc` returns it.
    pub fn next_f64(&mut self) -> f64 {
        self.x = ((self.x as u128 * NPB_A as u128) as u64) & NPB_MASK;
        self.x as f64 * (1.0 / (1u64 << 46) as f64)
    }
}

/// SplitMix64 (Steele, Lea, Flood 2014).
#[derive(Clone)]
pub struct SplitMix64(pub u64);

impl SplitMix64 {
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: usize, hi: usize) -> usize {
        lo + (self.next_u64() % (hi - lo + 1) as u64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn npb_first_values_match_randlc() {
        // randlc(314159265, 5^13): 5^13 * 314159265 mod 2^46, by u128 here
        // and by hand in the assertion's arithmetic.
        let mut r = Npb::new(NPB_SEED);
        let v = r.next_f64();
        let want = (1_220_703_125u128 * 314_159_265u128) % (1u128 << 46);
        assert_eq!(v, want as f64 / (1u64 << 46) as f64);
        assert!(v > 0.0 && v < 1.0);
    }
}
