//! Models of the shared plan's stop-the-world steps
//! (multicore-ocaml-gc.txt §3.2.2 and §4.4.2).
//!
//! * [`colour_rotation_at_the_cycle_barrier_is_seen_by_every_vproc`]: the
//!   production `Coordinator::phase` and `Colours`. A vproc marks an
//!   object with the cycle's roles, then both vprocs meet at the phase
//!   barrier whose serial step (the leader's) rotates the roles and ends
//!   the collection, as `collection::end_cycle` does. Afterwards each
//!   vproc's *relaxed* read of the roles must see the rotation (the
//!   barrier orders it), the marked object must read as unmarked in the
//!   new cycle without having been touched, and a darkening with the new
//!   roles must mark it again.
//! * [`promotion_cas_publishes_one_complete_copy`]: the protocol of
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
