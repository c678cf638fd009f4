//! The size of the shared plan's minor heaps, adapted to how much of them
//! survives (a numagc choice; multicore-ocaml-gc.txt §4 fixes the minor
//! heap at `minor_heap_size`).
//!
//! Every object alive at a minor collection is copied into the major
//! heap's pools and then marked and swept by every major cycle while it
//! lives: on the shared plan a surviving byte costs several times what an
//! allocated one does. A program that builds structures larger than the
//! minor heap, and drops them soon after (binarytrees' trees of depth 18
//! and 20, of 12 and 48 MiB), promotes nearly all of them through a small
//! minor heap and almost none through one that holds them whole. A large
//! minor heap costs in turn what it does not keep in the cache, and
//! memory. So, as HotSpot's adaptive size policy grows its young
//! generation and GHC users raise `-A`, each minor collection decides the
//! size of the next minor heaps from its *survival*, the bytes it promoted
//! over the bytes the minor heaps held:
//!
//! * survival of at least [`GROW_AT`] (1/8): the minor heaps double, up to
//!   `max-minor-heap`;
//! * survival of at most [`SHRINK_AT`] (1/32): they halve, down to
//!   `local-heap`, giving the cache back to a program whose data now dies
//!   young; the gap between the two is the hysteresis that keeps a size
//!   from flapping (after a halving, survival at most doubles);
//! * a full collection (the heap limit, or asked for) puts them back to
//!   `local-heap`.
//!
//! Every vproc's minor heap has the same size: a minor collection empties
//! all of them, and the survival measured is theirs together.
//!
//! The bytes a minor heap holds beyond `local-heap` are charged to the
//! heap's budget (`max-heap`) like a chunk: a minor heap grows only when
//! the budget takes the growth, so growing never makes a program fail
//! with `HeapLimit` that would have run in the fixed size, and a full
//! collection gives the growth back before the heap limit is decided.
//! The address space of the largest minor heaps is reserved when the
//! runtime starts (`setup`); memory is committed only as a minor heap is
//! first used to its new end.
//!
//! Measured on binarytrees depth 21 at 1 vproc (`local-heap` 16 MiB): the
//! minor heaps fixed at 16, 32, 64 and 128 MiB took 6.1, 4.8, 4.5 and
//! 4.4 s, the collections 72, 64, 47 and 30 % of it; gcbench, whose data
//! dies young, took 0.10, 0.09, 0.11 and 0.15 s (the larger heaps are
//! first touched and miss the cache). Adaptive sizing keeps gcbench at
//! the small size and grows binarytrees' heaps during its large trees;
//! `docs/results/compiled.md` has the side-by-side figures.

/// Survival (promoted over held) at or above which the minor heaps double.
pub(crate) const GROW_AT: (usize, usize) = (1, 8);
/// Survival at or below which they halve.
pub(crate) const SHRINK_AT: (usize, usize) = (1, 32);

/// The sizes a minor heap may take and the current one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct MinorSizing {
    /// `local-heap`: the size at start, and the smallest.
    pub min: usize,
    /// `max-minor-heap`.
    pub max: usize,
}

impl MinorSizing {
    /// The size of the minor heaps after a minor collection at size
    /// `current` that promoted `promoted` of the `held` bytes they held,
    /// the fullest of them `fullest`; `full`: the collection is a full one.
    pub(crate) fn next(
        self,
        current: usize,
        fullest: usize,
        promoted: usize,
        held: usize,
        full: bool,
    ) -> usize {
        if full {
            return self.min;
        }
        // A collection asked for before any minor heap was half full (a
        // forced one, a global root's update) says little about lifetimes
        // at this size: keep it. The other vprocs' heaps may be nearly
        // empty (one vproc allocates, the others wait): survival is
        // measured on what all of them held.
        if fullest < current / 2 {
            return current;
        }
        let (gn, gd) = GROW_AT;
        let (sn, sd) = SHRINK_AT;
        if promoted.saturating_mul(gd) >= held.saturating_mul(gn) {
            current.saturating_mul(2).min(self.max)
        } else if promoted.saturating_mul(sd) <= held.saturating_mul(sn) {
            (current / 2).max(self.min)
        } else {
            current
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;
    const S: MinorSizing = MinorSizing {
        min: 16 * MIB,
        max: 128 * MIB,
    };

    #[test]
    fn high_survival_doubles_up_to_the_maximum() {
        assert_eq!(
            S.next(16 * MIB, 16 * MIB, 8 * MIB, 16 * MIB, false),
            32 * MIB
        );
        assert_eq!(
            S.next(64 * MIB, 64 * MIB, 8 * MIB, 64 * MIB, false),
            128 * MIB
        );
        assert_eq!(
            S.next(128 * MIB, 128 * MIB, 128 * MIB, 128 * MIB, false),
            128 * MIB
        );
    }

    #[test]
    fn low_survival_halves_down_to_the_minimum() {
        assert_eq!(
            S.next(128 * MIB, 128 * MIB, MIB, 128 * MIB, false),
            64 * MIB
        );
        assert_eq!(S.next(16 * MIB, 16 * MIB, 0, 16 * MIB, false), 16 * MIB);
    }

    #[test]
    fn survival_between_the_thresholds_keeps_the_size() {
        // 1/16: below growth, above shrinking; after a halving at 1/32
        // survival is at most 1/16, which keeps the size too.
        assert_eq!(
            S.next(64 * MIB, 64 * MIB, 4 * MIB, 64 * MIB, false),
            64 * MIB
        );
        assert_eq!(
            S.next(32 * MIB, 32 * MIB, 2 * MIB, 32 * MIB, false),
            32 * MIB
        );
        assert_eq!(S.next(32 * MIB, 32 * MIB, MIB, 32 * MIB, false), 16 * MIB);
    }

    #[test]
    fn a_full_collection_returns_to_the_minimum() {
        assert_eq!(
            S.next(128 * MIB, 128 * MIB, 128 * MIB, 128 * MIB, true),
            16 * MIB
        );
    }

    #[test]
    fn an_early_collection_keeps_the_size() {
        assert_eq!(S.next(64 * MIB, 8 * MIB, 4 * MIB, 8 * MIB, false), 64 * MIB);
        // Two heaps of 64 MiB, one full and one nearly empty: survival
        // is what both held.
        assert_eq!(
            S.next(64 * MIB, 64 * MIB, 40 * MIB, 65 * MIB, false),
            128 * MIB
        );
        assert_eq!(
            S.next(64 * MIB, 64 * MIB, 4 * MIB, 65 * MIB, false),
            64 * MIB
        );
    }

    #[test]
    fn a_fixed_size_never_changes() {
        let fixed = MinorSizing {
            min: 16 * MIB,
            max: 16 * MIB,
        };
        for (p, h) in [(16 * MIB, 16 * MIB), (0, 16 * MIB), (MIB, 16 * MIB)] {
            assert_eq!(fixed.next(16 * MIB, h, p, h, false), 16 * MIB);
        }
    }
}
