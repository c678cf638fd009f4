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
//! Survival alone cannot tell the two apart, so sizes are compared by
//! measuring, as HotSpot's adaptive size policy steers its young
//! generation by the time it measures. But a program's cost per byte
//! changes with its phases far more than with the size: binarytrees'
//! shallow trees cost 0.3 ns per byte allocated and its deep ones 0.8, so
//! a size measured in one phase says nothing of one measured in another
//! (a controller that kept each size's cost and compared it with its
//! neighbours' measured at other times took the large sizes, used in the
//! deep phases, for the costly ones, and each probe of a smaller size
//! walked the heaps down to the smallest one level at a time: binarytrees
//! promoted 1,199 MiB through them, 995 MiB with probes). So a size is
//! only ever compared with the one it was just left for, in a *probe*:
//!
//! * The *cost* at a size is the wall time per byte allocated in the minor
//!   heaps, from one minor collection's decision to the next, mutator and
//!   collectors together (a major slice is paid in that time too), and its
//!   *survival* what a collection promoted over what the heaps held
//!   (averaged over the collections at the size, the latest weighing half,
//!   for growing and shrinking; a probe is judged by single collections,
//!   below).
//! * A size is judged after [`SAMPLES`] collections at it. Then, when its
//!   survival is at least [`GROW_AT`] (1/8), the minor heaps double (up to
//!   `max-minor-heap`) to probe the next size up; when it is at most
//!   [`SHRINK_AT`] (1/32), or the size has been kept for [`FRESH`]
//!   collections (what was measured may belong to another phase, the
//!   program's start above all), they halve to probe the size below.
//!   Growth and shrinking by survival are apart by a factor of 4, so a
//!   size does not flap on survival alone.
//! * A probe is judged after its own [`SAMPLES`] collections (a probe up
//!   that halved the survival and won is taken after one), its latest
//!   collection (the first at a larger size pays the first touch of the
//!   memory it grew into) against the size it left as its last collection
//!   measured it (not an average: a phase may have begun within it). A
//!   larger size wins when it cost clearly less ([`CLEARLY`]), or no more
//!   while promoting clearly less (a
//!   structure larger than both sizes promotes nearly everything at both;
//!   the size that holds it whole is found by going on up); a smaller size
//!   wins when its survival is below [`GROW_AT`] and it cost no more, or
//!   the size it left promoted at most [`SHRINK_AT`] (then it is kept
//!   whatever it costs, unless it would grow again at once). A
//!   size that loses is left, and not probed again for [`FRESH`]
//!   collections, twice as long each time it loses again (up to 64 ×), so
//!   a program for which a larger size never pays tries it ever more
//!   rarely.
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
/// Collections at a size before it is judged.
pub(crate) const SAMPLES: u32 = 2;
/// Collections a size is kept before the size below is probed, and that a
/// size which lost a probe is left at first.
pub(crate) const FRESH: u64 = 16;
/// A larger size wins a probe when it costs at most `1 - CLEARLY` of the
/// smaller's cost, or no more while promoting at most `1 - 2 × CLEARLY`
/// of what the smaller promoted (per byte allocated). Not "about the
/// same" cost: a climb that takes a size 10 % dearer at each step took
/// lu_decomposition to 64 MiB, 1.1 × slower.
const CLEARLY: f64 = 0.1;
/// Sizes: `local-heap` × 2^k for k below this.
const LEVELS: usize = 16;

/// One collection's measurement.
#[derive(Clone, Copy, Debug, Default)]
struct Sample {
    /// Nanoseconds per byte allocated; `None` until a collection had the
    /// time since the one before.
    cost: Option<f64>,
    /// Bytes promoted per byte held.
    survival: f64,
}

/// What the collections at the current size measured.
#[derive(Clone, Copy, Debug, Default)]
struct Measured {
    /// Survival averaged over them, the latest weighing half: what the
    /// size grows or shrinks by.
    survival: f64,
    samples: u32,
    /// The latest collection's alone: what a probe is judged by.
    latest: Sample,
}

impl Measured {
    fn add(&mut self, cost: Option<f64>, survival: f64) {
        self.latest = Sample {
            cost: cost.or(self.latest.cost),
            survival,
        };
        self.survival = if self.samples == 0 {
            survival
        } else {
            (self.survival + survival) / 2.0
        };
        self.samples += 1;
    }
}

/// A probe under way: the size it left and what was measured there.
#[derive(Clone, Copy, Debug)]
struct Probe {
    from: usize,
    before: Sample,
}

/// How long a size that lost a probe is left alone.
#[derive(Clone, Copy, Debug)]
struct Ban {
    /// No probe to the size before this collection.
    until: u64,
    /// Collections of the next ban.
    next: u64,
}

/// The minor heaps' sizing controller: the leader of each minor
/// collection calls [`MinorSizer::decide`], everyone stopped.
#[derive(Debug)]
pub(crate) struct MinorSizer {
    /// `local-heap`: the size at start, and the smallest.
    pub min: usize,
    /// `max-minor-heap`.
    pub max: usize,
    /// The collections at the current size since it was taken.
    here: Measured,
    probe: Option<Probe>,
    bans: [Ban; LEVELS],
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

fn at_least(x: f64, (n, d): (usize, usize)) -> bool {
    x * d as f64 >= n as f64
}

fn low(survival: f64) -> bool {
    survival * SHRINK_AT.1 as f64 <= SHRINK_AT.0 as f64
}

impl MinorSizer {
    pub(crate) fn new(min: usize, max: usize) -> MinorSizer {
        MinorSizer {
            min,
            max,
            here: Measured::default(),
            probe: None,
            bans: [Ban {
                until: 0,
                next: FRESH,
            }; LEVELS],
            collections: 0,
            last_ns: None,
        }
    }

    fn level(&self, size: usize) -> usize {
        ((size / self.min.max(1)).max(1).ilog2() as usize).min(LEVELS - 1)
    }

    fn banned(&self, size: usize) -> bool {
        self.collections < self.bans[self.level(size)].until
    }

    /// Leaves `from`, the current size, for `to`: a probe.
    fn go(&mut self, from: usize, to: usize) -> usize {
        self.probe = Some(Probe {
            from,
            before: self.here.latest,
        });
        self.here = Measured::default();
        to
    }

    /// Whether the probe's size (measured in `self.here`) beat the size it
    /// left.
    fn probe_won(&self, p: &Probe, current: usize) -> bool {
        // Both sides by their latest collection: the probe's first
        // collection paid the first touch of the memory it grew into.
        let (now, before) = (self.here.latest, p.before);
        let cost = match (now.cost, before.cost) {
            (Some(a), Some(b)) if b > 0.0 => Some(a / b),
            _ => None,
        };
        if current > p.from {
            match cost {
                Some(r) => {
                    r <= 1.0 - CLEARLY
                        || (r <= 1.0 && now.survival <= before.survival * (1.0 - 2.0 * CLEARLY))
                }
                None => now.survival <= before.survival * (1.0 - 2.0 * CLEARLY),
            }
        } else {
            // Left for its low survival: kept unless it promotes enough
            // to grow again; left on a periodic probe: kept if no dearer.
            !at_least(now.survival, GROW_AT)
                && (low(before.survival) || cost.is_none_or(|r| r <= 1.0))
        }
    }

    /// The size of the minor heaps after the collection `o`.
    pub(crate) fn decide(&mut self, o: MinorOutcome) -> usize {
        self.collections += 1;
        let elapsed = self.last_ns.map(|t| o.now_ns.saturating_sub(t));
        self.last_ns = Some(o.now_ns);
        if o.full {
            self.probe = None;
            self.here = Measured::default();
            return self.min;
        }
        if o.fullest < o.current / 2 || o.held == 0 {
            return o.current;
        }
        self.here.add(
            elapsed.map(|ns| ns as f64 / o.held as f64),
            o.promoted as f64 / o.held as f64,
        );
        if let Some(p) = self.probe {
            // A probe up that halved the survival and won already is
            // taken at once: the climb to the size that holds a program's
            // structures is then one collection a size. It is not lost
            // on one collection, whose time includes the first touch of
            // the memory the minor heaps grew into.
            let judged = self.here.samples >= SAMPLES;
            let halved = o.current > p.from && self.here.survival <= p.before.survival / 2.0;
            if !judged && !halved {
                return o.current;
            }
            let won = self.probe_won(&p, o.current);
            if !judged && !won {
                return o.current;
            }
            self.probe = None;
            let ban = &mut self.bans[self.level(o.current)];
            if !won {
                ban.until = self.collections + ban.next;
                ban.next = (ban.next * 2).min(64 * FRESH);
                self.here = Measured::default();
                return p.from;
            }
            ban.next = FRESH;
        } else if self.here.samples < SAMPLES {
            return o.current;
        }
        let bigger = (o.current < self.max).then(|| o.current.saturating_mul(2).min(self.max));
        let smaller = (o.current > self.min).then(|| (o.current / 2).max(self.min));
        if at_least(self.here.survival, GROW_AT) {
            if let Some(b) = bigger.filter(|&b| !self.banned(b)) {
                return self.go(o.current, b);
            }
        }
        let low = low(self.here.survival);
        if let Some(s) = smaller.filter(|&s| !self.banned(s)) {
            if low || u64::from(self.here.samples) >= FRESH {
                return self.go(o.current, s);
            }
        }
        o.current
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

    /// The share of `sizes` that are `size`.
    fn share(sizes: &[usize], size: usize) -> f64 {
        sizes.iter().filter(|&&z| z == size).count() as f64 / sizes.len() as f64
    }

    /// Binarytrees: every doubling of the minor heaps (16 MiB up to `max`)
    /// halves the cost per byte, and `survivors` MiB survive a collection
    /// at any size (at most 90 % of it); the sizes of `n` collections.
    fn halving(max: usize, survivors: f64, n: usize) -> Vec<usize> {
        run(
            &mut MinorSizer::new(16 * MIB, max),
            n,
            |z| 64.0 * MIB as f64 / z as f64,
            |z| (survivors * MIB as f64 / z as f64).min(0.9),
        )
    }

    #[test]
    fn high_survival_that_pays_off_grows_to_the_maximum() {
        // Survival is high up to 64 MiB. The size below is probed every
        // `FRESH` collections, and loses.
        let sizes = halving(128 * MIB, 8.0, 60);
        assert!(share(&sizes[4..], 128 * MIB) >= 0.8, "{sizes:?}");
        assert!(sizes[4..].iter().all(|&z| z >= 64 * MIB), "{sizes:?}");
    }

    #[test]
    fn a_probe_that_loses_goes_back_up_without_probing_further_down() {
        // Probes of smaller sizes must not cascade down to the minimum
        // (each size below judged, then the next below it probed before
        // going back up).
        let sizes = halving(256 * MIB, 32.0, 400);
        assert!(share(&sizes[40..], 256 * MIB) >= 0.9, "{sizes:?}");
        assert!(sizes[40..].iter().all(|&z| z >= 128 * MIB), "{sizes:?}");
    }

    #[test]
    fn a_costly_phase_after_a_cheap_one_is_not_judged_by_it() {
        // Binarytrees: phases of 1.5 GiB allocated each, alternately of
        // small trees (nothing survives; the larger sizes cost a little
        // more, the cache) and of trees of 32 MiB (what survives halves
        // with every doubling past half their size, and promoting a byte
        // costs 1 ns). The costly phases must be spent at the sizes that
        // hold their trees, whatever the cheap phases measured.
        let mut s = MinorSizer::new(16 * MIB, 256 * MIB);
        let (mut size, mut now, mut allocated) = (16 * MIB, 0u64, 0usize);
        let (mut costly_bytes, mut costly_large_bytes) = (0usize, 0usize);
        for _ in 0..3000 {
            let costly = (allocated / (1536 * MIB)) % 2 == 1;
            let cache = 0.02 * (size / (16 * MIB)).ilog2() as f64;
            let survival = if costly {
                (16.0 * MIB as f64 / size as f64).min(0.9)
            } else {
                0.01
            };
            now += ((0.3 + survival + cache) * size as f64) as u64;
            allocated += size;
            if costly {
                costly_bytes += size;
                if size >= 128 * MIB {
                    costly_large_bytes += size;
                }
            }
            size = s.decide(MinorOutcome {
                current: size,
                fullest: size,
                held: size,
                promoted: (survival * size as f64) as usize,
                full: false,
                now_ns: now,
            });
        }
        assert!(
            costly_large_bytes * 10 >= costly_bytes * 8,
            "{costly_large_bytes} of {costly_bytes} bytes at 128 MiB or more"
        );
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
