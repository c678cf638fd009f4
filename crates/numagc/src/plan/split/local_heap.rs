//! The layout of a vproc's local heap: Appel's semi-generational scheme
//! (§3.3, Figures 2 and 3).
//!
//! ```text
//! base                young_start      old_top      nursery_start        end
//!  |  old data (earlier) | young data    |   free      |   nursery  ->     |
//! ```
//!
//! New objects are bump-allocated in the nursery, the upper half of the free
//! space. A minor collection copies the live nursery objects to `old_top`;
//! they become the *young data*, and the free space left is halved again.
//! When the new nursery would fall below `min_nursery` (or a global
//! collection is pending) a major collection copies the live old data —
//! all but the young data, which is certainly live and would be promoted
//! prematurely — to the vproc's chunk in the global heap, and slides the
//! young data down to `base`.
//!
//! Invariant: `base <= young_start <= old_top <= nursery_start <= end`, and
//! the space between `old_top` and `nursery_start` is at least as large as
//! the nursery, so a minor collection always has room for everything it
//! could copy.

/// Bounds of one local heap. Plain data: only its vproc touches it.
#[derive(Debug, Clone)]
pub(crate) struct LocalHeap {
    pub base: usize,
    pub end: usize,
    pub young_start: usize,
    pub old_top: usize,
    pub nursery_start: usize,
    pub min_nursery: usize,
    /// The next local collection evacuates everything to the global heap
    /// (survivor promotion, `plan::split`).
    pub evacuate_next: bool,
}

impl LocalHeap {
    pub fn new(base: usize, size: usize, min_nursery: usize) -> LocalHeap {
        let mut h = LocalHeap {
            base,
            end: base + size,
            young_start: base,
            old_top: base,
            nursery_start: base,
            min_nursery,
            evacuate_next: false,
        };
        h.reset_nursery();
        h
    }

    /// Whether `addr` is inside this local heap.
    #[inline(always)]
    pub fn contains(&self, addr: usize) -> bool {
        addr.wrapping_sub(self.base) < self.end - self.base
    }

    /// Makes the upper half of the free space the nursery (Figure 2).
    pub fn reset_nursery(&mut self) {
        let free = self.end - self.old_top;
        // Round the lower half up so the nursery is never larger than the
        // room a minor collection copies into.
        let lower = (free / 2 + 7) & !7;
        self.nursery_start = self.old_top + lower;
    }

    pub fn nursery_size(&self) -> usize {
        self.end - self.nursery_start
    }

    /// Whether a major collection is due after a minor one.
    pub fn needs_major(&self) -> bool {
        self.nursery_size() < self.min_nursery
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nursery_is_upper_half_of_free_space() {
        let mut h = LocalHeap::new(0x10000, 1 << 16, 4096);
        assert_eq!(h.nursery_size(), 1 << 15);
        h.old_top += 1 << 14;
        h.reset_nursery();
        assert_eq!(h.nursery_size(), 24576);
        assert!(h.nursery_start - h.old_top >= h.nursery_size());
        h.old_top = h.end - 6000;
        h.reset_nursery();
        assert!(h.needs_major());
    }
}
