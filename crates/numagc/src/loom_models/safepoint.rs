//! Faults (issue 5): the safepoint deadline of a global collection (§3.4
//! extended).
//!
//! The deadline protocol of `gc::handshake` (`enter`, `gather`, `expire`):
//! a global collection either has every vproc take part, or is called off
//! before anything moves, with the vprocs that stopped back at work and the
//! late vproc finding nothing to join.
//!
//! * [`late_vproc_either_takes_part_or_finds_nothing`]: vproc 0
//!   requests and goes to its safepoint; vproc 1 reaches one safepoint at an
//!   arbitrary moment (it may look before the request and then never
//!   again); a timer thread lets the deadline pass at an arbitrary moment.
//!   Exactly one outcome: both took part (the serial step ran once, the
//!   collection completed), or the collection was abandoned — `undo` ran
//!   once after every hand-in, no serial step ran, the vproc that waited
//!   was told which vproc was late, and that vproc took no part. Nothing is
//!   pending afterwards, so whatever either vproc does next it finds no
//!   collection to join. No interleaving hangs (loom reports deadlocks).
//! * [`late_leader_finds_its_collection_abandoned`]: the same
//!   with the requester itself late (a promotion asks for a collection at
//!   the next safepoint) and vproc 1 prompt.
//! * [`refused_serial_step_abandons_for_everyone_and_the_next_collection_works`]:
//!   the leader's serial step refuses (no to-space): both vprocs are told,
//!   `undo` runs once, and a new collection afterwards completes normally.
//!
//! The first model found a real race while it was written: `request` set
//! `pending` by compare-and-swap and recorded the leader and the start of
//! the deadline afterwards, so a vproc could enter and abandon the new
//! collection in between and leave a stale leader (and deadline) behind;
//! `request` now swaps under the state lock.
//!
//! Mutation check (done while writing these models, on a scratch copy):
//! letting `enter` succeed on a closed collection, abandoning when every
//! vproc has entered, and skipping `undo` when the serial step refuses each
//! make a model fail. Not caught with two vprocs (they need a third vproc,
//! or a new request during the abandonment, which these models leave out to
//! stay small): delivering the outcome only to the abandoner, and clearing
//! `pending` as soon as the collection is closed.

use super::bounded;
use crate::gc::handshake::{Abandoned, Coordinator, Entry};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;
use std::time::Duration;

/// Counters of a collection's steps (`Relaxed`: visibility comes from
/// the coordinator).
#[derive(Default)]
struct Steps {
    serial: AtomicUsize,
    undo: AtomicUsize,
    /// Chunks handed in (each vproc adds one before gathering) and
    /// given back by `undo`.
    handed_in: AtomicUsize,
    given_back: AtomicUsize,
}

fn coordinator() -> Arc<Coordinator<u32>> {
    Arc::new(Coordinator::with_safepoint_timeout(
        2,
        Some(Duration::from_millis(1)),
    ))
}

/// Vproc `v` takes part in the collection it entered: hands in its
/// chunk, gathers, and if the collection goes on, runs the last phase
/// (whose serial part ends it). Returns the gather's outcome.
fn take_part(c: &Coordinator<u32>, k: &Steps, v: usize) -> Result<(), Abandoned> {
    k.handed_in.fetch_add(1, Ordering::Relaxed);
    let r = c.gather(
        v,
        || {
            assert_eq!(
                k.handed_in.load(Ordering::Relaxed),
                2,
                "serial step before every vproc arrived"
            );
            k.serial.fetch_add(1, Ordering::Relaxed);
            Ok(())
        },
        || {
            k.undo.fetch_add(1, Ordering::Relaxed);
            // Everything handed in by the vprocs that entered is back.
            let n = k.handed_in.load(Ordering::Relaxed);
            k.given_back.store(n, Ordering::Relaxed);
        },
    );
    if r.is_ok() {
        assert!(
            c.pending(),
            "vproc {v} left the gather of a collection that ended"
        );
        c.phase(v, || c.finish());
        assert!(!c.pending());
    }
    r
}

/// What a vproc saw at one safepoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Seen {
    /// No collection pending.
    Nothing,
    /// It entered and took part; the gather's outcome.
    TookPart(Result<(), Abandoned>),
    /// It found the collection being abandoned and took no part.
    Refused(Abandoned),
}

/// One safepoint of vproc `v`: joins the pending collection, if any.
fn safepoint(c: &Coordinator<u32>, k: &Steps, v: usize) -> Seen {
    if !c.pending() {
        return Seen::Nothing;
    }
    match c.enter(v) {
        Entry::Entered => Seen::TookPart(take_part(c, k, v)),
        Entry::NotPending => Seen::Nothing,
        Entry::Abandoned(a) => Seen::Refused(a),
    }
}

/// Exactly one outcome: every vproc took part in a collection that
/// completed, or the collection was abandoned — undo once, no serial
/// step, the vprocs that took part told which vproc was late, and that
/// vproc took no part. Either way nothing is pending afterwards.
fn check_outcome(c: &Coordinator<u32>, k: &Steps, seen: [Seen; 2]) {
    if seen.contains(&Seen::TookPart(Ok(()))) {
        assert_eq!(
            seen,
            [Seen::TookPart(Ok(())); 2],
            "a collection completed without every vproc"
        );
        assert_eq!(k.serial.load(Ordering::Relaxed), 1);
        assert_eq!(k.undo.load(Ordering::Relaxed), 0);
        assert_eq!((c.collections(), c.collections_abandoned()), (1, 0));
    } else {
        assert_eq!(
            (c.collections(), c.collections_abandoned()),
            (0, 1),
            "{seen:?}"
        );
        assert_eq!(
            k.serial.load(Ordering::Relaxed),
            0,
            "abandoned after the serial step"
        );
        assert_eq!(
            k.undo.load(Ordering::Relaxed),
            1,
            "undo ran {} times",
            k.undo.load(Ordering::Relaxed)
        );
        assert_eq!(
            k.given_back.load(Ordering::Relaxed),
            k.handed_in.load(Ordering::Relaxed),
            "a hand-in came after undo"
        );
        let mut took_part = 0;
        for (v, s) in seen.iter().enumerate() {
            if let Seen::TookPart(r) = s {
                took_part += 1;
                match r {
                    Err(Abandoned::Late { vproc, .. }) => {
                        assert_ne!(*vproc, v, "vproc {v} took part and was named late");
                        assert!(
                            !matches!(seen[*vproc], Seen::TookPart(_)),
                            "the late vproc {vproc} took part: {seen:?}"
                        );
                    }
                    other => panic!("vproc {v}: {other:?}"),
                }
            }
        }
        assert_eq!(took_part, 1, "someone waited and abandoned: {seen:?}");
    }
    assert!(!c.pending());
    assert_eq!(c.leader(), None);
    // Whatever either vproc does next, it finds nothing to join.
    for v in 0..2 {
        assert!(!c.set_limit(v, 7));
        assert_eq!(c.enter(v), Entry::NotPending);
    }
}

#[test]
fn late_vproc_either_takes_part_or_finds_nothing() {
    bounded(3).check(|| {
        let c = coordinator();
        let k = Arc::new(Steps::default());
        // vproc 1 reaches one safepoint, at any moment (before the
        // request, then never again, included).
        let (c1, k1) = (c.clone(), k.clone());
        let late = thread::spawn(move || safepoint(&c1, &k1, 1));
        let ct = c.clone();
        let timer = thread::spawn(move || ct.expire());
        assert!(c.request(0));
        let prompt = safepoint(&c, &k, 0);
        let late = late.join().unwrap();
        timer.join().unwrap();
        check_outcome(&c, &k, [prompt, late]);
    });
}

#[test]
fn late_leader_finds_its_collection_abandoned() {
    bounded(3).check(|| {
        let c = coordinator();
        let k = Arc::new(Steps::default());
        assert!(c.request(0));
        // vproc 1 sees the request at once.
        let (c1, k1) = (c.clone(), k.clone());
        let prompt = thread::spawn(move || safepoint(&c1, &k1, 1));
        let ct = c.clone();
        let timer = thread::spawn(move || ct.expire());
        // The leader reaches its safepoint late, at any moment.
        let late = safepoint(&c, &k, 0);
        let prompt = prompt.join().unwrap();
        timer.join().unwrap();
        check_outcome(&c, &k, [late, prompt]);
    });
}

#[test]
fn refused_serial_step_abandons_for_everyone_and_the_next_collection_works() {
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let k = Arc::new(Steps::default());
        let refusal = Abandoned::NoToSpace {
            bytes: 4096,
            errno: 12,
        };
        let run = move |c: &Coordinator<u32>, k: &Steps, v: usize, refuse: bool| {
            c.request(v);
            assert_eq!(c.enter(v), Entry::Entered);
            k.handed_in.fetch_add(1, Ordering::Relaxed);
            c.gather(
                v,
                || {
                    k.serial.fetch_add(1, Ordering::Relaxed);
                    if refuse {
                        Err(refusal)
                    } else {
                        Ok(())
                    }
                },
                || {
                    k.undo.fetch_add(1, Ordering::Relaxed);
                },
            )
        };
        let (c1, k1) = (c.clone(), k.clone());
        let other = thread::spawn(move || {
            let first = run(&c1, &k1, 1, true);
            // The second collection: completes.
            while !c1.pending() {
                thread::yield_now();
            }
            assert_eq!(c1.enter(1), Entry::Entered);
            let second = c1.gather(1, || Ok(()), || panic!("nothing to undo"));
            assert_eq!(second, Ok(()));
            c1.phase(1, || c1.finish());
            first
        });
        let first = run(&c, &k, 0, true);
        assert_eq!(first, Err(refusal));
        assert_eq!(k.serial.load(Ordering::Relaxed), 1, "one serial step");
        assert_eq!(
            k.undo.load(Ordering::Relaxed),
            1,
            "undo once, by the refusing leader"
        );
        assert!(!c.pending(), "the refused collection is over");
        assert_eq!(c.collections_abandoned(), 1);
        // A new collection, whether or not vproc 1 has woken from the
        // refused one yet.
        assert!(c.request(0));
        assert_eq!(c.enter(0), Entry::Entered);
        assert_eq!(c.gather(0, || Ok(()), || panic!("nothing to undo")), Ok(()));
        c.phase(0, || c.finish());
        assert_eq!(other.join().unwrap(), Err(refusal));
        assert!(!c.pending());
        assert_eq!((c.collections(), c.collections_abandoned()), (1, 1));
    });
}
