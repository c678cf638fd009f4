//! Models of parking and waking: a doorbell (`sched/doorbell.rs`), an idle
//! vproc in `wait_idle` and a vproc waiting in a join (`wait_for_work_or`)
//! against `notify_work` (`gc/handshake.rs`).

use super::{bounded, wake_name};
use crate::gc::handshake::{Coordinator, Wake};
use crate::sched::deque::{Steal, Worker};
use loom::sync::atomic::Ordering;
use loom::sync::Arc;
use loom::thread;

// ---------------------------------------------------------------------------
// Doorbells, idle and waiting vprocs
// ---------------------------------------------------------------------------

#[test]
fn doorbell_ring_is_never_lost() {
    use crate::sched::doorbell::Doorbell;
    use loom::sync::atomic::AtomicBool;
    loom::model(|| {
        let bell = Arc::new(Doorbell::new());
        let flag = Arc::new(AtomicBool::new(false));
        let (b1, f1) = (bell.clone(), flag.clone());
        let t = thread::spawn(move || {
            f1.store(true, Ordering::Release);
            b1.ring();
        });
        while !flag.load(Ordering::Acquire) {
            bell.wait_unless(|| flag.load(Ordering::Acquire));
        }
        t.join().unwrap();
    });
}

/// Vproc 1, idle: sleeps in `wait_idle` until `worker`'s deque has a
/// task, steals it and returns it.
fn idle_thief(c: &Arc<Coordinator<u32>>, worker: &Worker<u32>) -> thread::JoinHandle<u32> {
    let (c, stealer) = (c.clone(), worker.stealer());
    thread::spawn(move || loop {
        match c.wait_idle(1, || !stealer.is_empty()) {
            Wake::Steal => {
                if let Steal::Success(x) = stealer.steal() {
                    return x;
                }
            }
            w => panic!("idle vproc woke for {}", wake_name(&w)),
        }
    })
}

#[test]
fn idle_vproc_wakes_for_pushed_work() {
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let worker = Worker::<u32>::new_lifo();
        let idle = idle_thief(&c, &worker);
        worker.push(5);
        c.notify_work();
        assert_eq!(idle.join().unwrap(), 5);
    });
}

#[test]
fn waiting_vproc_wakes_for_pushed_work() {
    // A vproc waiting in a join (`Coordinator::wait_for_work_or`) must hear
    // of a task pushed meanwhile (`notify_work`), or it would sit idle
    // beside work it could steal.
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let worker = Worker::<u32>::new_lifo();
        let stealer = Arc::new(worker.stealer());
        let (c1, s1) = (c.clone(), stealer.clone());
        let waiter = thread::spawn(move || loop {
            c1.wait_for_work_or(1, || false, || !s1.is_empty());
            if let Steal::Success(x) = s1.steal() {
                return x;
            }
        });
        worker.push(5);
        c.notify_work();
        assert_eq!(waiter.join().unwrap(), 5);
    });
}

/// `sched::push_waking` wakes sleepers only for a push onto an empty
/// deque. The owner here pushes a task, pops it back (unless the idle
/// vproc stole it first), pushes a second onto the deque, now empty again,
/// and a third onto the deque the second fills (no wake-up): the idle
/// vproc, asleep or not at any of these points, still gets a task, and a
/// popped-back task is never also stolen.
#[test]
fn idle_vproc_wakes_when_a_deque_fills() {
    use crate::sched::push_waking;
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let worker = Worker::<u32>::new_lifo();
        let idle = idle_thief(&c, &worker);
        push_waking(&worker, &c, 5);
        let popped = worker.pop();
        push_waking(&worker, &c, 6);
        push_waking(&worker, &c, 7);
        let stolen = idle.join().unwrap();
        assert_ne!(popped, Some(stolen), "a task was run twice");
        assert!(
            popped.is_some() || stolen == 5,
            "the idle vproc took {stolen} before 5"
        );
    });
}
