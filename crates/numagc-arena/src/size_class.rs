//! The rows of the arena matrix (paper §3, Fig. 4): size ranges and the
//! choice of the arena for a request, as `const fn`s so that a size known at
//! compile time selects its arena at compile time ("our integrated solution
//! ... already selects the allocation arena at compile time whenever
//! possible").
//!
//! Rows `0 .. K` ([`SMALL_CLASSES`], chunks up to [`SMALL_MAX`] bytes) are
//! served by fixed-size-chunk subheaps; rows `K .. M` ([`MEDIUM_BINS`],
//! chunks up to [`MEDIUM_MAX`]) by variable-size chunks of local heaps; rows
//! `M .. N` (anything larger, or with an alignment the local heaps do not
//! give) straight by the global heap. Every power-of-two alignment up to
//! [`MAX_ALIGN`] (2^62 on 64-bit targets) is served: those above 4 KiB by
//! a mapping of its own (`large.rs`), so 2 MiB (huge page) and 1 GiB
//! alignments cost address space, not memory. Only a request that no
//! address space could hold is refused: an alignment above `MAX_ALIGN`, or
//! a size that with its alignment's padding exceeds `isize::MAX`.
//!
//! Choices where the paper gives no numbers: small classes step by 16 bytes
//! up to 128, then four per doubling up to 4 KiB (at most 25 % internal
//! fragmentation); medium free lists also four per doubling; the medium limit
//! is a quarter of a local heap (1 MiB), so one local heap holds at least
//! three of the largest medium chunks.
//!
//! Invariant: every small class size is a multiple of 16, and every power of
//! two from 16 to 4096 is a class, so a chunk of a power-of-two class at
//! offset `i * size` of a 64 KiB-aligned subheap is aligned to that size.

/// Sizes of the small (subheap) classes, rows `0 .. K` of Fig. 4.
pub const SMALL_CLASSES: [usize; 28] = [
    16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256, 320, 384, 448, 512, 640, 768, 896, 1024,
    1280, 1536, 1792, 2048, 2560, 3072, 3584, 4096,
];
/// K: the number of small classes.
pub const NUM_SMALL: usize = SMALL_CLASSES.len();
/// The largest request a subheap serves.
pub const SMALL_MAX: usize = 4096;
/// The largest request a local heap's variable-size chunks serve.
pub const MEDIUM_MAX: usize = 1 << 20;
/// The largest alignment the heap manager gives: half of `isize::MAX + 1`
/// (2^62 on 64-bit targets), more than any address space holds, so every
/// alignment a program can be given is below it (larger is refused with an
/// error naming it; the C library refuses those too). Whether a request
/// below it is served depends on the address space the system gives.
pub const MAX_ALIGN: usize = 1 << (usize::BITS - 2);
/// Alignment of every chunk of a local heap's variable-size area.
pub const MEDIUM_ALIGN: usize = 16;
/// Number of free lists of variable-size chunks (rows `K .. M` of Fig. 4):
/// bin 0 for split-off remainders below 4 KiB, then four per doubling.
pub const MEDIUM_BINS: usize = 41;

/// `SMALL_LUT[(size + 15) / 16]` is the class of a small request of `size`.
const SMALL_LUT: [u8; SMALL_MAX / 16 + 1] = {
    let mut lut = [0u8; SMALL_MAX / 16 + 1];
    let mut i = 0;
    let mut class = 0;
    while i < lut.len() {
        let size = if i == 0 { 1 } else { i * 16 };
        while SMALL_CLASSES[class] < size {
            class += 1;
        }
        lut[i] = class as u8;
        i += 1;
    }
    lut
};

/// The small class of a request of `size <= SMALL_MAX` bytes aligned to at
/// most 16.
#[inline]
pub const fn small_class(size: usize) -> usize {
    SMALL_LUT[(size + 15) >> 4] as usize
}

/// The free list (bin) of a variable-size chunk of `chunk_size` bytes.
#[inline]
pub const fn medium_bin(chunk_size: usize) -> usize {
    if chunk_size < 4096 {
        return 0;
    }
    let lg = (usize::BITS - 1 - chunk_size.leading_zeros()) as usize;
    let sub = (chunk_size >> (lg - 2)) & 3;
    let bin = 1 + (lg - 12) * 4 + sub;
    if bin >= MEDIUM_BINS {
        MEDIUM_BINS - 1
    } else {
        bin
    }
}

/// Which arena of Fig. 4 serves a request: the result of the paper's
/// "arena identification", computable at compile time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArenaChoice {
    /// A small class (row `< K`): fixed-size chunks of a subheap.
    Small(u8),
    /// A variable-size chunk of a local heap (rows `K .. M`) of this total
    /// chunk size (header included).
    Medium(usize),
    /// A very large chunk from the global heap (rows `>= M`).
    Large,
    /// The request cannot be met; the message names why.
    Refused(&'static str),
}

use crate::region::REGION_SIZE;

/// Size of the header of a variable-size chunk.
pub(crate) const MEDIUM_HEADER: usize = 16;

/// Chooses the arena for `size` bytes aligned to `align`.
pub const fn choose(size: usize, align: usize) -> ArenaChoice {
    if !align.is_power_of_two() {
        return ArenaChoice::Refused("alignment is not a power of two");
    }
    if align > MAX_ALIGN {
        return ArenaChoice::Refused("alignment is larger than MAX_ALIGN (2^62 on 64-bit targets)");
    }
    // A large chunk's mapping is at most `size + align + 2 * REGION_SIZE`
    // long (header, padding to the alignment, and the rounding of the
    // mapping to it); no overflow below, as `align <= MAX_ALIGN`.
    if size > isize::MAX as usize - 2 * REGION_SIZE - align {
        return ArenaChoice::Refused("size with its alignment is larger than isize::MAX");
    }
    if align <= 16 && size <= SMALL_MAX {
        return ArenaChoice::Small(small_class(size) as u8);
    }
    if align <= SMALL_MAX {
        // A power-of-two class is aligned to its size (see the invariant).
        let s = if size > align { size } else { align };
        if s <= SMALL_MAX {
            return ArenaChoice::Small(small_class(s.next_power_of_two()) as u8);
        }
    }
    if align <= MEDIUM_ALIGN && size <= MEDIUM_MAX {
        let chunk = (size + MEDIUM_HEADER + 15) & !15;
        return ArenaChoice::Medium(chunk);
    }
    ArenaChoice::Large
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_small_size_gets_the_smallest_class_that_fits() {
        for size in 0..=SMALL_MAX {
            let c = small_class(size);
            assert!(SMALL_CLASSES[c] >= size.max(1), "size {size}");
            if c > 0 {
                assert!(SMALL_CLASSES[c - 1] < size, "size {size} not tight");
            }
        }
    }

    #[test]
    fn aligned_small_requests_get_a_power_of_two_class() {
        for align in [32usize, 64, 256, 4096] {
            for size in [1usize, 17, 100, 4000] {
                match choose(size, align) {
                    ArenaChoice::Small(c) => {
                        let s = SMALL_CLASSES[c as usize];
                        assert!(s.is_power_of_two() && s >= size && s.is_multiple_of(align));
                    }
                    other => panic!("{size}/{align}: {other:?}"),
                }
            }
        }
    }

    #[test]
    fn bins_increase_with_size_and_bad_input_is_refused() {
        let mut last = 0;
        for s in (4096..(4 << 20)).step_by(4096) {
            let b = medium_bin(s);
            assert!(b >= last && b < MEDIUM_BINS);
            last = b;
        }
        assert_eq!(medium_bin(100), 0);
        assert!(matches!(choose(8, 3), ArenaChoice::Refused(m) if m.contains("power of two")));
        assert!(matches!(choose(8, 1 << 63), ArenaChoice::Refused(m) if m.contains("alignment")));
        assert!(matches!(choose(usize::MAX, 8), ArenaChoice::Refused(m) if m.contains("size")));
        assert!(
            matches!(choose(usize::MAX - (1 << 30), 1 << 30), ArenaChoice::Refused(m) if m.contains("size"))
        );
        // Huge-page and larger alignments (issue 16): the large arena.
        for align in [2usize << 20, 4 << 20, 1 << 30, 1 << 40, MAX_ALIGN] {
            assert_eq!(choose(8, align), ArenaChoice::Large, "{align:#x}");
        }
        assert_eq!(choose(5000, 8), ArenaChoice::Medium(5024));
        assert_eq!(choose(2 << 20, 8), ArenaChoice::Large);
        assert_eq!(choose(5000, 64), ArenaChoice::Large);
    }
}
