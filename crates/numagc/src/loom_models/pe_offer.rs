//! Models of an offered task of a PE group (`pe/group.rs`: `Offered`;
//! `gumsmp-shared-distributed-heaps.txt` §2.1): the claim race between
//! the forker's join (`claim_local`, `pe/fork.rs`) and the service's
//! export (`claim(EXPORTED)` in `PeContext::take_offer`), and the
//! completion of an exported task (`finish`, from `Message::Result` or
//! `fail_exported_to` in `pe/service.rs`) read by the forker waiting on
//! its vproc's doorbell (`PeContext::wait_remote`).
//!
//! The production `Offered` and `Doorbell` are explored; the steps around
//! them are replayed as the production code does them: `take_offer`
//! claims, then stores `to`; the service inserts the task into its
//! `exported` map, and a finisher removes it under that map's lock and
//! only then finishes it and rings (here the map is a
//! `Mutex<Option<Arc<Offered>>>`, one task); the waiter sleeps on its
//! doorbell until `done()`, then takes the outcome and reads `to`.
//!
//! Mutation check (done while writing these models, each change alone on
//! the production `Offered`, then reverted): `claim` as a load and a store
//! instead of a compare-and-swap fails
//! [`offer_is_claimed_once_by_its_forker_or_the_service`] (both win);
//! `finish` setting `done` before storing the outcome fails
//! [`exported_result_reaches_the_waiting_forker`] and
//! [`a_failure_racing_a_late_result_finishes_once`] (a done task without
//! its outcome). In the replayed steps, ringing before `finish` fails
//! [`exported_result_reaches_the_waiting_forker`] (a deadlock: the ring
//! is lost) and a finisher that finishes without removing the task from
//! the map fails [`a_failure_racing_a_late_result_finishes_once`]
//! (finished twice).

use crate::error::{ErrorKind, Result};
use crate::mutator::{Handle, Scope};
use crate::pe::group::{Offered, EXPORTED, LOCAL};
use crate::pe::Export;
use crate::sched::doorbell::Doorbell;
use crate::sync::lock;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

/// The code of the models' task, never run: the models explore who runs it
/// and how its outcome travels, not the task.
fn never<'s>(_: &mut Scope<'s>, _: &[Handle<'s>]) -> Result<Handle<'s>> {
    unreachable!("the models never run the task")
}

/// A task forked with `par2_export` and offered (`Scope::par2_export`).
fn offered() -> Arc<Offered> {
    let mut exports = crate::pe::Exports::new();
    let export: Export = exports.register("never", never).expect("one function");
    Arc::new(Offered::new(export, 0, 0, 1))
}

/// The PE the task is exported to, and the words of its result.
const TO: usize = 1;
const RESULT: u64 = 42;

/// The service's side of `take_offer` for one offer: claims it for export
/// and records where it goes.
fn take_offer(o: &Offered) -> bool {
    if o.claim(EXPORTED) {
        o.to.store(TO, Ordering::Release);
        true
    } else {
        false
    }
}

/// `wait_remote`'s wait (the doorbell of `sched::wait_until`), then its
/// reading of the outcome and of the PE that sent it.
fn wait_remote(o: &Offered, bell: &Doorbell) -> Result<Vec<u64>> {
    while !o.done() {
        bell.wait_unless(|| o.done());
    }
    let outcome = lock(&o.outcome)
        .take()
        .expect("a done task has its outcome");
    assert_eq!(
        o.to.load(Ordering::Acquire),
        TO,
        "a done task without its PE"
    );
    outcome
}

/// A finisher (`Message::Result` or `fail_exported_to`): removes the task
/// from the `exported` map and, if it was there, finishes it and rings.
fn finish_exported(
    exported: &Mutex<Option<Arc<Offered>>>,
    bell: &Doorbell,
    outcome: Result<Vec<u64>>,
) -> bool {
    let Some(o) = lock(exported).take() else {
        return false;
    };
    o.finish(outcome);
    bell.ring();
    true
}

fn lost() -> crate::error::Error {
    ErrorKind::Pe {
        pe: TO,
        message: "exported task lost: the PE stopped".into(),
    }
    .into()
}

#[test]
fn offer_is_claimed_once_by_its_forker_or_the_service() {
    // Invariant 1: the forker's join and the service's work request race
    // for the task; exactly one claim wins, whatever the interleaving, and
    // no later claim of either kind succeeds.
    loom::model(|| {
        let o = offered();
        let o1 = o.clone();
        let service = thread::spawn(move || take_offer(&o1));
        let local = o.claim_local();
        let exported = service.join().unwrap();
        assert!(
            local != exported,
            "claimed by the forker: {local}, by the service: {exported}"
        );
        let state = o.state.load(Ordering::Acquire);
        assert_eq!(state, if local { LOCAL } else { EXPORTED });
        assert!(!o.claim_local() && !o.claim(EXPORTED), "claimed twice");
    });
}

#[test]
fn exported_result_reaches_the_waiting_forker() {
    // Invariants 1–3 end to end: the service exports the task (claim,
    // `to`, the `exported` map) and its result comes back (removed from
    // the map, `finish`, ring) while the forker's join claims it. The
    // forker runs it locally or, having lost, sleeps on its doorbell and
    // is woken (loom reports a deadlock otherwise) to find the result and
    // the PE it came from; the task is never both run and exported.
    loom::model(|| {
        let o = offered();
        let bell = Arc::new(Doorbell::new());
        let exported = Arc::new(Mutex::new(None));
        let (o1, b1, e1) = (o.clone(), bell.clone(), exported.clone());
        let service = thread::spawn(move || {
            if !take_offer(&o1) {
                return false;
            }
            *lock(&e1) = Some(o1);
            assert!(finish_exported(&e1, &b1, Ok(vec![RESULT])));
            true
        });
        let ran_here = o.claim_local();
        if !ran_here {
            let words = wait_remote(&o, &bell).expect("the remote result");
            assert_eq!(words, vec![RESULT]);
        }
        let went_away = service.join().unwrap();
        assert!(ran_here != went_away, "run here and exported, or neither");
        assert_eq!(o.done(), went_away, "done without an export");
    });
}

#[test]
fn a_failure_racing_a_late_result_finishes_once() {
    // Invariants 2–3 with two finishers: the task's result arrives
    // (`Message::Result`) while its PE is failed (`fail_exported_to`).
    // Both go through the `exported` map, so exactly one finishes; the
    // forker, woken by that one's ring, takes that one's outcome, and no
    // second `finish` replaces it or stores another after it was taken.
    // (The service runs both on one thread; two threads are a superset.)
    loom::model(|| {
        let o = offered();
        assert!(take_offer(&o));
        let bell = Arc::new(Doorbell::new());
        let exported = Arc::new(Mutex::new(Some(o.clone())));
        let winner = Arc::new(AtomicUsize::new(0));
        let finisher = |id: usize, outcome: fn() -> Result<Vec<u64>>| {
            let (b, e, w) = (bell.clone(), exported.clone(), winner.clone());
            thread::spawn(move || {
                if finish_exported(&e, &b, outcome()) {
                    w.fetch_add(id, Ordering::Relaxed);
                }
            })
        };
        let result = finisher(1, || Ok(vec![RESULT]));
        let failure = finisher(2, || Err(lost()));
        let outcome = wait_remote(&o, &bell);
        result.join().unwrap();
        failure.join().unwrap();
        match (winner.load(Ordering::Relaxed), outcome) {
            (1, Ok(words)) => assert_eq!(words, vec![RESULT]),
            (2, Err(e)) => assert!(matches!(e.kind(), ErrorKind::Pe { pe: TO, .. })),
            (w, r) => panic!("finished by {w} (1: result, 2: failure, 3: both), read {r:?}"),
        }
        assert!(
            lock(&o.outcome).is_none(),
            "an outcome stored after the take"
        );
        assert!(lock(&exported).is_none());
    });
}
