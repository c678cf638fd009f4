//! Models of the global-collection handshake (`gc/handshake.rs`): leader
//! election and limit zeroing, `set_limit` against `request`, the barriers
//! of the two phases, and an idle vproc's jobs and shutdown (§3.4).

use super::{bounded, run_two_phases, wake_name, PhaseCounters};
use crate::gc::handshake::{Coordinator, Wake};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

// ---------------------------------------------------------------------------
// §3.4 leader election and limit zeroing
// ---------------------------------------------------------------------------

#[test]
fn handshake_leader_unique_and_limits_zeroed() {
    loom::model(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        // Both vprocs are running with an installed limit.
        assert!(!c.set_limit(0, 10));
        assert!(!c.set_limit(1, 11));

        // vproc 0 triggers and does nothing else.
        let c0 = c.clone();
        let t0 = thread::spawn(move || c0.request(0));
        // vproc 1 triggers, then re-installs a limit (as after a local
        // collection) and records what `set_limit` reported.
        let c1 = c.clone();
        let t1 = thread::spawn(move || {
            let won = c1.request(1);
            let pending = c1.set_limit(1, 21);
            (won, pending)
        });
        let won0 = t0.join().unwrap();
        let (won1, pending1) = t1.join().unwrap();

        assert!(won0 ^ won1, "exactly one request wins: {won0} {won1}");
        assert_eq!(c.leader(), Some(if won0 { 0 } else { 1 }));
        assert!(c.pending());
        // vproc 0 never re-installed: its cell is zero.
        assert_eq!(c.limit_cell(0).load(Ordering::SeqCst), 0);
        // vproc 1's cell is zero, or holds the re-installed limit and then
        // `set_limit` must have told vproc 1 to join the collection.
        let l1 = c.limit_cell(1).load(Ordering::SeqCst);
        assert!(l1 == 0 || l1 == 21, "limit 1 = {l1}");
        assert!(pending1, "set_limit after a request must report it");
        assert_eq!(c.collections(), 0);
    });
}

/// The property on the production code: `set_limit` and `request` each
/// put a `fence(SeqCst)` between their two accesses, so the store-buffering
/// outcome (A misses `pending` *and* keeps its limit) is excluded under
/// loom's model too (see "loom and SeqCst" in the module docs).
#[test]
fn set_limit_never_misses_a_request() {
    loom::model(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let ca = c.clone();
        let a = thread::spawn(move || ca.set_limit(0, 42));
        let cb = c.clone();
        let b = thread::spawn(move || cb.request(1));
        let saw_pending = a.join().unwrap();
        assert!(b.join().unwrap());
        let l0 = c.limit_cell(0).load(Ordering::SeqCst);
        assert!(l0 == 0 || l0 == 42);
        assert!(
            saw_pending || l0 == 0,
            "vproc 0 missed the pending collection and kept limit {l0}"
        );
    });
}

/// A two-cell replica of the `set_limit` / `request` race, with a
/// `fence(SeqCst)` between each side's two accesses as in the production
/// code. `reordered` makes A load `pending` before storing its limit.
/// Returns (what A's load saw, the final limit).
fn fenced_set_limit_race(reordered: bool) -> (bool, usize) {
    use loom::sync::atomic::{fence, AtomicBool};
    let pending = Arc::new(AtomicBool::new(false));
    let limit = Arc::new(AtomicUsize::new(0));
    let (p, l) = (pending.clone(), limit.clone());
    let a = thread::spawn(move || {
        if reordered {
            let seen = p.load(Ordering::SeqCst);
            fence(Ordering::SeqCst);
            l.store(42, Ordering::SeqCst);
            seen
        } else {
            l.store(42, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            p.load(Ordering::SeqCst)
        }
    });
    let (p, l) = (pending.clone(), limit.clone());
    let b = thread::spawn(move || {
        assert!(p
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok());
        fence(Ordering::SeqCst);
        l.store(0, Ordering::SeqCst);
    });
    let seen = a.join().unwrap();
    b.join().unwrap();
    (seen, limit.load(Ordering::SeqCst))
}

/// Control: the assertion of [`set_limit_never_misses_a_request`] catches
/// the wrong order (load `pending`, then store the limit), so that model is
/// not vacuous.
#[test]
#[should_panic(expected = "missed the pending collection")]
fn set_limit_fenced_replica_reordered_is_caught() {
    loom::model(|| {
        let (saw_pending, l0) = fenced_set_limit_race(true);
        assert!(
            saw_pending || l0 == 0,
            "vproc 0 missed the pending collection and kept limit {l0}"
        );
    });
}

// ---------------------------------------------------------------------------
// §3.4 phases: wait for all vprocs, leader's serial part once
// ---------------------------------------------------------------------------

#[test]
fn phases_run_serial_once_with_idle_vproc() {
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let k = Arc::new(PhaseCounters::new());

        // vproc 1: idle, must be woken for the collection.
        let (c1, k1) = (c.clone(), k.clone());
        let t1 = thread::spawn(move || {
            let w = c1.wait_idle(1, || false);
            assert!(
                matches!(w, Wake::Collect),
                "idle vproc got {}",
                wake_name(&w)
            );
            run_two_phases(&c1, &k1, 1);
        });
        // vproc 0: triggers and leads.
        let (c0, k0) = (c.clone(), k.clone());
        let t0 = thread::spawn(move || {
            assert!(c0.request(0));
            assert_eq!(c0.leader(), Some(0));
            run_two_phases(&c0, &k0, 0);
        });
        t0.join().unwrap();
        t1.join().unwrap();

        assert_eq!(k.serial1.load(Ordering::Relaxed), 1);
        assert_eq!(k.serial2.load(Ordering::Relaxed), 1);
        assert!(!c.pending());
        assert_eq!(c.collections(), 1);
        assert_eq!(c.leader(), None);
    });
}

#[test]
fn phases_with_racing_requesters() {
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let k = Arc::new(PhaseCounters::new());
        let wins = Arc::new(AtomicUsize::new(0));
        let handles: Vec<_> = (0..2)
            .map(|v| {
                let (c, k, wins) = (c.clone(), k.clone(), wins.clone());
                thread::spawn(move || {
                    if c.request(v) {
                        wins.fetch_add(1, Ordering::Relaxed);
                    } else {
                        // A loser joins: the collection is pending.
                        assert!(c.pending());
                    }
                    run_two_phases(&c, &k, v);
                })
            })
            .collect();
        for h in handles {
            h.join().unwrap();
        }
        assert_eq!(wins.load(Ordering::Relaxed), 1);
        assert_eq!(k.serial1.load(Ordering::Relaxed), 1);
        assert_eq!(k.serial2.load(Ordering::Relaxed), 1);
        assert!(!c.pending());
        assert_eq!(c.collections(), 1);
    });
}

#[test]
fn wait_idle_job_then_shutdown() {
    loom::model(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let c1 = c.clone();
        let t1 = thread::spawn(move || {
            let w = c1.wait_idle(1, || false);
            assert!(matches!(w, Wake::Job(7)), "first wake is {}", wake_name(&w));
            let w = c1.wait_idle(1, || false);
            assert!(
                matches!(w, Wake::Shutdown),
                "second wake is {}",
                wake_name(&w)
            );
        });
        let c0 = c.clone();
        let t0 = thread::spawn(move || {
            c0.submit(1, 7);
            c0.shutdown();
        });
        t0.join().unwrap();
        t1.join().unwrap();
        assert!(!c.pending());
    });
}
