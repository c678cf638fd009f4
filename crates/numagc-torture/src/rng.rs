//! Randomness for the generator: a splitmix64 stream for the seeded CLI
//! runs, and a replay of recorded choices for proptest.
//!
//! Both implement [`Choices`], the only source the program generator
//! (`crate::program`) draws from. A proptest case is a vector of choice
//! vectors, one per operation; shrinking it removes operations and moves
//! choices towards 0, which the generator maps to its simplest options, so a
//! failure shrinks to a short program of small operations (issue 5, part 2).

/// The splitmix64 finaliser: a bijective 64-bit mix.
pub fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A source of choices: `choose(n)` is in `0..n` (0 when `n` is 0).
pub trait Choices {
    fn choose(&mut self, n: u64) -> u64;

    /// A choice in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.choose(hi.saturating_sub(lo) + 1)
    }

    /// True with probability `percent`/100.
    fn chance(&mut self, percent: u64) -> bool {
        self.choose(100) < percent
    }

    /// An index into `weights` drawn by weight; 0 when the choice is 0.
    fn weighted(&mut self, weights: &[u64]) -> usize {
        let total: u64 = weights.iter().sum();
        let mut c = self.choose(total);
        for (i, &w) in weights.iter().enumerate() {
            if c < w {
                return i;
            }
            c -= w;
        }
        weights.len() - 1
    }
}

/// A splitmix64 generator.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix(self.0)
    }
}

impl Choices for Rng {
    fn choose(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next_u64() % n
        }
    }
}

/// Recorded choices, replayed in order; 0 once they run out.
#[derive(Clone, Debug)]
pub struct Replay<'a> {
    choices: &'a [u64],
    pos: usize,
}

impl<'a> Replay<'a> {
    pub fn new(choices: &'a [u64]) -> Replay<'a> {
        Replay { choices, pos: 0 }
    }
}

impl Choices for Replay<'_> {
    fn choose(&mut self, n: u64) -> u64 {
        let c = self.choices.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        if n == 0 {
            0
        } else {
            c % n
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replay_of_zeros_takes_the_first_option() {
        let mut r = Replay::new(&[]);
        assert_eq!(r.choose(10), 0);
        assert_eq!(r.weighted(&[3, 5]), 0);
        assert_eq!(r.range(4, 9), 4);
    }

    #[test]
    fn weighted_follows_the_weights() {
        let mut r = Rng::new(1);
        let mut hits = [0u32; 3];
        for _ in 0..30_000 {
            hits[r.weighted(&[1, 0, 2])] += 1;
        }
        assert_eq!(hits[1], 0);
        assert!(
            hits[2] > hits[0] * 3 / 2 && hits[2] < hits[0] * 5 / 2,
            "{hits:?}"
        );
    }
}
