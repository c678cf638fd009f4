//! Size classes of the major heap's pools (multicore-ocaml-gc.txt §3.3:
//! "size-segmented" pages, each holding objects of one size).
//!
//! Sizes are in words, header included. Up to 8 words every size is a
//! class of its own (most functional-language objects are a few words);
//! above that, four classes per doubling, so an object wastes at most a
//! fifth of its slot (plus a cache line from 64 words on, against cache-set
//! aliasing) (OCaml 5 uses a similar table, `sizeclasses.h`; ours
//! is computed instead of generated). The largest class is the largest
//! object the pools hold: bigger ones go to the large-object space.

/// The classes for objects of up to `max_words` words: `(sizes, lookup)`,
/// where `sizes[c]` is class `c`'s slot size in words and `lookup[w]` the
/// class of an object of `w` words (`lookup[0]` is unused).
pub(crate) struct SizeClasses {
    sizes: Vec<u32>,
    lookup: Vec<u8>,
}

impl SizeClasses {
    pub fn new(max_words: usize) -> SizeClasses {
        let max_words = max_words.max(1);
        let mut sizes: Vec<u32> = Vec::new();
        let mut w = 1usize;
        while w < max_words {
            // From 64 words on, a slot is a cache line (8 words) longer
            // than its step: slots of a class would otherwise be a
            // multiple of 512 bytes apart, and a walk down a column of
            // rows (one object each) would keep hitting the same few
            // cache sets (measured: matrix_multiplication, 2.3 s against
            // 1.2 s with the padding, docs/results/plans.md).
            let slot = if w >= 64 { (w + 8).min(max_words) } else { w };
            if slot == max_words {
                break;
            }
            sizes.push(slot as u32);
            // Below 8 words every size; then four steps per doubling
            // (8, 10, 12, 14, 16, 20, 24, 28, 32, 40, ...).
            let floor_pow2 = 1usize << (usize::BITS - 1 - w.leading_zeros());
            w += if w < 8 { 1 } else { floor_pow2 / 4 };
        }
        sizes.push(max_words as u32);
        assert!(sizes.len() < 256, "size classes fit a byte");
        let mut lookup = vec![0u8; max_words + 1];
        let mut c = 0;
        for (words, slot) in lookup.iter_mut().enumerate().skip(1) {
            while (sizes[c] as usize) < words {
                c += 1;
            }
            *slot = c as u8;
        }
        SizeClasses { sizes, lookup }
    }

    /// The class of an object of `words` words (header included), which
    /// must be at most the largest class.
    #[inline(always)]
    pub fn class_of(&self, words: usize) -> usize {
        self.lookup[words] as usize
    }

    /// Slot size of class `c`, in words.
    #[inline(always)]
    pub fn slot_words(&self, c: usize) -> usize {
        self.sizes[c] as usize
    }

    pub fn count(&self) -> usize {
        self.sizes.len()
    }

    /// The largest object the classes hold, in words.
    #[cfg(test)]
    pub fn max_words(&self) -> usize {
        *self.sizes.last().expect("at least one class") as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_size_gets_the_smallest_class_that_holds_it_with_little_waste() {
        for max in [1, 2, 7, 8, 9, 100, 2047, 2048] {
            let sc = SizeClasses::new(max);
            assert_eq!(sc.max_words(), max);
            for w in 1..=max {
                let c = sc.class_of(w);
                let slot = sc.slot_words(c);
                assert!(slot >= w, "{w} words in a slot of {slot}");
                assert!(
                    c == 0 || sc.slot_words(c - 1) < w,
                    "a smaller class holds {w}"
                );
                assert!(
                    w <= 8
                        || (slot - if slot > 64 { 8 } else { 0 }) * 4 <= w * 5
                        || c == sc.count() - 1,
                    "{w} words waste more than a fifth of a {slot}-word slot"
                );
            }
            for c in 1..sc.count() {
                assert!(sc.slot_words(c) > sc.slot_words(c - 1), "classes grow");
            }
        }
        // 16 KiB objects: about four classes per doubling above 8 words.
        assert!(SizeClasses::new(2048).count() <= 8 + 4 * 8 + 1);
    }
}
