//! Models of the shared plan's stop-the-world steps
//! (multicore-ocaml-gc.txt §3.2.2 and §4.4.2).
//!
//! * [`colour_rotation_at_the_cycle_barrier_is_seen_by_every_vproc`] checks the
//!   production `Coordinator::phase` and `Colours`. A vproc marks an
//!   object with the cycle's roles, then both vprocs meet at the phase
//!   barrier whose serial step (the leader's) rotates the roles and ends
//!   the collection, as `collection::end_cycle` does. Afterwards each
//!   vproc's *relaxed* read of the roles must see the rotation (the
//!   barrier orders it), the marked object must read as unmarked in the
//!   new cycle without having been touched, and a darkening with the new
//!   roles must mark it again.
//! * [`ephemeron_rounds_at_the_barrier_see_every_vprocs_registrations`] checks
//!   the production `WeakRegistry` (its relaxed count and per-vproc locks),
//!   `Coordinator` and `weak::process`, on ephemerons in plain memory and
//!   a replica tracer. Each vproc registers ephemerons before the
//!   collection; the leader runs the rounds in the serial step of the
//!   barrier, as the end of a cycle does. It must see every registration
//!   (§5.1.3's termination reduces to "a round kept nothing" with everyone
//!   stopped), find a key reachable only through another vproc's
//!   ephemeron's data in a second round, and clear the ephemeron whose key
//!   is dead.
//! * [`promotion_cas_publishes_one_complete_copy`] checks the protocol of
//!   `minor::Promoter::forward` on a replica of the heap (loom cannot
//!   stand in for atomics on raw heap memory; the orderings are the
//!   production ones of `Obj::header_word`, `Obj::cas_header`): two vprocs
//!   reach the same minor-heap object, each copies it into a slot of its
//!   own, and each publishes its copy with a compare-and-swap on the
//!   original's header. Exactly one copy wins; the loser gives its slot
//!   back and uses the winner's; both read the winner's fields complete,
//!   through the forwarding address (the copy is written with plain
//!   relaxed stores before the CAS, as `Obj::copy_to` does).
//!   [`promotion_cas_with_relaxed_orderings_is_caught`] is its control:
//!   with relaxed orderings the model finds a half-made copy.
//! * [`compaction_moves_objects_only_after_every_root_is_darkened`] checks
//!   the start of `compact::run` on the production `Coordinator`: vproc 0
//!   darkens its root, an object in vproc 1's pages, for the cycle that
//!   has begun (the end of `collection::end_cycle`), while vproc 1
//!   evacuates that object (its colour copied to the new slot, the old
//!   slot coloured `MOVED`). The root, forwarded, must end marked.
//!   [`compaction_without_the_barrier_is_caught`] is its control: without
//!   the phase barrier between the two the model finds the mark lost on
//!   the old slot, the race the torture tester found in CI.

use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use super::bounded;
use crate::gc::handshake::{Coordinator, Wake};
use crate::plan::shared_heap::state::{Colours, Roles};

#[test]
fn colour_rotation_at_the_cycle_barrier_is_seen_by_every_vproc() {
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let colours = Arc::new(Colours::new());
        let before = colours.roles();
        // An object's colour byte (unmarked when the cycle began).
        let object = Arc::new(AtomicUsize::new(before.unmarked as usize));

        // vproc 1: marks the object during the cycle, then is stopped.
        let (c1, k1, o1) = (c.clone(), colours.clone(), object.clone());
        let t1 = thread::spawn(move || {
            let r = k1.roles();
            o1.compare_exchange(
                r.unmarked as usize,
                r.marked as usize,
                Ordering::AcqRel,
                Ordering::Relaxed,
            )
            .expect("no one else marks it");
            let w = c1.wait_idle(1, || false);
            assert!(matches!(w, Wake::Collect), "vproc 1 not stopped");
            c1.phase(1, || {});
            k1.roles()
        });
        // vproc 0: ends the cycle; its serial step rotates the roles.
        let (c0, k0) = (c.clone(), colours.clone());
        let t0 = thread::spawn(move || {
            assert!(c0.request(0));
            c0.phase(0, || {
                k0.rotate();
                c0.finish();
            });
            k0.roles()
        });
        let r0 = t0.join().unwrap();
        let r1 = t1.join().unwrap();
        let rotated = Roles {
            marked: before.garbage,
            unmarked: before.marked,
            garbage: before.unmarked,
        };
        assert_eq!(r0, rotated, "the leader reads its rotation");
        assert_eq!(r1, rotated, "vproc 1 reads the rotation after the barrier");
        // The object marked in the old cycle is unmarked in the new one.
        let now = object.load(Ordering::Relaxed);
        assert_eq!(now, r1.unmarked as usize);
        assert!(object
            .compare_exchange(
                r1.unmarked as usize,
                r1.marked as usize,
                Ordering::AcqRel,
                Ordering::Relaxed
            )
            .is_ok());
        assert!(!c.pending());
    });
}

/// A header word that is a header (odd), not a forwarding address.
const HEADER: usize = 1;
/// The original's fields.
const FIELDS: [usize; 2] = [7, 8];

/// One vproc's to-space slot: a header and two fields, and whether the
/// slot is in use (given back by a loser).
struct Slot {
    header: AtomicUsize,
    fields: [AtomicUsize; 2],
    in_use: AtomicUsize,
}

impl Slot {
    fn new() -> Slot {
        Slot {
            header: AtomicUsize::new(0),
            fields: [AtomicUsize::new(0), AtomicUsize::new(0)],
            in_use: AtomicUsize::new(0),
        }
    }
}

/// The minor-heap object and both vprocs' slots; the "address" of slot
/// `i` is `2 * (i + 1)` (even: a forwarding address).
struct Heap {
    header: AtomicUsize,
    fields: [AtomicUsize; 2],
    slots: [Slot; 2],
}

impl Heap {
    fn slot(&self, addr: usize) -> &Slot {
        &self.slots[addr / 2 - 1]
    }

    /// `Promoter::forward` by vproc `v`: the address of the one copy.
    /// `observe` orders the header's reads and `publish` its compare-and-
    /// swap: the production `Acquire` and `AcqRel`, or the control's.
    fn forward(&self, v: usize, observe: Ordering, publish: Ordering) -> usize {
        let hw = self.header.load(observe);
        if hw & 1 == 0 {
            return hw; // promoted already
        }
        let mine = 2 * (v + 1);
        let s = self.slot(mine);
        s.in_use.store(1, Ordering::Relaxed);
        // The copy: plain writes (relaxed), header and fields.
        s.header.store(hw, Ordering::Relaxed);
        for (to, from) in s.fields.iter().zip(&self.fields) {
            to.store(from.load(Ordering::Relaxed), Ordering::Relaxed);
        }
        match self.header.compare_exchange(hw, mine, publish, observe) {
            Ok(_) => mine,
            Err(winner) => {
                s.in_use.store(0, Ordering::Relaxed); // `Pools::unalloc`
                winner
            }
        }
    }
}

/// Two vprocs promote the object with these orderings; checks the copy.
fn promote_twice(observe: Ordering, publish: Ordering) {
    bounded(3).check(move || {
        let heap = Arc::new(Heap {
            header: AtomicUsize::new(HEADER),
            fields: [AtomicUsize::new(FIELDS[0]), AtomicUsize::new(FIELDS[1])],
            slots: [Slot::new(), Slot::new()],
        });
        let handles: Vec<_> = (0..2)
            .map(|v| {
                let h = heap.clone();
                thread::spawn(move || {
                    let a = h.forward(v, observe, publish);
                    // Read the copy through the forwarding address, as the
                    // scan of the copies (and any later reader) does.
                    let s = h.slot(a);
                    assert_eq!(s.header.load(Ordering::Relaxed), HEADER, "a half-made copy");
                    for (f, want) in s.fields.iter().zip(FIELDS) {
                        assert_eq!(f.load(Ordering::Relaxed), want, "a half-made copy");
                    }
                    a
                })
            })
            .collect();
        let got: Vec<usize> = handles.into_iter().map(|t| t.join().unwrap()).collect();
        assert_eq!(got[0], got[1], "both vprocs use one copy");
        assert_eq!(heap.header.load(Ordering::Relaxed), got[0]);
        let in_use: usize = heap
            .slots
            .iter()
            .map(|s| s.in_use.load(Ordering::Relaxed))
            .sum();
        assert_eq!(in_use, 1, "the loser gave its slot back");
    });
}

#[test]
fn promotion_cas_publishes_one_complete_copy() {
    promote_twice(Ordering::Acquire, Ordering::AcqRel);
}

/// The control: with relaxed orderings the model must find a vproc that
/// reads the winner's copy before its fields arrive.
#[test]
#[should_panic(expected = "a half-made copy")]
fn promotion_cas_with_relaxed_orderings_is_caught() {
    promote_twice(Ordering::Relaxed, Ordering::Relaxed);
}

/// The replica heap of the ephemeron model: which values are alive.
struct Liveness {
    live: std::collections::HashSet<u64>,
}

impl crate::weak::WeakTracer for Liveness {
    fn live(&self, w: u64) -> Option<u64> {
        // Immediates (odd) and the ephemerons themselves (boxed, see the
        // model) are alive; the replica's values are small even numbers.
        (w & 1 == 1 || w > 1 << 20 || self.live.contains(&w)).then_some(w)
    }

    fn keep(&mut self, w: u64) -> u64 {
        self.live.insert(w);
        w
    }

    fn drain(&mut self) {}
}

/// An ephemeron object in plain memory: header, key, data.
fn ephemeron(key: u64, data: u64) -> Box<[u64; 3]> {
    let h = crate::object::header::Header::new(crate::object::header::ID_EPHEMERON, 2);
    Box::new([h.bits(), key, data])
}

#[test]
fn ephemeron_rounds_at_the_barrier_see_every_vprocs_registrations() {
    // Values: K1 = 2 (a root), K2 = 4 (reached only as e1's data), D2 = 6
    // (e2's data, alive only if e2's round finds K2 alive), K3 = 8 (dead).
    bounded(3).check(|| {
        use crate::weak::{process, Lists, VprocWeak, WeakRegistry, CLEARED};
        let c = Arc::new(Coordinator::<u32>::new(2));
        let reg = Arc::new(WeakRegistry::new(2));
        let e1 = ephemeron(2, 4);
        let e2 = ephemeron(4, 6);
        let e3 = ephemeron(8, 6);
        let addr = |e: &[u64; 3]| e.as_ptr() as u64;
        let (a1, a2, a3) = (addr(&e1), addr(&e2), addr(&e3));

        // vproc 1 registers e1 and e3, then is stopped by the collection.
        let (c1, r1) = (c.clone(), reg.clone());
        let t1 = thread::spawn(move || {
            r1.lock(1).eph_shared.extend([a1, a3]);
            let w = c1.wait_idle(1, || false);
            assert!(matches!(w, Wake::Collect), "vproc 1 not stopped");
            c1.phase(1, || {});
        });
        // vproc 0 registers e2 and leads: the rounds run in the serial
        // step, every vproc stopped, as `weak::at_cycle_end` runs them.
        // e2 comes first in the lists, so only a second round finds its
        // key alive.
        let (c0, r0) = (c.clone(), reg.clone());
        let t0 = thread::spawn(move || {
            r0.lock(0).eph_shared.push(a2);
            assert!(c0.request(0));
            let mut kept = Vec::new();
            c0.phase(0, || {
                assert!(!r0.is_empty(), "the leader sees the registrations");
                let mut t = Liveness {
                    live: [2].into_iter().collect(),
                };
                let mut locked = r0.lock_all();
                let mut lists: Vec<&mut VprocWeak> = locked.iter_mut().map(|l| &mut **l).collect();
                process(&mut lists, Lists::All, &mut t);
                kept = t.live.into_iter().collect();
                c0.finish();
            });
            kept
        });
        t1.join().unwrap();
        let mut kept = t0.join().unwrap();
        kept.sort();
        assert_eq!(
            kept,
            vec![2, 4, 6],
            "the chain e1 -> e2 kept K2 and D2, not K3"
        );
        assert_eq!(e1[1..], [2, 4]);
        assert_eq!(e2[1..], [4, 6]);
        assert_eq!(
            e3[1..],
            [CLEARED, CLEARED],
            "a dead key clears its ephemeron"
        );
        assert_eq!(
            reg.lock(1).eph_shared.len(),
            2,
            "live ephemerons stay listed"
        );
    });
}

/// The colour the compaction gives a slot whose object moved.
const MOVED: usize = crate::plan::shared_heap::compact::MOVED as usize;

/// vproc 0 darkens its root while vproc 1 compacts the page the root
/// points into; `barrier`: the phase at the start of `compact::run`.
fn darken_then_compact(barrier: bool) {
    bounded(3).check(move || {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let roles = Colours::new().roles();
        // The object's slot before and after the compaction.
        let old = Arc::new(AtomicUsize::new(roles.unmarked as usize));
        let new = Arc::new(AtomicUsize::new(0));

        let (c1, o1, n1) = (c.clone(), old.clone(), new.clone());
        let t1 = thread::spawn(move || {
            let w = c1.wait_idle(1, || false);
            assert!(matches!(w, Wake::Collect), "vproc 1 not stopped");
            // Its own roots darkened (none), then the compaction.
            if barrier {
                c1.phase(1, || {});
            }
            // `evacuate`: the colour goes with the copy.
            n1.store(o1.load(Ordering::Relaxed), Ordering::Relaxed);
            o1.store(MOVED, Ordering::Relaxed);
            c1.phase(1, || {});
            c1.phase(1, || {});
        });
        let (c0, o0, n0) = (c.clone(), old.clone(), new.clone());
        let t0 = thread::spawn(move || {
            assert!(c0.request(0));
            // `darken` of the root, as `end_cycle` leaves it.
            let _ = o0.compare_exchange(
                roles.unmarked as usize,
                roles.marked as usize,
                Ordering::AcqRel,
                Ordering::Relaxed,
            );
            if barrier {
                c0.phase(0, || {});
            }
            c0.phase(0, || {});
            // `update_own`: the root follows a moved object.
            let slot = if o0.load(Ordering::Relaxed) == MOVED {
                &n0
            } else {
                &o0
            };
            let colour = slot.load(Ordering::Relaxed);
            c0.phase(0, || c0.finish());
            colour
        });
        t1.join().unwrap();
        let colour = t0.join().unwrap();
        assert_eq!(colour, roles.marked as usize, "the root's mark was lost");
        assert!(!c.pending());
    });
}

#[test]
fn compaction_moves_objects_only_after_every_root_is_darkened() {
    darken_then_compact(true);
}

/// The control: without the barrier a mark lands on the old slot after
/// its copy was made.
#[test]
#[should_panic(expected = "the root's mark was lost")]
fn compaction_without_the_barrier_is_caught() {
    darken_then_compact(false);
}
