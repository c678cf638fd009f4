//! `loom` model tests of the runtime's concurrent protocols.
//!
//! Built only with `RUSTFLAGS="--cfg loom"` (see `scripts/loom.sh`). Under that
//! cfg, `crate::sync` re-exports `loom`'s `Mutex`, `Condvar` and atomics, so
//! the *production* code of the protocols is explored here over every
//! interleaving (up to the preemption bound) and every weak-memory outcome
//! that loom models. Each model is small (2 threads, a handful of operations)
//! so that it finishes in seconds.
//!
//! ## Protocols and their models
//!
//! Every synchronising protocol of `src/` (found with a search for
//! `crate::sync`, `Mutex`, `Condvar`, atomics and crossbeam), the file
//! that implements it and the models that explore that code:
//!
//! | protocol | production code | model(s) |
//! |---|---|---|
//! | leader election and limit zeroing (§3.4) | `gc/handshake.rs`: `request`, `set_limit` | [`handshake_leader_unique_and_limits_zeroed`], [`set_limit_never_misses_a_request`] (control: [`set_limit_fenced_replica_reordered_is_caught`]) |
//! | barriers of the global collection (§3.4) | `gc/handshake.rs`: `phase`, `finish` | [`phases_run_serial_once_with_idle_vproc`], [`phases_with_racing_requesters`], [`blocked_vproc_joins_a_collection_then_completes`] |
//! | termination of the parallel scan (§3.4) | `gc/work_queue.rs`: `ScanQueue` | [`scan_queue_each_item_once_and_terminates`], [`scan_queue_push_wakes_idle_worker`] |
//! | chunk pool, per node (§3.1) | `heap/chunk_pool.rs`: `ChunkPool` | [`chunk_pool_affinity`] |
//! | the heap limit: check and charge of global bytes (issue 2, item 10) | `heap/budget.rs`: `HeapBudget` | [`heap_limit_is_never_overshot`] |
//! | parking and waking of idle vprocs (jobs, collections, work, shutdown) | `gc/handshake.rs`: `wait_idle`, `submit`, `shutdown`, `notify_work` | [`wait_idle_job_then_shutdown`], [`phases_run_serial_once_with_idle_vproc`], [`idle_vproc_wakes_for_pushed_work`], [`blocked_thread_is_resumed_on_its_home_vproc`] |
//! | parking and waking of vprocs waiting inside a computation (joins, environments) | `sched/doorbell.rs`; `gc/handshake.rs`: `wait_for_work_or` | [`doorbell_ring_is_never_lost`], [`waiting_vproc_wakes_for_pushed_work`], [`blocked_vproc_joins_a_collection_then_completes`] |
//! | work-stealing hand-off: who runs a task, its environment and result (§2.2–2.3) | `sched/task.rs`: `Handoff`; `sched/deque.rs` (loom stand-in) | [`stolen_task_handoff`] |
//! | promotion requests: thief to owner (§2.3, lazy promotion) | `sched/task.rs`: `Mailbox`, `serve_requests`; `gc/handshake.rs`: `signal`, `take_signal`; `mutator/roots.rs`: `GlobalRoots` | [`signal_is_never_missed_by_set_limit`], [`promotion_requests_of_two_thieves_are_served`], [`stolen_task_handoff`] |
//! | channel rendezvous and choice (§2.1) | `sched/channel.rs`: `sync`, `Offer` | [`channel_choice_is_claimed_once`], [`channel_choices_on_both_sides_complete_one_case`] |
//! | parking and waking of threads blocked on channels (§2.1) | `sched/thread.rs`: `synchronise`, `wake`, `push_ready` (replayed); ready queues; `notify_work` | [`blocked_thread_is_resumed_on_its_home_vproc`] |
//! | a vproc blocked in a job's send/recv during a collection | `sched/mod.rs`: `wait_until` (replayed); `Coordinator` | [`blocked_vproc_joins_a_collection_then_completes`] |
//! | blocking sections: a proxy takes part for a blocked vproc (issue 16) | `gc/blocking.rs`: `enter_blocking`, `leave_blocking`, `proxy_wait`, `proxy_done`; `request`, `signal` | [`blocking::a_blocked_vproc_takes_part_through_its_proxy`], [`blocking::leaving_races_with_a_collection`], [`blocking::a_request_to_a_blocked_vproc_is_served_by_its_proxy`] |
//!
//! Not modelled, and why:
//! * the Chase–Lev deque and injector of `crossbeam-deque` (`sched/deque.rs`):
//!   crossbeam tests them; under loom a mutex-protected `VecDeque` with the
//!   same interface stands in, so the models explore numagc's protocols
//!   around it;
//! * claiming objects by compare-and-swap on their headers during the
//!   parallel copy (`gc/global.rs`, `object/mod.rs`): `std` atomics on raw
//!   heap memory, which loom cannot stand in for; the collector's stress and
//!   property tests run it with the heap verifier;
//! * the descriptor table's publication (`object/descriptor.rs`, `std`
//!   `AtomicPtr` release/acquire): an id reaches another vproc only through
//!   a synchronised hand-off (a job, a channel, a task), after its release;
//! * single-lock data, not protocols: address-space carving
//!   (`heap/space.rs`), the large-object list and binding log
//!   (`heap/global.rs`), statistics, pins, the channel registry and thread
//!   errors (`vproc.rs`), a task's closure (`sched/mod.rs`); the global
//!   heap's per-node byte counters and trigger (`heap/global.rs`, `std`
//!   atomics: statistics and a heuristic, no protocol);
//! * job results (`runtime.rs`): `std::sync::mpsc`;
//! * `Coordinator::interrupted`, a relaxed hint that brings a busy idle
//!   loop to `wait_idle` sooner (`wait_idle` itself is modelled).
//!
//! What each model proves, against `../shared/papers/manticore-numa-gc.md`:
//!
//! * **§3.4, leader election and limit zeroing** (`gc::handshake`):
//!   - [`handshake_leader_unique_and_limits_zeroed`]: when two vprocs race to
//!     trigger a global collection, exactly one `request` wins the CAS and is
//!     recorded as the leader ("mark this vproc the leader"), and every
//!     allocation-limit cell ends at zero ("setting their allocation limit
//!     pointer to zero") unless its vproc re-installed a limit afterwards, in
//!     which case that `set_limit` reported the pending collection.
//!   - [`set_limit_never_misses_a_request`]: the SeqCst store-limit /
//!     load-pending protocol of `set_limit` against the leader's
//!     CAS-pending / zero-limits: a vproc can never both miss the pending flag
//!     and keep a non-zero limit (it would run past the collection).
//!     [`set_limit_fenced_replica_reordered_is_caught`] is its control: the
//!     same check on a replica with the accesses swapped must fail.
//!   - [`phases_run_serial_once_with_idle_vproc`]: "wait for all of the other
//!     vprocs to enter the global collection": an idle vproc blocked in
//!     `wait_idle` is woken with `Wake::Collect`, each `phase` barrier runs the
//!     leader's serial part exactly once, only after both vprocs arrived, and
//!     its effects are visible to both after the barrier (checked with
//!     `Relaxed` counters, so the happens-before must come from the barrier);
//!     `finish` leaves no collection pending and counts exactly one.
//!     [`phases_with_racing_requesters`] is the same with the leader chosen by
//!     the CAS race instead of fixed.
//!   - [`wait_idle_job_then_shutdown`]: an idle vproc receives a job queued
//!     for it before the shutdown, in that order, and never sleeps through
//!     either notification.
//! * **§3.4, parallel scanning termination** (`gc::work_queue`):
//!   [`scan_queue_each_item_once_and_terminates`]: items pushed to per-node
//!   lists before and during the scan (the unscanned part of a to-space chunk)
//!   are each taken exactly once, every worker stops (loom reports a deadlock
//!   otherwise), and the idle-counting termination returns `None` only when
//!   no item is outstanding (no early exit).
//!   [`scan_queue_push_wakes_idle_worker`]: a push wakes an idle worker.
//! * **§3.1, chunk reuse keeps node affinity; node-local synchronisation**
//!   (`heap::chunk_pool`): [`chunk_pool_affinity`]: with vprocs of two nodes
//!   putting and taking concurrently, no chunk is handed out twice, none is
//!   lost, and a chunk taken from node *k*'s pool was put on node *k*.
//! * **§2.2–2.3, work stealing with lazy promotion** (`sched`):
//!   - [`doorbell_ring_is_never_lost`]: a waiter that tests its condition
//!     and sleeps on its doorbell is always woken by a ringer that publishes
//!     the condition and then rings, whatever the interleaving.
//!   - [`idle_vproc_wakes_for_pushed_work`]: an idle vproc going to sleep in
//!     `wait_idle` and a vproc pushing a task and calling `notify_work`: the
//!     idle one always ends up stealing the task (no lost wake-up between its
//!     "any work?" check and its sleep).
//!   - [`stolen_task_handoff`]: the owner pops its task back or, if a thief
//!     stole it, serves the thief's request for the environment (mailbox,
//!     `signal`, doorbell) while it waits for the result. The task runs
//!     exactly once, the thief sees the environment the owner published, the
//!     owner sees the thief's result, and neither side can hang. The deque
//!     is the loom stand-in of `sched::deque`; the owner's serving step
//!     replays `sched::serve_mail` without a heap.
//!   - [`waiting_vproc_wakes_for_pushed_work`]: a vproc waiting in a join
//!     (`Coordinator::wait_for_work_or`) hears of a task pushed meanwhile.
//!   - [`signal_is_never_missed_by_set_limit`]: a thief's promotion request
//!     (`signal`) against the owner re-installing its allocation limit
//!     (`set_limit`): the owner sees the request at once or keeps a zero
//!     limit, so its next allocation reaches the safepoint that serves it;
//!     the request is taken exactly once.
//!   - [`promotion_requests_of_two_thieves_are_served`]: two thieves ask
//!     one owner for two environments at once, racing with the owner's
//!     serving (`task::serve_requests`, the protocol of
//!     `sched::serve_mail`, with the production `GlobalRoots`): each
//!     environment is promoted once and reaches its own thief, the owner
//!     joins both results, and no request is lost between the owner's
//!     clearing of its signal and its emptying of the mailbox.
//! * **§2.1, channels** (`sched::channel`, the production rendezvous code
//!   with `u32` values; waiting as `sched::thread::select_blocking` does):
//!   - [`channel_choice_is_claimed_once`]: two senders race to claim one
//!     choice over two channels; each value arrives once, on its channel,
//!     the loser waits for the second receive, and nobody hangs.
//!   - [`channel_choices_on_both_sides_complete_one_case`]: two choices
//!     facing each other over two channels complete exactly one
//!     rendezvous, and both sides agree which.
//!   - [`blocked_vproc_joins_a_collection_then_completes`]: a vproc waiting
//!     for a rendezvous is woken by a global collection, takes part in both
//!     phases, and then sees the rendezvous complete.
//!   - [`blocked_thread_is_resumed_on_its_home_vproc`]: a thread that
//!     receives on a channel (the two looks of `sched::thread::synchronise`)
//!     parks, its vproc goes idle, and a job's send on another vproc wakes
//!     it through its home vproc's ready queue and `notify_work`; or the
//!     thread finds the sender and rings it. The rendezvous completes once,
//!     the continuation runs once, on its home vproc, with the value, and
//!     no vproc sleeps for ever.
//!
//! ## loom and SeqCst
//!
//! loom 0.7 treats SeqCst *accesses* as AcqRel (its README, "unsupported
//! features"); only `fence(SeqCst)` is modelled exactly. The `set_limit` /
//! `request` race is a store-buffering pattern whose correctness rests on the
//! single total order of SeqCst accesses: with SeqCst accesses alone loom
//! reported an outcome the Rust/C11 model forbids. The production code
//! therefore puts a `fence(SeqCst)` between each side's two accesses, which
//! is correct under both models, and [`set_limit_never_misses_a_request`]
//! checks the real code. The other handshake models do not depend on it:
//! their orderings come from the mutex or from a CAS.
//!
//! Mutation check (done while writing these models, on a scratch copy): each
//! of these protocol changes makes at least one model fail —
//! `idle + 1 >= workers` (early termination), no `notify_one` in `push`, no
//! `idle -= 1` after a wake-up, leader's serial part before the last arrival,
//! no `notify_all` in `request` or in the last arrival of `phase`, no
//! shutdown check in `wait_idle`, `put` ignoring the node, `request` without
//! the CAS; for the scheduler models, `notify_work` that never
//! notifies, and a thief that posts its request without `signal`; for the
//! channel models, a matcher that takes a waiting offer without winning its
//! claim, and unlocking the channels between the search and the queueing
//! (a deadlock: both choices queue and wait).
//!
//! The same check for the models added with the fuzz targets (issue 5),
//! each mutation made alone on a scratch copy and the model run against
//! it: `signal` without its `fence(SeqCst)` fails
//! [`signal_is_never_missed_by_set_limit`] (the owner misses the request
//! and keeps its limit); `serve_requests` emptying the mailbox before
//! clearing the signal (a deadlock: a thief's request is lost) and
//! `Handoff::env_ready` publishing `READY` before the environment (a thief
//! finds no environment) fail [`promotion_requests_of_two_thieves_are_served`];
//! `notify_work` that wakes sleepers only when there are two, `wait_idle`
//! sleeping without asking for work (both deadlocks: the idle vproc sleeps
//! through its thread's wake-up), `channel::sync` marking offers done
//! before moving the value (the waiting job receives nothing) and a
//! blocking offer that is never queued (a deadlock) fail
//! [`blocked_thread_is_resumed_on_its_home_vproc`]. Moving the value while
//! the channel locks are still held, which changes no outcome, passes.

use crate::gc::handshake::{Coordinator, Wake};
use crate::gc::work_queue::ScanQueue;
use crate::heap::budget::HeapBudget;
use crate::heap::chunk_pool::ChunkPool;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::sync::Arc;
use loom::thread;

/// A model builder with an explicit preemption bound (bounded models keep the
/// run in seconds; `LOOM_MAX_PREEMPTIONS` is overridden).
fn bounded(preemptions: usize) -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(preemptions);
    b
}

fn wake_name<J>(w: &Wake<J>) -> &'static str {
    match w {
        Wake::Job(_) => "Job",
        Wake::Collect => "Collect",
        Wake::Steal => "Steal",
        Wake::Shutdown => "Shutdown",
    }
}

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

/// Shared counters of the two-phase collection models. `arrivedN` is bumped
/// by each vproc just before it calls phase N; `serialN` by phase N's serial
/// part. All `Relaxed`: visibility must come from the barrier itself.
struct PhaseCounters {
    arrived1: AtomicUsize,
    arrived2: AtomicUsize,
    serial1: AtomicUsize,
    serial2: AtomicUsize,
}

impl PhaseCounters {
    fn new() -> Self {
        PhaseCounters {
            arrived1: AtomicUsize::new(0),
            arrived2: AtomicUsize::new(0),
            serial1: AtomicUsize::new(0),
            serial2: AtomicUsize::new(0),
        }
    }
}

/// Vproc `v`'s part of a two-phase global collection; phase 2's serial part
/// ends the collection.
fn run_two_phases(c: &Coordinator<u32>, k: &PhaseCounters, v: usize) {
    k.arrived1.fetch_add(1, Ordering::Relaxed);
    c.phase(v, || {
        assert_eq!(
            k.arrived1.load(Ordering::Relaxed),
            2,
            "phase 1 serial before all arrived"
        );
        assert_eq!(
            k.serial1.fetch_add(1, Ordering::Relaxed),
            0,
            "phase 1 serial ran twice"
        );
    });
    assert_eq!(
        k.serial1.load(Ordering::Relaxed),
        1,
        "vproc {v} left phase 1 before its serial part"
    );
    assert!(c.pending(), "collection ended during phase 1");

    k.arrived2.fetch_add(1, Ordering::Relaxed);
    c.phase(v, || {
        assert_eq!(
            k.arrived2.load(Ordering::Relaxed),
            2,
            "phase 2 serial before all arrived"
        );
        assert_eq!(
            k.serial2.fetch_add(1, Ordering::Relaxed),
            0,
            "phase 2 serial ran twice"
        );
        c.finish();
    });
    assert_eq!(
        k.serial2.load(Ordering::Relaxed),
        1,
        "vproc {v} left phase 2 before its serial part"
    );
    assert!(
        !c.pending(),
        "vproc {v} left the collection while still pending"
    );
}

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

// ---------------------------------------------------------------------------
// §3.4 parallel scanning: each item once, termination
// ---------------------------------------------------------------------------

/// One scanning worker: pushes its `roots`, then pops until the queue says
/// the collection's work is finished. Scanning item 1 discovers item 2, which
/// lands in a to-space chunk of node 1 and is pushed there — by whichever
/// worker took item 1, i.e. work is pushed "while popping". `outstanding`
/// counts items pushed and not yet fully scanned (`Relaxed`: when `pop`
/// returns `None` the queue's lock must make every other worker's decrement
/// visible), and must be 0 whenever `pop` declares termination.
fn scan_worker(
    q: &ScanQueue<u32>,
    outstanding: &AtomicUsize,
    node: usize,
    roots: &[(usize, u32)],
) -> Vec<u32> {
    for &(n, item) in roots {
        outstanding.fetch_add(1, Ordering::Relaxed);
        q.push(n, item);
    }
    let mut got = Vec::new();
    while let Some(item) = q.pop(node) {
        if item == 1 {
            outstanding.fetch_add(1, Ordering::Relaxed);
            q.push(1, 2);
        }
        got.push(item);
        outstanding.fetch_sub(1, Ordering::Relaxed);
    }
    assert_eq!(
        outstanding.load(Ordering::Relaxed),
        0,
        "worker {node} stopped while work was outstanding"
    );
    got
}

#[test]
fn scan_queue_each_item_once_and_terminates() {
    bounded(3).check(|| {
        let q = Arc::new(ScanQueue::<u32>::new(2));
        let out = Arc::new(AtomicUsize::new(0));
        q.reset(2);

        // Worker 0 (node 0) has the roots: item 1 on node 0, item 3 on
        // node 1. Worker 1 (node 1) has none and takes whatever appears.
        let (q0, o0) = (q.clone(), out.clone());
        let w0 = thread::spawn(move || scan_worker(&q0, &o0, 0, &[(0, 1), (1, 3)]));
        let (q1, o1) = (q.clone(), out.clone());
        let w1 = thread::spawn(move || scan_worker(&q1, &o1, 1, &[]));
        let mut all = w0.join().unwrap();
        all.extend(w1.join().unwrap());
        all.sort_unstable();
        assert_eq!(all, vec![1, 2, 3], "each item popped exactly once");
        // Both stopped with the queue drained: the next collection can start.
        assert_eq!(q.pop(0), None);
        q.reset(2);
    });
}

/// A push wakes a worker that went idle: worker 0 pushes an item and then
/// waits (outside the queue) until worker 1 has taken it. If `push` did not
/// wake the idle worker 1, both would block and loom reports the deadlock.
/// (In the scan itself a lost wake-up would only cost parallelism, since the
/// pusher pops its own work; this model pins the wake-up down.)
#[test]
fn scan_queue_push_wakes_idle_worker() {
    loom::model(|| {
        let q = Arc::new(ScanQueue::<u32>::new(2));
        q.reset(2);
        let handoff = Arc::new((loom::sync::Mutex::new(false), loom::sync::Condvar::new()));

        let (q1, h1) = (q.clone(), handoff.clone());
        let w1 = thread::spawn(move || {
            let mut got = Vec::new();
            while let Some(item) = q1.pop(1) {
                got.push(item);
                *h1.0.lock().unwrap() = true;
                h1.1.notify_all();
            }
            got
        });
        let (q0, h0) = (q.clone(), handoff.clone());
        let w0 = thread::spawn(move || {
            q0.push(1, 5);
            let mut taken = h0.0.lock().unwrap();
            while !*taken {
                taken = h0.1.wait(taken).unwrap();
            }
            drop(taken);
            q0.pop(0)
        });
        assert_eq!(w0.join().unwrap(), None);
        assert_eq!(w1.join().unwrap(), vec![5]);
    });
}

// ---------------------------------------------------------------------------
// The heap limit (issue 2, item 10)
// ---------------------------------------------------------------------------

/// Two vprocs ask for a chunk each while the limit has room for one, while
/// a collector copy forces one more: at most one mutator request is
/// granted, and exactly one unless the forced charge came first; a refusal
/// reports bytes in use that leave no room; the bytes in use never exceed
/// the limit by more than the forced charge.
#[test]
fn heap_limit_is_never_overshot() {
    loom::model(|| {
        let b = Arc::new(HeapBudget::new(3 * 64));
        b.charge(2 * 64, false).unwrap();
        let ask = |b: Arc<HeapBudget>| thread::spawn(move || b.charge(64, false));
        let (x, y) = (ask(b.clone()), ask(b.clone()));
        let bf = b.clone();
        let forced = thread::spawn(move || {
            bf.charge(64, true).unwrap();
            bf.in_use()
        });
        let (x, y) = (x.join().unwrap(), y.join().unwrap());
        let right_after_forced = forced.join().unwrap();
        let granted = x.is_ok() as usize + y.is_ok() as usize;
        assert!(granted <= 1, "both granted past the limit");
        if granted == 0 {
            // Only possible when the forced charge took the last room first.
            assert_eq!(right_after_forced, 3 * 64);
        }
        for refused in [x, y].into_iter().filter_map(|r| r.err()) {
            assert!(
                refused.in_use + 64 > 3 * 64,
                "refused at {} bytes in use",
                refused.in_use
            );
        }
        assert_eq!(b.in_use(), (3 + granted) * 64);
        assert!(b.peak() <= 4 * 64);
    });
}

// ---------------------------------------------------------------------------
// §3.1 chunk pool: node affinity, node-local synchronisation
// ---------------------------------------------------------------------------

/// Chunk ids encode their node: `node * 100 + i`.
fn node_of(chunk: u32) -> usize {
    (chunk / 100) as usize
}

#[test]
fn chunk_pool_affinity() {
    loom::model(|| {
        let p = Arc::new(ChunkPool::new(2));
        p.put(0, 1);
        p.put(1, 101);

        // A vproc of node 0: frees a chunk of node 0 and one of node 1 (from
        // a collection), then takes from its own node.
        let pa = p.clone();
        let a = thread::spawn(move || {
            pa.put(0, 2);
            pa.put(1, 102);
            let mut got = Vec::new();
            for _ in 0..2 {
                if let Some(ch) = pa.take(0) {
                    got.push((0, ch));
                }
            }
            got
        });
        // A vproc of node 1: takes from its own node, then from node 0.
        let pb = p.clone();
        let b = thread::spawn(move || {
            let mut got = Vec::new();
            if let Some(ch) = pb.take(1) {
                got.push((1, ch));
            }
            if let Some(ch) = pb.take(0) {
                got.push((0, ch));
            }
            got
        });
        let mut taken = a.join().unwrap();
        taken.extend(b.join().unwrap());
        for &(node, ch) in &taken {
            assert_eq!(
                node_of(ch),
                node,
                "chunk {ch} taken from node {node}'s pool"
            );
        }
        // Drain what is left; every chunk put is accounted for exactly once.
        for node in 0..2 {
            let left = p.len(node);
            for _ in 0..left {
                let ch = p.take(node).expect("len said non-empty");
                assert_eq!(node_of(ch), node);
                taken.push((node, ch));
            }
            assert_eq!(p.take(node), None);
        }
        let mut ids: Vec<u32> = taken.iter().map(|&(_, ch)| ch).collect();
        ids.sort_unstable();
        assert_eq!(
            ids,
            vec![1, 2, 101, 102],
            "no chunk lost or handed out twice"
        );
    });
}

// ---------------------------------------------------------------------------
// §2.2–2.3 work stealing with lazy promotion
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

#[test]
fn idle_vproc_wakes_for_pushed_work() {
    use crate::sched::deque::{Steal, Worker};
    bounded(3).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let worker = Worker::<u32>::new_lifo();
        let stealer = Arc::new(worker.stealer());
        let (c1, s1) = (c.clone(), stealer.clone());
        let idle = thread::spawn(move || loop {
            match c1.wait_idle(1, || !s1.is_empty()) {
                Wake::Steal => {
                    if let Steal::Success(x) = s1.steal() {
                        return x;
                    }
                }
                w => panic!("idle vproc woke for {}", wake_name(&w)),
            }
        });
        worker.push(5);
        c.notify_work();
        assert_eq!(idle.join().unwrap(), 5);
    });
}

#[test]
fn stolen_task_handoff() {
    use crate::sched::deque::{Steal, Worker};
    use crate::sched::task::{serve_requests, Handoff, Mailbox, DONE, READY};
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(2));
        let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let worker = Worker::<Arc<Handoff>>::new_lifo();
        let stealer = worker.stealer();
        let task = Arc::new(Handoff::new(0, true));
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
            assert_eq!(t.take_env(), vec![42], "the thief saw another environment");
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
                    matches!(task.take_result(), Some(Ok(7))),
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
    use crate::sched::task::{serve_requests, Handoff, Mailbox, DONE, READY};
    bounded(2).check(|| {
        let c = Arc::new(Coordinator::<u32>::new(3));
        let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
        let roots = Arc::new(GlobalRoots::new());
        let worker = Worker::<Arc<Handoff>>::new_lifo();
        let tasks: Vec<Arc<Handoff>> = (0..2).map(|_| Arc::new(Handoff::new(0, true))).collect();
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
                    let env: Vec<u64> = t.take_env().into_iter().map(|slot| r.take(slot)).collect();
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
                matches!(t.take_result(), Some(Ok(r)) if r == 100 + k),
                "task {k}: the thief ran another environment"
            );
        }
    });
}

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

#[test]
fn waiting_vproc_wakes_for_pushed_work() {
    use crate::sched::deque::{Steal, Worker};
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

// ---------------------------------------------------------------------------
// Blocking sections (issue 16): a proxy takes part for a blocked vproc
// ---------------------------------------------------------------------------

/// Blocking sections (`gc/blocking.rs`): vproc 1's thread enters a section
/// and its proxy acts for it. The vproc's state is a loom `UnsafeCell`
/// written by whoever owns it, so an access by the proxy that is not
/// ordered with the owner's is reported. Mutation checks: without the
/// proxies' ring in `request` or the owner's in `enter_blocking` (a
/// request stored before the section), loom reports the deadlock of the
/// first model; without the `ring_if_blocked` of `signal`, of the third.
mod blocking {
    use super::bounded;
    use crate::gc::blocking::ProxyWake;
    use crate::gc::handshake::{Coordinator, Entry};
    use loom::cell::UnsafeCell;
    use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use loom::sync::{Arc, Condvar, Mutex};
    use loom::thread;

    /// The vproc's state and the collections it took part in.
    struct VprocState {
        data: UnsafeCell<u64>,
        collections: AtomicUsize,
        served_requests: AtomicUsize,
    }

    impl VprocState {
        fn new() -> Arc<Self> {
            Arc::new(VprocState {
                data: UnsafeCell::new(0),
                collections: AtomicUsize::new(0),
                served_requests: AtomicUsize::new(0),
            })
        }

        /// Whoever owns the state touches it.
        fn touch(&self) {
            self.data.with_mut(|p| unsafe { *p += 1 });
        }
    }

    /// The safepoint of `plan::poll`: serves requests, and takes part in a
    /// pending collection (enter, gather, one phase whose serial part ends
    /// it). No deadline: every vproc is waited for.
    fn safepoint(c: &Coordinator<u32>, v: usize, st: Option<&VprocState>) {
        if c.take_signal(v) {
            if let Some(st) = st {
                st.served_requests.fetch_add(1, Ordering::Relaxed);
            }
        }
        if !c.pending() {
            return;
        }
        if c.enter(v) == Entry::Entered {
            if let Some(st) = st {
                st.touch();
            }
            c.gather(v, || Ok(()), || unreachable!("no deadline"))
                .expect("no deadline, enough to-space");
            c.phase(v, || c.finish());
            if let Some(st) = st {
                st.collections.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// The proxy of vproc 1 (`sched::proxy::serve`).
    fn proxy(c: Arc<Coordinator<u32>>, st: Arc<VprocState>) -> thread::JoinHandle<()> {
        thread::spawn(move || loop {
            match c.proxy_wait(1) {
                ProxyWake::Stop => return,
                ProxyWake::Serve => {
                    st.touch();
                    safepoint(&c, 1, Some(&st));
                    c.proxy_done(1);
                }
            }
        })
    }

    /// A flag the blocked foreign code waits for.
    #[derive(Default)]
    struct Gate {
        open: Mutex<bool>,
        cv: Condvar,
    }

    impl Gate {
        fn open(&self) {
            *self.open.lock().unwrap() = true;
            self.cv.notify_all();
        }
        fn wait(&self) {
            let mut g = self.open.lock().unwrap();
            while !*g {
                g = self.cv.wait(g).unwrap();
            }
        }
    }

    /// Vproc 1 blocks until vproc 0's collection is over: the collection
    /// completes without vproc 1's thread, through its proxy, whenever the
    /// request comes (before, during or after the entry).
    #[test]
    fn a_blocked_vproc_takes_part_through_its_proxy() {
        bounded(2).check(|| {
            let c = Arc::new(Coordinator::<u32>::new(2));
            let st = VprocState::new();
            let gate = Arc::new(Gate::default());
            let p = proxy(c.clone(), st.clone());
            let (c1, st1, g1) = (c.clone(), st.clone(), gate.clone());
            let owner = thread::spawn(move || {
                st1.touch();
                c1.enter_blocking(1);
                g1.wait(); // foreign code, until the collection is over
                c1.leave_blocking(1);
                st1.touch();
                safepoint(&c1, 1, Some(&st1));
            });
            assert!(c.request(0));
            safepoint(&c, 0, None);
            assert_eq!(c.collections(), 1);
            gate.open();
            owner.join().unwrap();
            c.stop_proxy(1);
            p.join().unwrap();
            assert_eq!(st.collections.load(Ordering::Relaxed), 1);
        });
    }

    /// Vproc 1 enters and leaves at once, racing with vproc 0's request:
    /// either its proxy or its own thread takes part, exactly once, and
    /// never both at the same time.
    #[test]
    fn leaving_races_with_a_collection() {
        bounded(2).check(|| {
            let c = Arc::new(Coordinator::<u32>::new(2));
            let st = VprocState::new();
            let p = proxy(c.clone(), st.clone());
            let (c1, st1) = (c.clone(), st.clone());
            let owner = thread::spawn(move || {
                c1.enter_blocking(1);
                c1.leave_blocking(1);
                st1.touch();
                // `Scope::blocking` polls after leaving; the vproc's next
                // safepoints come later (one here is enough: the
                // collection waits for it).
                while st1.collections.load(Ordering::Relaxed) == 0 {
                    if c1.pending() {
                        safepoint(&c1, 1, Some(&st1));
                    } else {
                        thread::yield_now();
                    }
                }
            });
            assert!(c.request(0));
            safepoint(&c, 0, None);
            owner.join().unwrap();
            c.stop_proxy(1);
            p.join().unwrap();
            assert_eq!(c.collections(), 1);
            assert_eq!(st.collections.load(Ordering::Relaxed), 1);
        });
    }

    /// A thief's request for vproc 1 (`signal`) while it is blocked is
    /// served by the proxy: the thief is not kept waiting for the foreign
    /// code.
    #[test]
    fn a_request_to_a_blocked_vproc_is_served_by_its_proxy() {
        bounded(2).check(|| {
            let c = Arc::new(Coordinator::<u32>::new(2));
            let st = VprocState::new();
            let gate = Arc::new(Gate::default());
            let served = Arc::new(AtomicBool::new(false));
            let p = proxy(c.clone(), st.clone());
            let (c1, st1, g1) = (c.clone(), st.clone(), gate.clone());
            let owner = thread::spawn(move || {
                c1.enter_blocking(1);
                g1.wait();
                c1.leave_blocking(1);
                st1.touch();
            });
            c.signal(1);
            // The thief waits for its answer (on its doorbell, in the
            // runtime); here: until the request was taken.
            while st.served_requests.load(Ordering::Relaxed) == 0 {
                thread::yield_now();
            }
            served.store(true, Ordering::Relaxed);
            gate.open();
            owner.join().unwrap();
            c.stop_proxy(1);
            p.join().unwrap();
            assert!(served.load(Ordering::Relaxed));
        });
    }
}

// ===========================================================================
// Faults (issue 5): the safepoint deadline of a global collection (§3.4
// extended) and a stolen task whose environment cannot be promoted (§2.3).
// Everything below belongs to this block; other models go above it.
// ===========================================================================

/// A thief steals a task whose owner cannot promote the environment (the
/// system refuses the memory, `sched::serve_mail`): the owner records the
/// error and marks the task `READY`; the thief must see the error (not an
/// environment), must not run the task, and finishes it with the error,
/// which the owner's join reads. Nobody waits for ever, and the task runs
/// at most once (exactly once when the owner pops it back itself).
/// Mutation check: an `env_failed` that does not mark the task `READY`
/// makes loom report the deadlock.
mod handoff_failure {
    use super::bounded;
    use crate::gc::handshake::Coordinator;
    use crate::sched::deque::{Steal, Worker};
    use crate::sched::task::{Handoff, Mailbox, DONE, READY};
    use crate::Error;
    use loom::sync::atomic::{AtomicUsize, Ordering};
    use loom::sync::Arc;
    use loom::thread;

    fn refused() -> Error {
        Error::MapFailed {
            bytes: 4096,
            what: "the copy reserve of a major collection or promotion",
            errno: 12,
        }
    }

    #[test]
    fn stolen_task_whose_environment_cannot_be_promoted() {
        bounded(2).check(|| {
            let c = Arc::new(Coordinator::<u32>::new(2));
            let mailbox = Arc::new(Mailbox::<Arc<Handoff>>::new());
            let runs = Arc::new(AtomicUsize::new(0));
            let worker = Worker::<Arc<Handoff>>::new_lifo();
            let stealer = worker.stealer();
            let task = Arc::new(Handoff::new(0, true));
            worker.push(task.clone());

            // The owner's duty at a safepoint, with the promotion refused.
            let serve = |c: &Coordinator<u32>, mailbox: &Mailbox<Arc<Handoff>>| {
                if c.take_signal(0) {
                    for t in mailbox.take() {
                        t.env_failed(refused());
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
                match t.take_env_error() {
                    Some(e) => {
                        assert!(t.take_env().is_empty(), "an environment beside the error");
                        t.finish(Err(e));
                    }
                    None => {
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
                    let r = task.take_result();
                    assert!(
                        matches!(r, Some(Err(Error::MapFailed { .. }))),
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
}

/// The deadline protocol of `gc::handshake` (`enter`, `gather`, `expire`):
/// a global collection either has every vproc take part, or is called off
/// before anything moves, with the vprocs that stopped back at work and the
/// late vproc finding nothing to join.
///
/// * [`safepoint::late_vproc_either_takes_part_or_finds_nothing`]: vproc 0
///   requests and goes to its safepoint; vproc 1 reaches one safepoint at an
///   arbitrary moment (it may look before the request and then never
///   again); a timer thread lets the deadline pass at an arbitrary moment.
///   Exactly one outcome: both took part (the serial step ran once, the
///   collection completed), or the collection was abandoned — `undo` ran
///   once after every hand-in, no serial step ran, the vproc that waited
///   was told which vproc was late, and that vproc took no part. Nothing is
///   pending afterwards, so whatever either vproc does next it finds no
///   collection to join. No interleaving hangs (loom reports deadlocks).
/// * [`safepoint::late_leader_finds_its_collection_abandoned`]: the same
///   with the requester itself late (a promotion asks for a collection at
///   the next safepoint) and vproc 1 prompt.
/// * [`safepoint::refused_serial_step_abandons_for_everyone_and_the_next_collection_works`]:
///   the leader's serial step refuses (no to-space): both vprocs are told,
///   `undo` runs once, and a new collection afterwards completes normally.
///
/// The first model found a real race while it was written: `request` set
/// `pending` by compare-and-swap and recorded the leader and the start of
/// the deadline afterwards, so a vproc could enter and abandon the new
/// collection in between and leave a stale leader (and deadline) behind;
/// `request` now swaps under the state lock.
///
/// Mutation check (done while writing these models, on a scratch copy):
/// letting `enter` succeed on a closed collection, abandoning when every
/// vproc has entered, and skipping `undo` when the serial step refuses each
/// make a model fail. Not caught with two vprocs (they need a third vproc,
/// or a new request during the abandonment, which these models leave out to
/// stay small): delivering the outcome only to the abandoner, and clearing
/// `pending` as soon as the collection is closed.
mod safepoint {
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
        if seen.iter().any(|s| *s == Seen::TookPart(Ok(()))) {
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
}
