//! The global-collection handshake of §3.4, and the idle/job wait of vprocs.
//!
//! 1. A vproc that finds the global heap over its trigger calls [`request`].
//!    The first caller wins a compare-and-swap on `pending` and is the
//!    *leader*; later callers just join. The swap is made under the state
//!    lock, where every other change of `pending` is made too, so the leader
//!    and the start of the deadline are recorded before anyone can enter.
//! 2. The leader "signals all of the other vprocs to enter garbage collection
//!    code by setting their allocation limit pointer to zero": each vproc's
//!    next allocation fails its limit check and enters the slow path, which
//!    sees `pending`. Idle vprocs are woken through the condition variable.
//! 3. Collection proceeds in [`phase`]s: every vproc arrives, the leader runs
//!    the serial part once all have arrived, then everyone continues.
//!
//! The race between a vproc installing a fresh limit after a local
//! collection and the leader zeroing it is closed by sequentially-consistent
//! ordering: the leader stores `pending` before zeroing limits, and a vproc
//! stores its limit before loading `pending` ([`set_limit`]). Whatever the
//! interleaving, a vproc either reads `pending == true` or its limit store
//! comes first and is overwritten with zero. A SeqCst fence on each side
//! makes this hold under any model; `src/loom_models/handshake.rs` checks it.
//!
//! ## Entering, gathering, and abandoning a collection (safepoint deadline)
//!
//! A vproc that sees the collection pending first [`enter`]s it, then does
//! its local part (minor and major collection, handing in its chunks), then
//! waits in [`gather`] until all vprocs have arrived; the leader runs the
//! first serial step there. Nothing has been moved before `gather` returns
//! `Ok`, so until then the collection can still be called off:
//!
//! * **Deadline** (setting `safepoint-timeout`): a vproc waiting in `gather`
//!   while some vproc has not even *entered* within the deadline (counted
//!   from the request) *closes* the collection: no one may enter any more.
//!   It waits for the vprocs that did enter (they are doing local work and
//!   will arrive), runs the `undo` step (their chunks go back where they
//!   were), and ends the collection: `pending` is cleared, and every vproc
//!   that took part gets [`Abandoned::Late`] naming the first vproc that
//!   did not answer. A vproc that has entered is always waited for.
//! * **No to-space**: the leader's serial step may refuse (the memory its
//!   copies could need cannot be obtained); the collection ends the same
//!   way with the serial step's reason.
//! * **The late vproc**: when it finally reaches a safepoint, `enter` finds
//!   either nothing pending (the collection was abandoned, or a new one it
//!   joins normally) or the collection closed, in which case it waits for
//!   the abandonment to finish and is told so. It never joins a collection
//!   that no longer exists, and no one waits for it once the collection is
//!   closed. Exactly one outcome holds: either all vprocs took part, or the
//!   collection was abandoned and the late one took no part
//!   (`loom_models::safepoint`).
//!
//! Results are delivered per vproc (`results[v]`), so a vproc that wakes
//! late from an abandoned collection still reads its own outcome even if a
//! later collection has been requested and abandoned meanwhile. Under loom
//! the deadline is a flag that a model's timer thread sets
//! ([`Coordinator::expire`]), which loom then explores at every point of
//! the interleaving.
//!
//! Vproc-directed requests (a thief asking for a task's environment, see
//! `sched::task`) use the same signal: [`signal`] sets the vproc's flag,
//! then zeroes its limit, and [`set_limit`] reports the flag as well.
//!
//! Idle vprocs sleep in [`wait_idle`]. A vproc about to sleep counts itself
//! in `sleepers` and then looks for stealable work; a vproc that pushes work
//! calls [`notify_work`], which looks at `sleepers` after its push. With a
//! SeqCst fence on each side one of them sees the other, and the notify
//! happens under the state lock, so it cannot slip in between the sleeper's
//! check and its wait. A fork calls it only when its push found the deque
//! empty (`sched::push_waking` says why that is enough).
//!
//! [`request`]: Coordinator::request
//! [`enter`]: Coordinator::enter
//! [`gather`]: Coordinator::gather
//! [`signal`]: Coordinator::signal
//! [`wait_idle`]: Coordinator::wait_idle
//! [`notify_work`]: Coordinator::notify_work
//! [`phase`]: Coordinator::phase
//! [`set_limit`]: Coordinator::set_limit

use crate::compiled::record::{MutatorRecord, RecordSlot};
use crate::gc::blocking::BlockingStates;
use crate::sched::doorbell::Doorbell;
use crate::sync::{
    fence, lock, wait, AtomicBool, AtomicUsize, Condvar, Mutex, MutexGuard, Ordering,
};
use std::collections::VecDeque;
use std::time::Duration;

/// What an idle vproc should do next.
pub(crate) enum Wake<J> {
    Job(J),
    Collect,
    /// Another vproc's deque has work: try to steal.
    Steal,
    Shutdown,
}

/// Why a global collection was called off before anything was moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Abandoned {
    /// Vproc `vproc` did not reach a safepoint within `waited_ms`.
    Late { vproc: usize, waited_ms: u64 },
    /// The to-space the copies could need could not be obtained: the
    /// system refused `bytes` with `errno`.
    NoToSpace { bytes: usize, errno: i32 },
}

impl Abandoned {
    /// The error for the mutator whose request needed the collection.
    pub fn error(self) -> crate::Error {
        match self {
            Abandoned::Late { vproc, waited_ms } => {
                crate::Error::from(crate::ErrorKind::SafepointTimeout { vproc, waited_ms })
            }
            Abandoned::NoToSpace { bytes, errno } => {
                crate::Error::from(crate::ErrorKind::MapFailed {
                    bytes,
                    what: "the to-space of a global collection",
                    errno,
                })
            }
        }
    }
}

/// What [`Coordinator::enter`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry {
    /// The caller takes part in the pending collection.
    Entered,
    /// No collection is pending (any more).
    NotPending,
    /// The pending collection was being abandoned; it is over now.
    Abandoned(Abandoned),
}

struct State<J> {
    jobs: Vec<VecDeque<J>>,
    shutdown: bool,
    leader: Option<usize>,
    arrived: usize,
    generation: u64,
    collections: u64,
    /// Per vproc: it entered the pending collection.
    entered: Vec<bool>,
    n_entered: usize,
    /// The pending collection is being abandoned: no one may enter.
    closed: bool,
    /// The vproc that closed it (it runs `undo` and ends it), and why.
    abandoner: Option<usize>,
    abandon_reason: Option<Abandoned>,
    /// Per vproc: the outcome of its `gather`, once decided.
    results: Vec<Option<Result<(), Abandoned>>>,
    /// When the pending collection was requested (start of the deadline).
    #[cfg(not(loom))]
    requested_at: Option<std::time::Instant>,
    abandoned: u64,
}

pub(crate) struct Coordinator<J> {
    pending: AtomicBool,
    /// Per vproc: its mutator record, whose allocation limit the leader
    /// zeroes (`crate::compiled::record`).
    records: Box<[crossbeam_utils::CachePadded<RecordSlot>]>,
    /// Per vproc: a request addressed to it is waiting (see [`Coordinator::signal`]).
    signals: Box<[crossbeam_utils::CachePadded<AtomicBool>]>,
    /// Per vproc: wakes it where it waits inside a computation.
    bells: Box<[Doorbell]>,
    /// Per vproc: a job waits for it or the runtime shuts down, so its idle
    /// loop must come to `wait_idle` rather than run more stolen work.
    interrupts: Box<[AtomicBool]>,
    /// Idle vprocs asleep (or about to sleep) in `wait_idle`.
    sleepers: AtomicUsize,
    /// Vprocs waiting on their doorbell inside a computation (a join), who
    /// want to hear of new work too.
    waiters: AtomicUsize,
    state: Mutex<State<J>>,
    cv: Condvar,
    n: usize,
    /// How long vprocs that stopped wait for the others to enter a
    /// collection (`None`: for ever).
    timeout: Option<Duration>,
    /// Under loom: the deadline has passed (set by a model's timer thread).
    #[cfg(loom)]
    expired: AtomicBool,
    /// Per vproc: in a blocking section or not, and its proxy's bell
    /// (`gc::blocking`).
    blocking: BlockingStates,
}

impl<J> Coordinator<J> {
    /// A coordinator of `n` vprocs whose collections wait for ever (the
    /// loom models of the other protocols).
    #[cfg(all(loom, test))]
    pub fn new(n: usize) -> Self {
        Self::with_safepoint_timeout(n, None)
    }

    /// A coordinator of `n` vprocs whose collections are abandoned when a
    /// vproc has not entered within `timeout` of the request.
    pub fn with_safepoint_timeout(n: usize, timeout: Option<Duration>) -> Self {
        Coordinator {
            pending: AtomicBool::new(false),
            records: (0..n)
                .map(|_| crossbeam_utils::CachePadded::new(RecordSlot::new()))
                .collect(),
            signals: (0..n)
                .map(|_| crossbeam_utils::CachePadded::new(AtomicBool::new(false)))
                .collect(),
            bells: (0..n).map(|_| Doorbell::new()).collect(),
            interrupts: (0..n).map(|_| AtomicBool::new(false)).collect(),
            sleepers: AtomicUsize::new(0),
            waiters: AtomicUsize::new(0),
            state: Mutex::new(State {
                jobs: (0..n).map(|_| VecDeque::new()).collect(),
                shutdown: false,
                leader: None,
                arrived: 0,
                generation: 0,
                collections: 0,
                entered: vec![false; n],
                n_entered: 0,
                closed: false,
                abandoner: None,
                abandon_reason: None,
                results: vec![None; n],
                #[cfg(not(loom))]
                requested_at: None,
                abandoned: 0,
            }),
            cv: Condvar::new(),
            n,
            timeout,
            #[cfg(loom)]
            expired: AtomicBool::new(false),
            blocking: BlockingStates::new(n),
        }
    }

    pub fn vprocs(&self) -> usize {
        self.n
    }

    fn limits_of(&self, v: usize) -> &AtomicUsize {
        &self.records[v].record().alloc_limit
    }

    /// The allocation-limit cell of vproc `v`, read by its allocation fast
    /// path (the loom models read it directly).
    #[cfg(all(loom, test))]
    pub fn limit_cell(&self, v: usize) -> &AtomicUsize {
        &self.records[v].record().alloc_limit
    }

    /// Vproc `v`'s mutator record (`crate::compiled::record`).
    pub fn record(&self, v: usize) -> &MutatorRecord {
        self.records[v].record()
    }

    /// Installs vproc `v`'s allocation limit. Returns `true` when a global
    /// collection is pending or a request for `v` is waiting: the caller
    /// must attend to it instead of allocating.
    pub fn set_limit(&self, v: usize, limit: usize) -> bool {
        self.limits_of(v).store(limit, Ordering::SeqCst);
        // The fences make the store/load pair a Dekker handshake with
        // `request` and `signal` under any memory model, loom's included.
        fence(Ordering::SeqCst);
        self.pending.load(Ordering::SeqCst) || self.signals[v].load(Ordering::SeqCst)
    }

    /// Tells vproc `v` that a request waits for it: it sees the flag at its
    /// next safepoint (its allocation limit is zeroed to get there soon),
    /// and its doorbell rings in case it is waiting.
    pub fn signal(&self, v: usize) {
        self.signals[v].store(true, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.limits_of(v).store(0, Ordering::SeqCst);
        self.bells[v].ring();
        // A vproc in a blocking section is served by its proxy.
        self.blocking.ring_if_blocked(v);
    }

    /// The blocking states of the vprocs (`gc::blocking`).
    pub(crate) fn blocking(&self) -> &BlockingStates {
        &self.blocking
    }

    /// Whether a request waits for `v`; clears the flag (the caller then
    /// takes everything that was posted).
    #[inline]
    pub fn take_signal(&self, v: usize) -> bool {
        self.signals[v].load(Ordering::SeqCst) && self.signals[v].swap(false, Ordering::SeqCst)
    }

    /// Whether a request waits for `v`, without clearing it.
    pub fn signalled(&self, v: usize) -> bool {
        self.signals[v].load(Ordering::SeqCst)
    }

    /// How many vprocs sleep in their idle loop (no job, nothing to steal).
    pub fn sleepers(&self) -> usize {
        self.sleepers.load(Ordering::SeqCst)
    }

    /// Vproc `v`'s doorbell.
    pub fn bell(&self, v: usize) -> &Doorbell {
        &self.bells[v]
    }

    /// Work was pushed on a deque: wakes the idle vprocs if any sleep,
    /// and rings the vprocs waiting in a join.
    #[inline]
    pub fn notify_work(&self) {
        fence(Ordering::SeqCst);
        if self.sleepers.load(Ordering::SeqCst) > 0 {
            let _s = lock(&self.state);
            self.cv.notify_all();
        }
        if self.waiters.load(Ordering::SeqCst) > 0 {
            for b in self.bells.iter() {
                b.ring();
            }
        }
    }

    /// Vproc `v` waits on its doorbell until `ready()`, and is also woken by
    /// [`Coordinator::notify_work`] when `has_work()` (same Dekker pairing
    /// as `wait_idle`'s `sleepers`).
    pub fn wait_for_work_or(
        &self,
        v: usize,
        ready: impl Fn() -> bool,
        has_work: impl Fn() -> bool,
    ) {
        self.waiters.fetch_add(1, Ordering::SeqCst);
        fence(Ordering::SeqCst);
        self.bells[v].wait_unless(|| ready() || has_work());
        self.waiters.fetch_sub(1, Ordering::SeqCst);
    }

    #[inline]
    pub fn pending(&self) -> bool {
        self.pending.load(Ordering::SeqCst)
    }

    /// Requests a global collection on behalf of vproc `v`; `true` when this
    /// call made the request (and `v` leads the collection).
    pub fn request(&self, v: usize) -> bool {
        if self.pending.load(Ordering::SeqCst) {
            return false;
        }
        {
            // Under the state lock, so that no vproc can enter, and no one
            // abandon, this collection before its leader and the start of
            // its deadline are recorded (`pending` only changes under it).
            let mut s = lock(&self.state);
            // After shutdown a vproc may have exited already: no one could
            // take part (an idle vproc's concurrent work may still ask).
            if s.shutdown
                || self
                    .pending
                    .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
                    .is_err()
            {
                return false;
            }
            s.leader = Some(v);
            #[cfg(not(loom))]
            {
                s.requested_at = Some(std::time::Instant::now());
            }
        }
        fence(Ordering::SeqCst);
        for r in self.records.iter() {
            r.record().alloc_limit.store(0, Ordering::SeqCst);
        }
        self.cv.notify_all();
        for b in self.bells.iter() {
            b.ring();
        }
        // Vprocs in blocking sections take part through their proxies.
        self.blocking.ring_blocked();
        true
    }

    /// The leader of the pending collection.
    pub fn leader(&self) -> Option<usize> {
        lock(&self.state).leader
    }

    /// Blocks idle vproc `v` until a collection is pending, a job arrives
    /// for it, `has_work()` finds work to steal, or the runtime shuts down
    /// (in that order of priority).
    pub fn wait_idle(&self, v: usize, has_work: impl Fn() -> bool) -> Wake<J> {
        let mut s = lock(&self.state);
        loop {
            if self.pending.load(Ordering::SeqCst) {
                return Wake::Collect;
            }
            if let Some(j) = s.jobs[v].pop_front() {
                if s.jobs[v].is_empty() && !s.shutdown {
                    self.interrupts[v].store(false, Ordering::SeqCst);
                }
                return Wake::Job(j);
            }
            if s.shutdown {
                return Wake::Shutdown;
            }
            self.sleepers.fetch_add(1, Ordering::SeqCst);
            fence(Ordering::SeqCst);
            if has_work() {
                self.sleepers.fetch_sub(1, Ordering::SeqCst);
                return Wake::Steal;
            }
            s = wait(&self.cv, s);
            self.sleepers.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Queues a job for vproc `v`.
    pub fn submit(&self, v: usize, job: J) {
        lock(&self.state).jobs[v].push_back(job);
        self.interrupts[v].store(true, Ordering::SeqCst);
        self.cv.notify_all();
    }

    /// Asks every vproc to stop once its queue is empty.
    pub fn shutdown(&self) {
        lock(&self.state).shutdown = true;
        for i in self.interrupts.iter() {
            i.store(true, Ordering::SeqCst);
        }
        self.cv.notify_all();
    }

    /// Whether vproc `v` has a job waiting or must shut down: its idle loop
    /// goes to [`Coordinator::wait_idle`] before running more stolen work.
    pub fn interrupted(&self, v: usize) -> bool {
        self.interrupts[v].load(Ordering::Relaxed)
    }

    /// One phase of a global collection: returns once every vproc has
    /// arrived and the leader has run `serial`.
    pub fn phase(&self, v: usize, serial: impl FnOnce()) {
        let mut s = lock(&self.state);
        let gen = s.generation;
        s.arrived += 1;
        if s.leader == Some(v) {
            while s.arrived < self.n {
                s = wait(&self.cv, s);
            }
            drop(s);
            serial();
            s = lock(&self.state);
            s.arrived = 0;
            s.generation += 1;
            drop(s);
            self.cv.notify_all();
        } else {
            if s.arrived == self.n {
                self.cv.notify_all();
            }
            while s.generation == gen {
                s = wait(&self.cv, s);
            }
        }
    }

    /// Ends the pending collection; the leader calls it from the last
    /// phase's serial part.
    pub fn finish(&self) {
        let mut s = lock(&self.state);
        s.leader = None;
        s.collections += 1;
        Self::clear_entries(&mut s);
        self.pending.store(false, Ordering::SeqCst);
    }

    /// Number of global collections completed.
    pub fn collections(&self) -> u64 {
        lock(&self.state).collections
    }

    /// Number of global collections abandoned before anything was moved.
    pub fn collections_abandoned(&self) -> u64 {
        lock(&self.state).abandoned
    }

    fn clear_entries(s: &mut State<J>) {
        s.entered.iter_mut().for_each(|e| *e = false);
        s.n_entered = 0;
        s.closed = false;
        s.abandoner = None;
        s.abandon_reason = None;
        #[cfg(not(loom))]
        {
            s.requested_at = None;
        }
    }

    /// Vproc `v` saw a collection pending at a safepoint: takes part in it
    /// ([`Entry::Entered`]), or learns that there is none to take part in.
    /// If the collection is being abandoned, waits until that is over
    /// (the vprocs that entered are finishing local work, no one waits for
    /// `v`) and reports why.
    pub fn enter(&self, v: usize) -> Entry {
        let mut s = lock(&self.state);
        if s.closed {
            let reason = s.abandon_reason.expect("a closed collection has a reason");
            let gen = s.generation;
            while s.generation == gen {
                s = wait(&self.cv, s);
            }
            return Entry::Abandoned(reason);
        }
        if !self.pending.load(Ordering::SeqCst) {
            return Entry::NotPending;
        }
        debug_assert!(!s.entered[v], "vproc {v} entered the collection twice");
        s.entered[v] = true;
        s.n_entered += 1;
        Entry::Entered
    }

    /// The first step of a collection that vproc `v` [entered](Self::enter):
    /// returns `Ok` once every vproc has arrived and the leader's `serial`
    /// step has succeeded, or `Err` when the collection was abandoned (the
    /// deadline passed before every vproc entered, or `serial` refused);
    /// then `undo` has run once, on one vproc, after every vproc that
    /// entered had arrived, and no collection is pending any more.
    pub fn gather(
        &self,
        v: usize,
        serial: impl FnOnce() -> Result<(), Abandoned>,
        undo: impl FnOnce(),
    ) -> Result<(), Abandoned> {
        // Each runs at most once; the loop below proves it to the compiler.
        let (mut serial, mut undo) = (Some(serial), Some(undo));
        let mut s = lock(&self.state);
        debug_assert!(s.entered[v], "vproc {v} gathers without entering");
        s.arrived += 1;
        self.cv.notify_all();
        loop {
            if let Some(r) = s.results[v].take() {
                return r;
            }
            if s.closed {
                if s.abandoner == Some(v) && s.arrived == s.n_entered {
                    drop(s);
                    (undo.take().expect("one vproc ends the collection, once"))();
                    s = lock(&self.state);
                    let reason = s.abandon_reason.expect("the abandoner recorded its reason");
                    self.end_gather(&mut s, Err(reason));
                } else {
                    s = wait(&self.cv, s);
                }
                continue;
            }
            if s.arrived == self.n {
                if s.leader == Some(v) {
                    drop(s);
                    let r = (serial.take().expect("the leader runs the serial step once"))();
                    if r.is_err() {
                        (undo.take().expect("one vproc ends the collection, once"))();
                    }
                    s = lock(&self.state);
                    self.end_gather(&mut s, r);
                } else {
                    s = wait(&self.cv, s);
                }
                continue;
            }
            if s.n_entered == self.n {
                // Everyone is on the way: no deadline any more.
                s = wait(&self.cv, s);
            } else if self.deadline_passed(&s) {
                let late = (0..self.n)
                    .find(|&u| !s.entered[u])
                    .expect("a vproc has not entered");
                s.closed = true;
                s.abandoner = Some(v);
                s.abandon_reason = Some(Abandoned::Late {
                    vproc: late,
                    waited_ms: self.waited_ms(&s),
                });
            } else {
                s = self.wait_for_deadline(s);
            }
        }
    }

    /// Hands every vproc that entered the outcome `r` of the gather; an
    /// abandoned collection ends here.
    fn end_gather(&self, s: &mut State<J>, r: Result<(), Abandoned>) {
        for u in 0..self.n {
            if s.entered[u] {
                s.results[u] = Some(r);
            }
        }
        s.arrived = 0;
        s.generation += 1;
        if r.is_err() {
            s.leader = None;
            s.abandoned += 1;
            Self::clear_entries(s);
            self.pending.store(false, Ordering::SeqCst);
        }
        self.cv.notify_all();
    }

    #[cfg(not(loom))]
    fn deadline_passed(&self, s: &State<J>) -> bool {
        match (self.timeout, s.requested_at) {
            (Some(t), Some(at)) => at.elapsed() >= t,
            _ => false,
        }
    }

    #[cfg(not(loom))]
    fn waited_ms(&self, s: &State<J>) -> u64 {
        s.requested_at
            .map_or(0, |at| at.elapsed().as_millis() as u64)
    }

    /// Waits for a notification, or until the deadline of the pending
    /// collection.
    #[cfg(not(loom))]
    fn wait_for_deadline<'a>(&self, s: MutexGuard<'a, State<J>>) -> MutexGuard<'a, State<J>> {
        match (self.timeout, s.requested_at) {
            (Some(t), Some(at)) => {
                let left = (at + t).saturating_duration_since(std::time::Instant::now());
                crate::sync::wait_timeout(&self.cv, s, left.max(Duration::from_millis(1)))
            }
            _ => wait(&self.cv, s),
        }
    }

    #[cfg(loom)]
    fn deadline_passed(&self, _s: &State<J>) -> bool {
        self.timeout.is_some() && self.expired.load(Ordering::SeqCst)
    }

    #[cfg(loom)]
    fn waited_ms(&self, _s: &State<J>) -> u64 {
        self.timeout.map_or(0, |t| t.as_millis() as u64)
    }

    #[cfg(loom)]
    fn wait_for_deadline<'a>(&self, s: MutexGuard<'a, State<J>>) -> MutexGuard<'a, State<J>> {
        wait(&self.cv, s)
    }

    /// Under loom, the timer: the deadline of every collection has passed
    /// from now on, and the vprocs waiting for it are woken.
    #[cfg(all(loom, test))]
    pub fn expire(&self) {
        self.expired.store(true, Ordering::SeqCst);
        let _s = lock(&self.state);
        self.cv.notify_all();
    }
}
