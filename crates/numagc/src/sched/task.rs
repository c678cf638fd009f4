//! A forked task and the hand-off protocol that decides who runs it and how
//! its data crosses between vprocs (§2.3, lazy promotion after [Rai10]).
//!
//! A task is pushed on its owner's deque with its *environment*: the values
//! it needs, kept in root-stack slots of the owner that forked it. Whoever
//! takes the task out of the deque runs it — the deque hands each task to
//! exactly one vproc.
//!
//! * The owner pops it back: it runs the task on its own stack and local
//!   heap; nothing is promoted.
//! * A thief steals it: the environment is in the owner's local heap, which
//!   only the owner may touch. The thief moves the task from `QUEUED` to
//!   `WANTED` and posts it in the owner's [`Mailbox`]; the owner, at its next
//!   safepoint (an allocation slow path, a poll, or while it waits), promotes
//!   the environment, parks the promoted words in global roots (which
//!   global collections update) and marks the task `READY`. The thief runs
//!   it, promotes the result into a global root and marks it `DONE`; the
//!   owner, waiting to join, reads the result.
//! * With eager promotion the owner promotes the environment at the fork
//!   and the task starts `READY`.
//! * If the owner cannot promote the environment (the system refuses the
//!   memory), it records the error instead and marks the task `READY`; the
//!   thief finishes the task with that error without running it, so the
//!   join reports it and no one waits for ever.
//!
//! States only move forward: QUEUED → WANTED → READY → DONE (or QUEUED →
//! READY when eager, or READY from the start for a task without an
//! environment; the owner running a task itself never changes its state).
//! Each store that a waiting vproc depends on is followed by a ring of its
//! doorbell.

use crate::error::Error;
use crate::gc::handshake::Coordinator;
use crate::sync::{lock, AtomicBool, AtomicUsize, Mutex, Ordering};

pub(crate) const QUEUED: usize = 0;
pub(crate) const WANTED: usize = 1;
pub(crate) const READY: usize = 2;
pub(crate) const DONE: usize = 3;

/// The state of one forked task and what its two sides exchange.
pub(crate) struct Handoff {
    state: AtomicUsize,
    pub owner: usize,
    /// The vproc running the stolen task (for its doorbell).
    thief: AtomicUsize,
    /// Global-root slots holding the promoted environment (READY).
    env_roots: Mutex<Vec<usize>>,
    /// Why the environment could not be promoted (READY without one).
    env_error: Mutex<Option<Error>>,
    /// The global-root slot of the promoted result, or the error (DONE).
    result: Mutex<Option<Result<usize, Error>>>,
}

impl Handoff {
    /// A task of `owner`; `needs_env`: whether it has an environment to
    /// hand over (a task without one starts `READY`: a thief need not ask).
    pub fn new(owner: usize, needs_env: bool) -> Handoff {
        Handoff {
            state: AtomicUsize::new(if needs_env { QUEUED } else { READY }),
            owner,
            thief: AtomicUsize::new(usize::MAX),
            env_roots: Mutex::new(Vec::new()),
            env_error: Mutex::new(None),
            result: Mutex::new(None),
        }
    }

    pub fn state(&self) -> usize {
        self.state.load(Ordering::Acquire)
    }

    /// Thief: records itself and asks for the environment. `true` when the
    /// owner must be asked (the task is still `QUEUED`); `false` when the
    /// environment is ready already (eager promotion).
    pub fn want(&self, thief: usize) -> bool {
        self.thief.store(thief, Ordering::Relaxed);
        self.state
            .compare_exchange(QUEUED, WANTED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    pub fn thief(&self) -> usize {
        self.thief.load(Ordering::Relaxed)
    }

    /// Owner (or the forking vproc, when eager): the environment is in
    /// global roots `slots`.
    pub fn env_ready(&self, slots: Vec<usize>) {
        *lock(&self.env_roots) = slots;
        self.state.store(READY, Ordering::Release);
    }

    /// Owner: the environment cannot be promoted (the system refuses the
    /// memory). The thief, once `READY`, finishes the task with `e`
    /// instead of running it.
    pub fn env_failed(&self, e: Error) {
        *lock(&self.env_error) = Some(e);
        self.state.store(READY, Ordering::Release);
    }

    /// Thief, once `READY`: the error that replaced the environment.
    pub fn take_env_error(&self) -> Option<Error> {
        lock(&self.env_error).take()
    }

    /// Takes the global-root slots of the environment (once `READY`).
    pub fn take_env(&self) -> Vec<usize> {
        std::mem::take(&mut *lock(&self.env_roots))
    }

    /// Thief: the result (a global-root slot) or the task's error.
    pub fn finish(&self, r: Result<usize, Error>) {
        *lock(&self.result) = Some(r);
        self.state.store(DONE, Ordering::Release);
    }

    pub fn take_result(&self) -> Option<Result<usize, Error>> {
        lock(&self.result).take()
    }
}

/// Requests addressed to one vproc (tasks whose environment a thief wants).
/// `flag` lets the vproc's safepoints test for mail with one load.
pub(crate) struct Mailbox<T> {
    flag: AtomicBool,
    items: Mutex<Vec<T>>,
}

impl<T> Mailbox<T> {
    pub fn new() -> Self {
        Mailbox {
            flag: AtomicBool::new(false),
            items: Mutex::new(Vec::new()),
        }
    }

    /// Posts `t`; the caller then signals the recipient.
    pub fn post(&self, t: T) {
        lock(&self.items).push(t);
        self.flag.store(true, Ordering::SeqCst);
    }

    /// Everything posted so far. The flag is cleared before the list is
    /// taken, so a post that races with this is either taken now or leaves
    /// the flag set for the next call.
    pub fn take(&self) -> Vec<T> {
        self.flag.store(false, Ordering::SeqCst);
        std::mem::take(&mut *lock(&self.items))
    }
}

/// The owner's side of promotion requests, a safepoint duty of vproc `v`
/// (`sched::serve_mail`): when a request waits for `v` (its signal, see
/// `Coordinator::signal`), takes every task posted in `mailbox`, has
/// `promote` publish each one's environment (global-root slots) or say why
/// it cannot, marks it `READY` and rings its thief. The signal is cleared before the mailbox
/// is emptied, so a request posted meanwhile is either taken now or
/// leaves the signal set for the next safepoint
/// (`loom_models::tasks::promotion_requests_of_two_thieves_are_served`).
pub(crate) fn serve_requests<J, T>(
    coord: &Coordinator<J>,
    mailbox: &Mailbox<T>,
    v: usize,
    handoff: impl Fn(&T) -> &Handoff,
    mut promote: impl FnMut(&T) -> Result<Vec<usize>, Error>,
) {
    if !coord.take_signal(v) {
        return;
    }
    for t in mailbox.take() {
        let r = promote(&t);
        let h = handoff(&t);
        match r {
            Ok(slots) => h.env_ready(slots),
            // The environment cannot be promoted (the system refuses the
            // memory): the thief does not run the task and hands the error
            // to the join.
            Err(e) => h.env_failed(e),
        }
        coord.bell(h.thief()).ring();
    }
}
