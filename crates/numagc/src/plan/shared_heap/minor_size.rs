//! The size of the shared plan's minor heaps, adapted to what the program
//! does with them (a numagc choice; multicore-ocaml-gc.txt §4 fixes the
//! minor heap at `minor_heap_size`).
//!
//! Every object alive at a minor collection is copied into the major
//! heap's pools and then marked and swept by every major cycle while it
//! lives: on the shared plan a surviving byte costs several times what an
//! allocated one does. A program that builds structures larger than the
//! minor heap, and drops them soon after (binarytrees' trees of depth 18
//! and 20, of 12 and 48 MiB), promotes nearly all of them through a small
//! minor heap and almost none through one that holds them whole. But a
//! minor heap larger than the cache makes every allocation miss it: on
//! lu_decomposition (2 vprocs), fixed minor heaps of 64 MiB cut the
//! collections' share of the run from 26 % to 9 % and made the run 1.13 ×
//! slower than 16 MiB ones (alternated in one run,
//! `docs/results/compiled/minor-size-fixed.json`).
//! Survival alone cannot tell the two apart, so the size is chosen by
//! measuring, as HotSpot's adaptive size policy steers its young
//! generation by the time it measures:
//!
//! * The *cost* of a size is the wall time per byte allocated in the minor
//!   heaps, from one minor collection's decision to the next, mutator and
//!   collectors together (a major slice is paid in that time too). The
//!   controller keeps, per size (`local-heap` × 2^k), a running mean of its
//!   recent costs.
//! * When a collection promotes at least [`GROW_AT`] (1/8) of what the
//!   minor heaps held, the minor heaps double (up to `max-minor-heap`),
//!   unless the next size up was measured recently and cost more.
//! * When the next size down was measured recently and cost less, or
//!   was not measured lately (a probe: what it measured may belong to
//!   another phase of the program, its start above all), or a
//!   collection promotes at most [`SHRINK_AT`] (1/32), they halve (down to
//!   `local-heap`). Growth and shrinking by survival are apart by a
//!   factor of 4, so a size does not flap on survival alone.
//! * A size is judged after [`SAMPLES`] collections at it; a measurement
//!   older than [`FRESH`] collections is forgotten (programs change
//!   phases), so a size that lost is tried again later, after twice as
//!   long each time it loses again (trying costs: the larger heap's
//!   collections at the cost measured, and its first touch).
//! * A full collection (the heap limit, or asked for) puts them back to
//!   `local-heap`; a collection asked for before any minor heap was half
//!   full keeps the size and is not measured.
//!
//! Every vproc's minor heap has the same size: a minor collection empties
//! all of them, and the survival and cost measured are theirs together.
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
//! `docs/results/compiled.md` has the figures, adaptive against the fixed
//! size, alternated in one run.

/// Survival (promoted over held) at or above which the minor heaps double.
pub(crate) const GROW_AT: (usize, usize) = (1, 8);
/// Survival at or below which they halve.
pub(crate) const SHRINK_AT: (usize, usize) = (1, 32);
/// Collections at a size before its cost is compared with its neighbours'.
pub(crate) const SAMPLES: u32 = 2;
/// Collections after which a size's cost is forgotten.
pub(crate) const FRESH: u64 = 16;
/// Sizes: `local-heap` × 2^k for k below this.
const LEVELS: usize = 16;

/// What is known of one size.
#[derive(Clone, Copy, Debug)]
struct Measured {
    /// Running mean of nanoseconds per byte allocated.
    cost: f64,
    samples: u32,
    /// The collection that measured it last.
    at: u64,
    /// Collections its measurement is remembered: [`FRESH`], doubled
    /// each time the size loses to the one below (up to 64 × `FRESH`), so
    /// that a program for which a larger size never pays tries it ever
    /// more rarely.
    kept_for: u64,
}

impl Default for Measured {
    fn default() -> Self {
        Measured {
            cost: 0.0,
            samples: 0,
            at: 0,
            kept_for: FRESH,
        }
    }
}

/// The minor heaps' sizing controller: the leader of each minor
/// collection calls [`MinorSizer::decide`], everyone stopped.
#[derive(Debug)]
pub(crate) struct MinorSizer {
    /// `local-heap`: the size at start, and the smallest.
    pub min: usize,
    /// `max-minor-heap`.
    pub max: usize,
    levels: [Measured; LEVELS],
    collections: u64,
    /// When the last decision was made (ns, any fixed origin).
    last_ns: Option<u64>,
}

/// What a minor collection saw, for [`MinorSizer::decide`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct MinorOutcome {
    /// The size of every minor heap during it.
    pub current: usize,
    /// Bytes the fullest minor heap held.
    pub fullest: usize,
    /// Bytes all of them held (allocated since the last collection).
    pub held: usize,
    /// Bytes it promoted.
    pub promoted: usize,
    /// A full collection.
    pub full: bool,
    /// Now, in ns from the origin of earlier calls.
    pub now_ns: u64,
}

impl MinorSizer {
    pub(crate) fn new(min: usize, max: usize) -> MinorSizer {
        MinorSizer {
            min,
            max,
            levels: [Measured::default(); LEVELS],
            collections: 0,
            last_ns: None,
        }
    }

    fn level(&self, size: usize) -> usize {
        ((size / self.min.max(1)).max(1).ilog2() as usize).min(LEVELS - 1)
    }

    /// The cost of level `k` if measured recently enough to judge.
    fn known(&self, k: usize) -> Option<f64> {
        let m = self.levels.get(k)?;
        (m.samples >= SAMPLES && self.collections - m.at <= m.kept_for).then_some(m.cost)
    }

    /// The size of the minor heaps after the collection `o`.
    pub(crate) fn decide(&mut self, o: MinorOutcome) -> usize {
        self.collections += 1;
        let elapsed = self.last_ns.map(|t| o.now_ns.saturating_sub(t));
        self.last_ns = Some(o.now_ns);
        if o.full {
            return self.min;
        }
        if o.fullest < o.current / 2 || o.held == 0 {
            return o.current;
        }
        let k = self.level(o.current);
        if let Some(ns) = elapsed {
            let cost = ns as f64 / o.held as f64;
            let m = &mut self.levels[k];
            if m.samples == 0 || self.collections - m.at > m.kept_for {
                *m = Measured {
                    cost,
                    kept_for: m.kept_for,
                    ..Measured::default()
                };
            } else {
                m.cost = (m.cost + cost) / 2.0;
            }
            m.samples += 1;
            m.at = self.collections;
        }
        let (gn, gd) = GROW_AT;
        let (sn, sd) = SHRINK_AT;
        let high = o.promoted.saturating_mul(gd) >= o.held.saturating_mul(gn);
        let low = o.promoted.saturating_mul(sd) <= o.held.saturating_mul(sn);
        let here = self.known(k);
        let bigger = (o.current < self.max).then(|| o.current.saturating_mul(2).min(self.max));
        let smaller = (o.current > self.min).then(|| (o.current / 2).max(self.min));
        // A smaller size measured cheaper: go back to it. Not measured
        // lately: measure it again (a probe), since what was measured
        // before may belong to another phase of the program (its start).
        if let (Some(s), Some(c)) = (smaller, here) {
            match self.known(self.level(s)) {
                Some(below) if below < c => {
                    let m = &mut self.levels[k];
                    m.kept_for = (m.kept_for * 2).min(64 * FRESH);
                    return s;
                }
                None => return s,
                Some(_) => {}
            }
        }
        if high {
            if let Some(b) = bigger {
                // This size is judged before going up from it; the size
                // above, if measured, must have cost less.
                if let Some(c) = here {
                    if self.known(self.level(b)).is_none_or(|above| above < c) {
                        return b;
                    }
                }
            }
            return o.current;
        }
        match smaller {
            Some(s) if low => s,
            _ => o.current,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIB: usize = 1 << 20;

    /// A program whose cost per byte at each size is `cost(size)` and
    /// whose survival is `survival(size)`, over `n` collections; the sizes
    /// taken, in order.
    fn run(
        s: &mut MinorSizer,
        n: usize,
        cost: impl Fn(usize) -> f64,
        survival: impl Fn(usize) -> f64,
    ) -> Vec<usize> {
        run_from(s, s.min, n, cost, survival)
    }

    /// [`run`] from `size`, the clock going on from the sizer's last call.
    fn run_from(
        s: &mut MinorSizer,
        mut size: usize,
        n: usize,
        cost: impl Fn(usize) -> f64,
        survival: impl Fn(usize) -> f64,
    ) -> Vec<usize> {
        let mut now = s.last_ns.unwrap_or(0);
        let mut sizes = Vec::new();
        if s.last_ns.is_none() {
            // The first call only starts the clock.
            s.decide(MinorOutcome {
                current: size,
                fullest: size,
                held: size,
                promoted: 0,
                full: false,
                now_ns: now,
            });
        }
        for _ in 0..n {
            now += (cost(size) * size as f64) as u64;
            size = s.decide(MinorOutcome {
                current: size,
                fullest: size,
                held: size,
                promoted: (survival(size) * size as f64) as usize,
                full: false,
                now_ns: now,
            });
            sizes.push(size);
        }
        sizes
    }

    #[test]
    fn high_survival_that_pays_off_grows_to_the_maximum() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        // Survival and cost halve with every doubling (binarytrees);
        // survival is high up to 64 MiB.
        let sizes = run(
            &mut s,
            20,
            |z| 64.0 * MIB as f64 / z as f64,
            |z| 8.0 * MIB as f64 / z as f64,
        );
        assert_eq!(*sizes.last().unwrap(), 128 * MIB, "{sizes:?}");
    }

    #[test]
    fn high_survival_that_costs_more_goes_back_and_stays() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        // Survival stays high, but larger sizes cost more (they miss the
        // cache: lu_decomposition).
        let sizes = run(&mut s, 60, |z| z as f64 / MIB as f64, |_| 0.25);
        let at_min = sizes.iter().filter(|&&z| z == 16 * MIB).count();
        assert!(at_min >= 50, "{sizes:?}");
        assert!(sizes.iter().all(|&z| z <= 32 * MIB), "{sizes:?}");
    }

    #[test]
    fn low_survival_halves_down_to_the_minimum() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        let mut size = 128 * MIB;
        for t in 0..10 {
            size = s.decide(MinorOutcome {
                current: size,
                fullest: size,
                held: size,
                promoted: 0,
                full: false,
                now_ns: t,
            });
        }
        assert_eq!(size, 16 * MIB);
    }

    #[test]
    fn survival_between_the_thresholds_keeps_the_size() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        let sizes = run(&mut s, 10, |_| 1.0, |_| 1.0 / 16.0);
        assert!(sizes.iter().all(|&z| z == 16 * MIB), "{sizes:?}");
    }

    /// A collection at `current` of which the fullest heap held
    /// `fullest`, promoting all of it.
    fn all_promoted(current: usize, fullest: usize, full: bool) -> MinorOutcome {
        MinorOutcome {
            current,
            fullest,
            held: fullest,
            promoted: fullest,
            full,
            now_ns: 5,
        }
    }

    #[test]
    fn a_full_collection_returns_to_the_minimum() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        assert_eq!(s.decide(all_promoted(128 * MIB, 128 * MIB, true)), 16 * MIB);
    }

    #[test]
    fn an_early_collection_keeps_the_size() {
        let mut s = MinorSizer::new(16 * MIB, 128 * MIB);
        assert_eq!(s.decide(all_promoted(64 * MIB, 8 * MIB, false)), 64 * MIB);
    }

    #[test]
    fn a_fixed_size_never_changes() {
        let mut s = MinorSizer::new(16 * MIB, 16 * MIB);
        let sizes = run(&mut s, 10, |_| 1.0, |_| 1.0);
        assert!(sizes.iter().all(|&z| z == 16 * MIB), "{sizes:?}");
    }

    #[test]
    fn a_size_that_lost_is_tried_again_once_its_measurement_is_stale() {
        let mut s = MinorSizer::new(16 * MIB, 32 * MIB);
        // 32 MiB costs more for a while, then (a new phase) less.
        let sizes = run(&mut s, 10, |z| z as f64 / MIB as f64, |_| 0.25);
        assert!(sizes.ends_with(&[16 * MIB]), "{sizes:?}");
        let sizes = run_from(
            &mut s,
            16 * MIB,
            2 * FRESH as usize + 10,
            |z| if z == 32 * MIB { 0.5 } else { 1.0 },
            |_| 0.25,
        );
        assert!(sizes.ends_with(&[32 * MIB; 8]), "{sizes:?}");
    }
}
