//! Models of channels (§2.1, `sched/channel.rs`): rendezvous and choice, a
//! thread blocked on a channel resumed on its home vproc (`sched/thread.rs`),
//! and a vproc blocked in a job's send/recv joining a collection.

use super::{bounded, run_two_phases, wake_name, PhaseCounters};
use crate::gc::handshake::{Coordinator, Wake};
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

// ---------------------------------------------------------------------------
// §2.1 channels: rendezvous and choice; waiting vprocs and collections
// ---------------------------------------------------------------------------

/// The rendezvous core with values `u32` and, as "resume", the doorbell
/// index of the waiting party (the runtime's `Resume` minus the heap).
type ModelChan = crate::sched::channel::Chan<u32, usize>;
type ModelOffer = crate::sched::channel::Offer<u32, usize>;

/// One synchronisation as `sched::thread::select_blocking` does it: match
/// or queue, ring the woken party, else wait on our doorbell until done.
/// Returns the completed case and the value received.
fn model_select(
    c: &Coordinator<u32>,
    me: usize,
    cases: &[(&ModelChan, crate::sched::channel::Dir)],
    values: Vec<Option<u32>>,
) -> (usize, Option<u32>) {
    use crate::sched::channel::{sync, Offer};
    let offer: std::sync::Arc<ModelOffer> = Offer::new(values);
    *crate::sync::lock(&offer.resume) = Some(me);
    let case = match sync(cases, &offer, true) {
        Some(m) => {
            let other = crate::sync::lock(&m.other.resume)
                .take()
                .expect("a queued offer has its resume");
            c.bell(other).ring();
            m.case
        }
        None => {
            while !offer.done() {
                c.bell(me).wait_unless(|| offer.done());
            }
            offer.completed_case().expect("done means claimed")
        }
    };
    assert!(offer.take_unsent().len() <= cases.len());
    (case, offer.take_received())
}

#[test]
fn channel_choice_is_claimed_once() {
    use crate::sched::channel::Dir::{Recv, Send};
    // vproc 0 chooses between receiving on `a` and on `b`, then receives
    // on the other; vprocs 1 and 2 send on `a` and `b` at the same time,
    // racing to claim the choice. Each value arrives once, on its channel,
    // and nobody hangs (loom reports a deadlock otherwise).
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(3));
        let (a, b) = (
            std::sync::Arc::new(ModelChan::new()),
            std::sync::Arc::new(ModelChan::new()),
        );
        let senders: Vec<_> = [(1usize, a.clone(), 10u32), (2, b.clone(), 20)]
            .into_iter()
            .map(|(v, ch, x)| {
                let c = c.clone();
                thread::spawn(move || model_select(&c, v, &[(&*ch, Send)], vec![Some(x)]))
            })
            .collect();
        let (first, x) = model_select(&c, 0, &[(&*a, Recv), (&*b, Recv)], vec![None, None]);
        let other = if first == 0 { &*b } else { &*a };
        let (_, y) = model_select(&c, 0, &[(other, Recv)], vec![None]);
        let got = if first == 0 { (x, y) } else { (y, x) };
        assert_eq!(
            got,
            (Some(10), Some(20)),
            "values crossed channels or were lost"
        );
        for s in senders {
            assert_eq!(s.join().unwrap(), (0, None));
        }
    });
}

#[test]
fn channel_choices_on_both_sides_complete_one_case() {
    use crate::sched::channel::Dir::{Recv, Send};
    // Two choices facing each other: vproc 0 offers "send 1 on a" or
    // "receive on b", vproc 1 "receive on a" or "send 2 on b". Exactly one
    // rendezvous happens, and both sides agree which.
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let (a, b) = (
            std::sync::Arc::new(ModelChan::new()),
            std::sync::Arc::new(ModelChan::new()),
        );
        let (c1, a1, b1) = (c.clone(), a.clone(), b.clone());
        let t1 = thread::spawn(move || {
            model_select(&c1, 1, &[(&*a1, Recv), (&*b1, Send)], vec![None, Some(2)])
        });
        let r0 = model_select(&c, 0, &[(&*a, Send), (&*b, Recv)], vec![Some(1), None]);
        let r1 = t1.join().unwrap();
        match r0 {
            (0, None) => assert_eq!(
                r1,
                (0, Some(1)),
                "vproc 0 sent on a, vproc 1 did not receive it"
            ),
            (1, Some(2)) => assert_eq!(
                r1,
                (1, None),
                "vproc 0 received on b, vproc 1 did not send it"
            ),
            other => panic!("vproc 0 completed {other:?}"),
        }
    });
}

/// How the party of an offer is resumed in [`blocked_thread_is_resumed_on_its_home_vproc`]:
/// `sched::thread::Resume` minus the heap (a thread's continuation goes to
/// its home vproc's ready queue; a vproc waiting in a job is rung).
#[derive(Clone, Copy, Debug)]
enum ModelResume {
    Thread { home: usize },
    Vproc(usize),
}

type ThreadChan = crate::sched::channel::Chan<u32, ModelResume>;
type ThreadOffer = crate::sched::channel::Offer<u32, ModelResume>;
type ReadyQueues = Vec<crate::sched::deque::Injector<std::sync::Arc<ThreadOffer>>>;

/// `sched::thread::wake` and `push_ready`: wakes the party of `other`, an
/// offer a rendezvous just completed. The runnable is the offer itself
/// (its continuation reads the value it received).
fn model_wake(c: &Coordinator<u32>, ready: &ReadyQueues, other: &std::sync::Arc<ThreadOffer>) {
    match crate::sync::lock(&other.resume).take() {
        Some(ModelResume::Thread { home }) => {
            ready[home].push(other.clone());
            c.notify_work();
        }
        Some(ModelResume::Vproc(v)) => c.bell(v).ring(),
        None => panic!("a queued offer has no resume"),
    }
}

/// Parking and waking of a thread blocked on a channel, both ways round:
/// vproc 1 runs a thread that receives on `ch` (or sends 7 on it) as
/// `sched::thread::synchronise` does: a first look without queueing; then,
/// with its resume recorded (home: vproc 1), a second look that queues it;
/// if that queued it, the vproc has nothing left to run and goes idle in
/// `wait_idle`, asking the ready queues for work (`sched::idle_loop`).
/// Vproc 0 sends 7 on `ch` (or receives) in direct style
/// (`select_blocking`: queue, wait on its doorbell until `done`). Whoever
/// matches wakes the other: the thread's continuation goes to vproc 1's
/// ready queue with `notify_work`, vproc 0 is rung. In every interleaving
/// the rendezvous completes once, the continuation runs once, on vproc 1,
/// the receiver gets 7 whoever waited, and neither vproc sleeps for ever
/// (the idle vproc's "any work?" check and its sleep cannot miss the push,
/// nor the waiting vproc's `done` check its ring). Production code:
/// `channel::sync`, `Offer`, `Coordinator::wait_idle` / `notify_work` /
/// doorbells, the ready queue's stand-in; replayed: the two looks of
/// `synchronise`, and `wake`.
#[test]
fn blocked_thread_is_resumed_on_its_home_vproc() {
    for thread_sends in [false, true] {
        bounded(3).check(move || thread_and_job_rendezvous(thread_sends));
    }
}

fn thread_and_job_rendezvous(thread_sends: bool) {
    use crate::sched::channel::Dir::{Recv, Send};
    use crate::sched::channel::{sync, Offer};
    use crate::sched::deque::{Injector, Steal};
    let (thread_dir, job_dir) = if thread_sends {
        (Send, Recv)
    } else {
        (Recv, Send)
    };
    let c = Arc::new(Coordinator::<u32>::new(2));
    let ch = Arc::new(ThreadChan::new());
    let ready: Arc<ReadyQueues> = Arc::new((0..2).map(|_| Injector::new()).collect());
    let resumed = Arc::new(AtomicUsize::new(0));

    let (c1, ch1, r1, n1) = (c.clone(), ch.clone(), ready.clone(), resumed.clone());
    let vproc1 = thread::spawn(move || {
        let offer: std::sync::Arc<ThreadOffer> = Offer::new(vec![thread_sends.then_some(7)]);
        let cases = [(&*ch1, thread_dir)];
        let now = match sync(&cases, &offer, false) {
            Some(m) => {
                model_wake(&c1, &r1, &m.other);
                true
            }
            None => {
                *crate::sync::lock(&offer.resume) = Some(ModelResume::Thread { home: 1 });
                match sync(&cases, &offer, true) {
                    Some(m) => {
                        // A counterpart arrived between the two looks.
                        crate::sync::lock(&offer.resume)
                            .take()
                            .expect("not queued: the resume is ours");
                        model_wake(&c1, &r1, &m.other);
                        true
                    }
                    None => false,
                }
            }
        };
        if now {
            return offer.take_received();
        }
        // Blocked: the idle loop runs the thread once it is ready.
        loop {
            match c1.wait_idle(1, || !r1[1].is_empty()) {
                Wake::Steal => {
                    if let Steal::Success(o) = r1[1].steal() {
                        assert!(
                            std::sync::Arc::ptr_eq(&o, &offer),
                            "another thread was resumed"
                        );
                        assert!(o.done(), "resumed before the rendezvous was done");
                        n1.fetch_add(1, Ordering::Relaxed);
                        return o.take_received();
                    }
                }
                w => panic!("the idle vproc woke for {}", wake_name(&w)),
            }
        }
    });

    // Vproc 0: a job's `send` or `recv` (select_blocking).
    let offer: std::sync::Arc<ThreadOffer> = Offer::new(vec![(!thread_sends).then_some(7)]);
    *crate::sync::lock(&offer.resume) = Some(ModelResume::Vproc(0));
    match sync(&[(&*ch, job_dir)], &offer, true) {
        Some(m) => model_wake(&c, &ready, &m.other),
        None => {
            while !offer.done() {
                c.bell(0).wait_unless(|| offer.done());
            }
        }
    }
    assert_eq!(offer.completed_case(), Some(0));
    let job_got = offer.take_received();
    let thread_got = vproc1.join().unwrap();
    if thread_sends {
        assert_eq!(
            (job_got, thread_got),
            (Some(7), None),
            "the job received another value"
        );
    } else {
        assert_eq!(
            (job_got, thread_got),
            (None, Some(7)),
            "the thread received another value"
        );
    }
    assert!(
        resumed.load(Ordering::Relaxed) <= 1,
        "the continuation ran twice"
    );
    assert!(
        ready[0].is_empty() && ready[1].is_empty(),
        "a continuation was left behind"
    );
    assert_eq!(ch.waiting(), 0, "an offer was left queued");
}

#[test]
fn blocked_vproc_joins_a_collection_then_completes() {
    // vproc 1 waits for a rendezvous as `sched::wait_until` does: on its
    // doorbell, also woken for a pending collection, which it joins. vproc
    // 0 leads a collection and then completes the rendezvous. vproc 1 must
    // take part in the collection (the leader's phases need both) and then
    // see the value.
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let k = Arc::new(PhaseCounters::new());
        let done = Arc::new(AtomicUsize::new(0));
        let (c1, k1, d1) = (c.clone(), k.clone(), done.clone());
        let waiter = thread::spawn(move || {
            let mut collected = false;
            loop {
                if d1.load(Ordering::Acquire) == 1 {
                    return collected;
                }
                if c1.pending() {
                    run_two_phases(&c1, &k1, 1);
                    collected = true;
                    continue;
                }
                c1.wait_for_work_or(
                    1,
                    || d1.load(Ordering::Acquire) == 1 || c1.pending(),
                    || false,
                );
            }
        });
        assert!(c.request(0));
        run_two_phases(&c, &k, 0);
        done.store(1, Ordering::Release);
        c.bell(1).ring();
        assert!(
            waiter.join().unwrap(),
            "the blocked vproc finished without taking part in the collection"
        );
        assert_eq!(c.collections(), 1);
    });
}
