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
//! | leader election and limit zeroing (§3.4) | `gc/handshake.rs`: `request`, `set_limit` | [`handshake::handshake_leader_unique_and_limits_zeroed`], [`handshake::set_limit_never_misses_a_request`] (control: [`handshake::set_limit_fenced_replica_reordered_is_caught`]) |
//! | barriers of the global collection (§3.4) | `gc/handshake.rs`: `phase`, `finish` | [`handshake::phases_run_serial_once_with_idle_vproc`], [`handshake::phases_with_racing_requesters`], [`channels::blocked_vproc_joins_a_collection_then_completes`] |
//! | termination of the parallel scan (§3.4) | `gc/work_queue.rs`: `ScanQueue` | [`scan_queue::scan_queue_each_item_once_and_terminates`], [`scan_queue::scan_queue_push_wakes_idle_worker`] |
//! | chunk pool, per node (§3.1) | `heap/chunk_pool.rs`: `ChunkPool` | [`heap::chunk_pool_affinity`] |
//! | the heap limit: check and charge of global bytes (issue 2, item 10) | `heap/budget.rs`: `HeapBudget` | [`heap::heap_limit_is_never_overshot`] |
//! | parking and waking of idle vprocs (jobs, collections, work, shutdown) | `gc/handshake.rs`: `wait_idle`, `submit`, `shutdown`, `notify_work`; `sched/mod.rs`: `push_waking` | [`handshake::wait_idle_job_then_shutdown`], [`handshake::phases_run_serial_once_with_idle_vproc`], [`waking::idle_vproc_wakes_for_pushed_work`], [`waking::idle_vproc_wakes_when_a_deque_fills`], [`channels::blocked_thread_is_resumed_on_its_home_vproc`] |
//! | parking and waking of vprocs waiting inside a computation (joins, environments) | `sched/doorbell.rs`; `gc/handshake.rs`: `wait_for_work_or` | [`waking::doorbell_ring_is_never_lost`], [`waking::waiting_vproc_wakes_for_pushed_work`], [`channels::blocked_vproc_joins_a_collection_then_completes`] |
//! | work-stealing hand-off: who runs a task, its environment and result (§2.2–2.3) | `sched/task.rs`: `Handoff` (its cells ordered by the state: `sync::OrderedCell`, loom's `UnsafeCell` under the model); `sched/deque.rs` (loom stand-in) | [`tasks::stolen_task_handoff`] |
//! | promotion requests: thief to owner (§2.3, lazy promotion) | `sched/task.rs`: `Mailbox`, `serve_requests`; `gc/handshake.rs`: `signal`, `take_signal`; `mutator/roots.rs`: `GlobalRoots` | [`tasks::signal_is_never_missed_by_set_limit`], [`tasks::promotion_requests_of_two_thieves_are_served`], [`tasks::stolen_task_handoff`] |
//! | channel rendezvous and choice (§2.1) | `sched/channel.rs`: `sync`, `Offer` | [`channels::channel_choice_is_claimed_once`], [`channels::channel_choices_on_both_sides_complete_one_case`] |
//! | parking and waking of threads blocked on channels (§2.1) | `sched/thread.rs`: `synchronise`, `wake`, `push_ready` (replayed); ready queues; `notify_work` | [`channels::blocked_thread_is_resumed_on_its_home_vproc`] |
//! | a vproc blocked in a job's send/recv during a collection | `sched/mod.rs`: `wait_until` (replayed); `Coordinator` | [`channels::blocked_vproc_joins_a_collection_then_completes`] |
//! | blocking sections: a proxy takes part for a blocked vproc (issue 16) | `gc/blocking.rs`: `enter_blocking`, `leave_blocking`, `proxy_wait`, `proxy_done`; `request`, `signal` | [`blocking::a_blocked_vproc_takes_part_through_its_proxy`], [`blocking::leaving_races_with_a_collection`], [`blocking::a_request_to_a_blocked_vproc_is_served_by_its_proxy`] |
//! | the safepoint deadline: a global collection all vprocs take part in, or abandoned before anything moves (issue 5) | `gc/handshake.rs`: `enter`, `gather`, `expire`, `request`, `finish` | [`safepoint::late_vproc_either_takes_part_or_finds_nothing`], [`safepoint::late_leader_finds_its_collection_abandoned`], [`safepoint::refused_serial_step_abandons_for_everyone_and_the_next_collection_works`] |
//! | termination of a major cycle's marking and sweeping, shared plan (§3.2.1) | `plan/shared_heap/termination.rs`: `Termination` (the heap a replica) | [`termination::marking_ends_only_when_every_vproc_is_done_and_the_barrier_counts_back_on`] |
//! | colour cycling at the barrier that ends a major cycle, shared plan (§3.2.2) | `gc/handshake.rs`: `phase`, `finish`; `plan/shared_heap/state.rs`: `Colours` | [`shared_heap::colour_rotation_at_the_cycle_barrier_is_seen_by_every_vproc`] |
//! | ephemeron rounds at the barrier that ends a cycle (§5.1.2–5.1.3): every vproc's registrations seen | `weak/mod.rs`: `WeakRegistry`; `weak/process.rs`: `process`; `Coordinator::phase` | [`shared_heap::ephemeron_rounds_at_the_barrier_see_every_vprocs_registrations`] |
//! | two vprocs promoting one object, shared plan (§4.4.2) | `plan/shared_heap/minor.rs`: `Promoter::forward` (the heap a replica, the orderings of `Obj`) | [`shared_heap::promotion_cas_publishes_one_complete_copy`] (control: [`shared_heap::promotion_cas_with_relaxed_orderings_is_caught`]) |
//! | a stolen task whose environment cannot be promoted (issue 5) | `sched/task.rs`: `Handoff` (`env_ready` with the error), `Mailbox` | [`tasks::stolen_task_whose_environment_cannot_be_promoted`] |
//! | an offered task of a PE group: claimed once by its forker or the service, an exported one finished once and its outcome read by the waiting forker (GUMSMP §2.1) | `pe/group.rs`: `Offered`; `sched/doorbell.rs`; `pe/service.rs`, `PeContext::take_offer`, `wait_remote` (replayed) | [`pe_offer::offer_is_claimed_once_by_its_forker_or_the_service`], [`pe_offer::exported_result_reaches_the_waiting_forker`], [`pe_offer::a_failure_racing_a_late_result_finishes_once`] |
//! | the owner's weight books of a global object: a re-export racing the last weight's return names a live entry (GUMSMP §2.1) | `pe/weight.rs`: `Git::share`, `Git::returned` | [`pe_weight::a_reexport_racing_the_last_return_names_a_live_entry`] |
//! | the holder's weight books: a share unpacked while the import scan drops the entry of a dead FetchMe joins a live entry, no weight lost (GUMSMP §2.1) | `pe/global.rs`: `PeContext::import_global`, `scan_imports`; `pe/weight.rs`: `Imports` | [`pe_weight::a_share_racing_the_import_scan_joins_a_live_entry`] |
//! | settling the weight books at the end of a job waits for the weight of an import scan that dropped its entries and has not sent them yet (GUMSMP §2.1) | `pe/global.rs`: `PeContext::scan_imports`; `pe/group.rs`: `PeGroup::settle` | [`pe_weight::settling_waits_for_the_weight_a_racing_scan_has_not_sent_yet`] |
//! | a PE's incoming messages over MPI: the service, the communication thread and polling vprocs take them under one token, and what a vproc declines reaches the service before later messages (GUMSMP §2.1) | `pe/inbox.rs`: `ProbeToken::receive`, `poll` | [`pe_inbox::what_a_polling_vproc_declines_keeps_its_place`] |
//!
//! Each model lives in the file its link names (`handshake::…` in
//! `loom_models/handshake.rs`, and so on); the helpers the files share
//! (`bounded`, `wake_name`, `PhaseCounters`, `run_two_phases`) are in this
//! `mod.rs`.
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
//! * the shared plan's compaction (`plan/shared_heap/compact.rs`): its
//!   phases run while every vproc is stopped, each on its own vproc's data
//!   (the leader alone on the shared roots), so its only synchronisation
//!   is the phase barrier, which the `handshake` models explore;
//! * job results (`runtime.rs`): `std::sync::mpsc`;
//! * `Coordinator::interrupted`, a relaxed hint that brings a busy idle
//!   loop to `wait_idle` sooner (`wait_idle` itself is modelled).
//!
//! What each model proves, against `../shared/papers/manticore-numa-gc.md`:
//!
//! * **§3.4, leader election and limit zeroing** (`gc::handshake`):
//!   - [`handshake::handshake_leader_unique_and_limits_zeroed`]: when two vprocs race to
//!     trigger a global collection, exactly one `request` wins the CAS and is
//!     recorded as the leader ("mark this vproc the leader"), and every
//!     allocation-limit cell ends at zero ("setting their allocation limit
//!     pointer to zero") unless its vproc re-installed a limit afterwards, in
//!     which case that `set_limit` reported the pending collection.
//!   - [`handshake::set_limit_never_misses_a_request`]: the SeqCst store-limit /
//!     load-pending protocol of `set_limit` against the leader's
//!     CAS-pending / zero-limits: a vproc can never both miss the pending flag
//!     and keep a non-zero limit (it would run past the collection).
//!     [`handshake::set_limit_fenced_replica_reordered_is_caught`] is its control: the
//!     same check on a replica with the accesses swapped must fail.
//!   - [`handshake::phases_run_serial_once_with_idle_vproc`]: "wait for all of the other
//!     vprocs to enter the global collection": an idle vproc blocked in
//!     `wait_idle` is woken with `Wake::Collect`, each `phase` barrier runs the
//!     leader's serial part exactly once, only after both vprocs arrived, and
//!     its effects are visible to both after the barrier (checked with
//!     `Relaxed` counters, so the happens-before must come from the barrier);
//!     `finish` leaves no collection pending and counts exactly one.
//!     [`handshake::phases_with_racing_requesters`] is the same with the leader chosen by
//!     the CAS race instead of fixed.
//!   - [`handshake::wait_idle_job_then_shutdown`]: an idle vproc receives a job queued
//!     for it before the shutdown, in that order, and never sleeps through
//!     either notification.
//! * **§3.4, parallel scanning termination** (`gc::work_queue`):
//!   [`scan_queue::scan_queue_each_item_once_and_terminates`]: items pushed to per-node
//!   lists before and during the scan (the unscanned part of a to-space chunk)
//!   are each taken exactly once, every worker stops (loom reports a deadlock
//!   otherwise), and the idle-counting termination returns `None` only when
//!   no item is outstanding (no early exit).
//!   [`scan_queue::scan_queue_push_wakes_idle_worker`]: a push wakes an idle worker.
//! * **§3.1, chunk reuse keeps node affinity; node-local synchronisation**
//!   (`heap::chunk_pool`): [`heap::chunk_pool_affinity`]: with vprocs of two nodes
//!   putting and taking concurrently, no chunk is handed out twice, none is
//!   lost, and a chunk taken from node *k*'s pool was put on node *k*.
//! * **§2.2–2.3, work stealing with lazy promotion** (`sched`):
//!   - [`waking::doorbell_ring_is_never_lost`]: a waiter that tests its condition
//!     and sleeps on its doorbell is always woken by a ringer that publishes
//!     the condition and then rings, whatever the interleaving.
//!   - [`waking::idle_vproc_wakes_for_pushed_work`]: an idle vproc going to sleep in
//!     `wait_idle` and a vproc pushing a task and calling `notify_work`: the
//!     idle one always ends up stealing the task (no lost wake-up between its
//!     "any work?" check and its sleep).
//!   - [`waking::idle_vproc_wakes_when_a_deque_fills`]: with forks waking
//!     sleepers only when their push finds the deque empty
//!     (`sched::push_waking`), an idle vproc still gets a task whatever the
//!     interleaving of a push, a pop back, a push onto the emptied deque
//!     and one onto the deque that push filled, and no task is both popped
//!     back and stolen.
//!   - [`tasks::stolen_task_handoff`]: the owner pops its task back or, if a thief
//!     stole it, serves the thief's request for the environment (mailbox,
//!     `signal`, doorbell) while it waits for the result. The task runs
//!     exactly once, the thief sees the environment the owner published, the
//!     owner sees the thief's result, and neither side can hang. The deque
//!     is the loom stand-in of `sched::deque`; the owner's serving step
//!     replays `sched::serve_mail` without a heap.
//!   - [`waking::waiting_vproc_wakes_for_pushed_work`]: a vproc waiting in a join
//!     (`Coordinator::wait_for_work_or`) hears of a task pushed meanwhile.
//!   - [`tasks::signal_is_never_missed_by_set_limit`]: a thief's promotion request
//!     (`signal`) against the owner re-installing its allocation limit
//!     (`set_limit`): the owner sees the request at once or keeps a zero
//!     limit, so its next allocation reaches the safepoint that serves it;
//!     the request is taken exactly once.
//!   - [`tasks::promotion_requests_of_two_thieves_are_served`]: two thieves ask
//!     one owner for two environments at once, racing with the owner's
//!     serving (`task::serve_requests`, the protocol of
//!     `sched::serve_mail`, with the production `GlobalRoots`): each
//!     environment is promoted once and reaches its own thief, the owner
//!     joins both results, and no request is lost between the owner's
//!     clearing of its signal and its emptying of the mailbox.
//! * **§2.1, channels** (`sched::channel`, the production rendezvous code
//!   with `u32` values; waiting as `sched::thread::select_blocking` does):
//!   - [`channels::channel_choice_is_claimed_once`]: two senders race to claim one
//!     choice over two channels; each value arrives once, on its channel,
//!     the loser waits for the second receive, and nobody hangs.
//!   - [`channels::channel_choices_on_both_sides_complete_one_case`]: two choices
//!     facing each other over two channels complete exactly one
//!     rendezvous, and both sides agree which.
//!   - [`channels::blocked_vproc_joins_a_collection_then_completes`]: a vproc waiting
//!     for a rendezvous is woken by a global collection, takes part in both
//!     phases, and then sees the rendezvous complete.
//!   - [`channels::blocked_thread_is_resumed_on_its_home_vproc`]: a thread that
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
//! is correct under both models, and [`handshake::set_limit_never_misses_a_request`]
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
//! [`tasks::signal_is_never_missed_by_set_limit`] (the owner misses the request
//! and keeps its limit); `serve_requests` emptying the mailbox before
//! clearing the signal (a deadlock: a thief's request is lost) and
//! `Handoff::env_ready` publishing `READY` before the environment (a thief
//! finds no environment) fail [`tasks::promotion_requests_of_two_thieves_are_served`];
//! `notify_work` that wakes sleepers only when there are two, `wait_idle`
//! sleeping without asking for work (both deadlocks: the idle vproc sleeps
//! through its thread's wake-up), `channel::sync` marking offers done
//! before moving the value (the waiting job receives nothing) and a
//! blocking offer that is never queued (a deadlock) fail
//! [`channels::blocked_thread_is_resumed_on_its_home_vproc`]. Moving the value while
//! the channel locks are still held, which changes no outcome, passes.

mod blocking;
mod channels;
mod handshake;
mod heap;
mod pe_inbox;
mod pe_offer;
mod pe_weight;
mod safepoint;
mod scan_queue;
mod shared_heap;
mod tasks;
mod termination;
mod waking;

use crate::gc::handshake::{Coordinator, Wake};
use loom::sync::atomic::{AtomicUsize, Ordering};

// ---------------------------------------------------------------------------
// Shared helpers
// ---------------------------------------------------------------------------

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

// Shared by the two-phase collection models of `handshake` (§3.4 phases)
// and `channels` (a waiting vproc joins a collection).

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
