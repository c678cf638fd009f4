//! The global-collection handshake of §3.4, and the idle/job wait of vprocs.
//!
//! 1. A vproc that finds the global heap over its trigger calls [`request`].
//!    The first caller wins a compare-and-swap on `pending` and is the
//!    *leader*; later callers just join.
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
//! makes this hold under any model; `src/loom_models.rs` checks it.
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
//! check and its wait.
//!
//! [`request`]: Coordinator::request
//! [`signal`]: Coordinator::signal
//! [`wait_idle`]: Coordinator::wait_idle
//! [`notify_work`]: Coordinator::notify_work
//! [`phase`]: Coordinator::phase
//! [`set_limit`]: Coordinator::set_limit

use crate::sched::doorbell::Doorbell;
use crate::sync::{fence, lock, wait, AtomicBool, AtomicUsize, Condvar, Mutex, Ordering};
use std::collections::VecDeque;

/// What an idle vproc should do next.
pub(crate) enum Wake<J> {
    Job(J),
    Collect,
    /// Another vproc's deque has work: try to steal.
    Steal,
    Shutdown,
}

struct State<J> {
    jobs: Vec<VecDeque<J>>,
    shutdown: bool,
    leader: Option<usize>,
    arrived: usize,
    generation: u64,
    collections: u64,
}

pub(crate) struct Coordinator<J> {
    pending: AtomicBool,
    limits: Box<[crossbeam_utils::CachePadded<AtomicUsize>]>,
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
}

impl<J> Coordinator<J> {
    pub fn new(n: usize) -> Self {
        Coordinator {
            pending: AtomicBool::new(false),
            limits: (0..n).map(|_| crossbeam_utils::CachePadded::new(AtomicUsize::new(0))).collect(),
            signals: (0..n).map(|_| crossbeam_utils::CachePadded::new(AtomicBool::new(false))).collect(),
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
            }),
            cv: Condvar::new(),
            n,
        }
    }

    pub fn vprocs(&self) -> usize {
        self.n
    }

    /// The allocation-limit cell of vproc `v`, read by its allocation fast path.
    pub fn limit_cell(&self, v: usize) -> &AtomicUsize {
        &self.limits[v]
    }

    /// Installs vproc `v`'s allocation limit. Returns `true` when a global
    /// collection is pending or a request for `v` is waiting: the caller
    /// must attend to it instead of allocating.
    pub fn set_limit(&self, v: usize, limit: usize) -> bool {
        self.limits[v].store(limit, Ordering::SeqCst);
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
        self.limits[v].store(0, Ordering::SeqCst);
        self.bells[v].ring();
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
    pub fn wait_for_work_or(&self, v: usize, ready: impl Fn() -> bool, has_work: impl Fn() -> bool) {
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
        if self.pending.compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst).is_err() {
            return false;
        }
        lock(&self.state).leader = Some(v);
        fence(Ordering::SeqCst);
        for l in self.limits.iter() {
            l.store(0, Ordering::SeqCst);
        }
        self.cv.notify_all();
        for b in self.bells.iter() {
            b.ring();
        }
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
        self.pending.store(false, Ordering::SeqCst);
    }

    /// Number of global collections completed.
    pub fn collections(&self) -> u64 {
        lock(&self.state).collections
    }
}
