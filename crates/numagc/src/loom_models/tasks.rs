//! Models of work stealing with lazy promotion (§2.2–2.3, `sched/task.rs`):
//! the hand-off of a stolen task, promotion requests from thieves to the
//! owner, and a stolen task whose environment cannot be promoted.

use super::bounded;
use crate::gc::handshake::Coordinator;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

use crate::sched::deque::{Steal, Worker};
use crate::sched::task::{Handoff, Mailbox, TaskEnv, DONE, READY};
use crate::{Error, ErrorKind};

// ---------------------------------------------------------------------------
// §2.2–2.3 work stealing with lazy promotion
// ---------------------------------------------------------------------------

#[test]
fn stolen_task_handoff() {
    use crate::sched::deque::{Steal, Worker};
    use crate::sched::task::{serve_requests, Handoff, Mailbox, TaskEnv, DONE, READY};
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let worker = Worker::<Arc<Handoff>>::new_lifo();
        let stealer = worker.stealer();
        let task = Arc::new(Handoff::new(0, TaskEnv::Lazy));
        worker.push(task.clone());

        // The owner's duty at a safepoint: `sched::serve_mail`, whose
        // protocol is `task::serve_requests` (here with a fixed environment
        // instead of promoting one).
        let serve = |c: &Coordinator<u32>, mailbox: &Mailbox<Arc<Handoff>>| {
            serve_requests(c, mailbox, 0, |t: &Arc<Handoff>| &**t, |_| Ok(vec![42]));
        };

        let (c1, m1, r1) = (c.clone(), mailbox.clone(), runs.clone());
        let thief = thread::spawn(move || {
            let Steal::Success(t) = stealer.steal() else {
                return false;
            };
            if t.want(1) {
                m1.post(t.clone());
                c1.signal(0);
            }
            while t.state() < READY {
                c1.bell(1).wait_unless(|| t.state() >= READY);
            }
            // SAFETY: the deque handed the task to this thief, which saw `READY`.
            let env = unsafe { t.take_env() }.expect("an environment");
            assert_eq!(env, vec![42], "the thief saw another environment");
            r1.fetch_add(1, Ordering::Relaxed);
            t.finish(Ok(7));
            c1.bell(0).ring();
            true
        });

        // The owner runs its own branch (a safepoint in it), then joins.
        serve(&c, &mailbox);
        let stolen = match worker.pop() {
            Some(t) => {
                assert!(Arc::ptr_eq(&t, &task));
                runs.fetch_add(1, Ordering::Relaxed);
                false
            }
            None => {
                while task.state() != DONE {
                    serve(&c, &mailbox);
                    c.bell(0)
                        .wait_unless(|| task.state() == DONE || c.signalled(0));
                }
                assert!(
                    // SAFETY: the owner saw `DONE`.
                    matches!(unsafe { task.take_result() }, Some(Ok(7))),
                    "the owner missed the result"
                );
                true
            }
        };
        assert_eq!(thief.join().unwrap(), stolen);
        assert_eq!(
            runs.load(Ordering::Relaxed),
            1,
            "the task ran {} times",
            runs.load(Ordering::Relaxed)
        );
    });
}

/// A promotion request is never missed by a running owner: `signal` (the
/// thief: flag, fence, zero the owner's limit) against `set_limit` (the
/// owner re-installing its limit after a local collection: store, fence,
/// load the flag) is the same Dekker pattern as `request` against
/// `set_limit`, so the owner either sees the request at once or keeps a
/// zero limit and enters its slow path, where `serve_mail` finds it. The
/// flag is then taken exactly once.
#[test]
fn signal_is_never_missed_by_set_limit() {
    loom::model(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        assert!(!c.set_limit(0, 10));
        let ca = c.clone();
        let owner = thread::spawn(move || ca.set_limit(0, 42));
        let cb = c.clone();
        let thief = thread::spawn(move || cb.signal(0));
        let saw = owner.join().unwrap();
        thief.join().unwrap();
        let l0 = c.limit_cell(0).load(Ordering::SeqCst);
        assert!(l0 == 0 || l0 == 42);
        assert!(
            saw || l0 == 0,
            "the owner missed the promotion request and kept limit {l0}"
        );
        assert!(c.signalled(0));
        assert!(c.take_signal(0), "the request is taken once");
        assert!(!c.take_signal(0), "the request is taken twice");
        assert!(!c.pending(), "a promotion request is not a collection");
    });
}

/// Two thieves steal the owner's two tasks and ask for both environments
/// at once: both post in the owner's mailbox and signal it, racing with
/// the owner, which waits to join and serves requests meanwhile
/// (`task::serve_requests`, the production protocol of `sched::serve_mail`,
/// with the environment parked in the production `GlobalRoots`). Each
/// thief gets its own task's environment, through the global roots, once;
/// the owner gets both results; no request is lost between the owner's
/// clearing of its signal and its emptying of the mailbox (a lost one is a
/// thief waiting for ever, which loom reports as a deadlock).
#[test]
fn promotion_requests_of_two_thieves_are_served() {
    use crate::mutator::roots::GlobalRoots;
    use crate::sched::deque::{Steal, Worker};
    use crate::sched::task::{serve_requests, Handoff, Mailbox, TaskEnv, DONE, READY};
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(3));
        let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
        let roots = Arc::new(GlobalRoots::new());
        let worker = Worker::<Arc<Handoff>>::new_lifo();
        let tasks: Vec<Arc<Handoff>> = (0..2)
            .map(|_| Arc::new(Handoff::new(0, TaskEnv::Lazy)))
            .collect();
        for t in &tasks {
            worker.push(t.clone());
        }
        let thieves: Vec<_> = (1..=2)
            .map(|me| {
                let (c, m, r, stealer) =
                    (c.clone(), mailbox.clone(), roots.clone(), worker.stealer());
                thread::spawn(move || {
                    let Steal::Success(t) = stealer.steal() else {
                        panic!("thief {me} found no task")
                    };
                    assert!(t.want(me), "a lazily promoted task starts QUEUED");
                    m.post(t.clone());
                    c.signal(0);
                    while t.state() < READY {
                        c.bell(me).wait_unless(|| t.state() >= READY);
                    }
                    // SAFETY: the deque handed the task to this thief, which
                    // saw `READY`.
                    let env: Vec<u64> = unsafe { t.take_env() }
                        .expect("an environment")
                        .into_iter()
                        .map(|slot| r.take(slot))
                        .collect();
                    assert_eq!(env.len(), 1);
                    t.finish(Ok(env[0] as usize));
                    c.bell(0).ring();
                })
            })
            .collect();
        // The owner: both tasks were stolen; it joins them in turn.
        let word_of = |t: &Arc<Handoff>| {
            100 + tasks
                .iter()
                .position(|x| Arc::ptr_eq(x, t))
                .expect("one of ours") as u64
        };
        let mut served = 0;
        for t in &tasks {
            while t.state() != DONE {
                serve_requests(
                    &c,
                    &mailbox,
                    0,
                    |t: &Arc<Handoff>| &**t,
                    |t| {
                        served += 1;
                        Ok(vec![roots.add(word_of(t))])
                    },
                );
                c.bell(0)
                    .wait_unless(|| t.state() == DONE || c.signalled(0));
            }
        }
        for h in thieves {
            h.join().unwrap();
        }
        assert_eq!(served, 2, "each environment is promoted once");
        for (k, t) in tasks.iter().enumerate() {
            assert!(
                // SAFETY: the owner saw `DONE`.
                matches!(unsafe { t.take_result() }, Some(Ok(r)) if r == 100 + k),
                "task {k}: the thief ran another environment"
            );
        }
    });
}

// ---------------------------------------------------------------------------
// Faults (issue 5): a stolen task whose environment cannot be promoted (§2.3)
// ---------------------------------------------------------------------------

// A thief steals a task whose owner cannot promote the environment (the
// system refuses the memory, `sched::serve_mail`): the owner records the
// error and marks the task `READY`; the thief must see the error (not an
// environment), must not run the task, and finishes it with the error,
// which the owner's join reads. Nobody waits for ever, and the task runs
// at most once (exactly once when the owner pops it back itself).
// Mutation check: an `env_ready` that does not mark the task `READY`
// makes loom report the deadlock.

fn refused() -> Error {
    Error::from(ErrorKind::MapFailed {
        bytes: 4096,
        what: "the copy reserve of a major collection or promotion",
        errno: 12,
    })
}

#[test]
fn stolen_task_whose_environment_cannot_be_promoted() {
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let worker = Worker::<Arc<Handoff>>::new_lifo();
        let stealer = worker.stealer();
        let task = Arc::new(Handoff::new(0, TaskEnv::Lazy));
        worker.push(task.clone());

        // The owner's duty at a safepoint, with the promotion refused.
        let serve = |c: &Coordinator<u32>, mailbox: &Mailbox<Arc<Handoff>>| {
            if c.take_signal(0) {
                for t in mailbox.take() {
                    t.env_ready(Err(refused()));
                    c.bell(t.thief()).ring();
                }
            }
        };

        let (c1, m1, r1) = (c.clone(), mailbox.clone(), runs.clone());
        let thief = thread::spawn(move || {
            let Steal::Success(t) = stealer.steal() else {
                return false;
            };
            if t.want(1) {
                m1.post(t.clone());
                c1.signal(0);
            }
            while t.state() < READY {
                c1.bell(1).wait_unless(|| t.state() >= READY);
            }
            // SAFETY: the deque handed the task to this thief, which saw `READY`.
            match unsafe { t.take_env() } {
                Err(e) => t.finish(Err(e)),
                Ok(_) => {
                    r1.fetch_add(1, Ordering::Relaxed);
                    t.finish(Ok(7));
                }
            }
            c1.bell(0).ring();
            true
        });

        serve(&c, &mailbox);
        let stolen = match worker.pop() {
            Some(t) => {
                assert!(Arc::ptr_eq(&t, &task));
                runs.fetch_add(1, Ordering::Relaxed);
                false
            }
            None => {
                while task.state() != DONE {
                    serve(&c, &mailbox);
                    c.bell(0)
                        .wait_unless(|| task.state() == DONE || c.signalled(0));
                }
                // SAFETY: the owner saw `DONE`.
                let r = unsafe { task.take_result() };
                assert!(
                    matches!(&r, Some(Err(e)) if matches!(e.kind(), ErrorKind::MapFailed { .. })),
                    "the owner's join got {r:?}"
                );
                true
            }
        };
        assert_eq!(thief.join().unwrap(), stolen);
        // Stolen: the owner was always asked (lazy promotion), refused,
        // and the task never ran; popped back: it ran once, here.
        assert_eq!(runs.load(Ordering::Relaxed), usize::from(!stolen));
    });
}
