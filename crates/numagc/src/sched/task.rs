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
use crate::sync::{lock, AtomicBool, AtomicUsize, Mutex, OrderedCell, Ordering};

pub(crate) const QUEUED: usize = 0;
pub(crate) const WANTED: usize = 1;
pub(crate) const READY: usize = 2;
pub(crate) const DONE: usize = 3;

/// A forked task's environment, as its fork hands it to [`Handoff::new`].
pub(crate) enum TaskEnv {
    /// None: a thief can run the task at once.
    None,
    /// In the owner's root slots, promoted when a thief asks (lazy
    /// promotion).
    Lazy,
    /// Promoted at the fork (eager promotion), in these global-root slots.
    Parked(Vec<usize>),
}

/// The state of one forked task and what its two sides exchange.
///
/// The exchanged values need no lock: each cell has one writer at a time,
/// and the state's release store that follows a write is what the reader
/// acquires before it reads (`loom_models::tasks`). A fork builds this in
/// its frame at every `par2`, so it is a few words, written once.
pub(crate) struct Handoff {
    state: AtomicUsize,
    pub owner: usize,
    /// The vproc running the stolen task (for its doorbell).
    thief: AtomicUsize,
    /// Owner to thief, published by `READY`: the global-root slots of the
    /// promoted environment, or why it could not be promoted. Taken by
    /// the vproc the deque handed the task to.
    env: OrderedCell<Option<Result<Vec<usize>, Error>>>,
    /// Thief to owner, published by `DONE`: the global-root slot of the
    /// promoted result, or the task's error.
    result: OrderedCell<Option<Result<usize, Error>>>,
}

impl Handoff {
    /// A task of `owner` with environment `env`. A task without one, or
    /// with one parked already, starts `READY`: a thief need not ask.
    #[inline(always)]
    pub fn new(owner: usize, env: TaskEnv) -> Handoff {
        let (state, parked) = match env {
            TaskEnv::Lazy => (QUEUED, None),
            TaskEnv::Parked(slots) => (READY, Some(Ok(slots))),
            TaskEnv::None => (READY, None),
        };
        Handoff {
            state: AtomicUsize::new(state),
            owner,
            thief: AtomicUsize::new(usize::MAX),
            env: OrderedCell::new(parked),
            result: OrderedCell::new(None),
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

    /// Owner, serving a thief's request (the task `WANTED`): the
    /// environment is in global roots `slots`, or (`Err`) cannot be
    /// promoted because the system refuses the memory; the thief then
    /// finishes the task with the error instead of running it.
    pub fn env_ready(&self, env: Result<Vec<usize>, Error>) {
        debug_assert_eq!(self.state.load(Ordering::Relaxed), WANTED);
        // SAFETY: while `WANTED`, the thief waits for `READY` before it
        // touches the cell, and the owner, which serves the request once,
        // is the only writer; the store below publishes the write.
        unsafe { self.env.replace(Some(env)) };
        self.state.store(READY, Ordering::Release);
    }

    /// Takes what `READY` published: the environment's global-root slots
    /// (none when the task has no environment), or the error that replaced
    /// them.
    ///
    /// # Safety
    /// The caller was handed the task by the deque (the owner popping it
    /// back, or its one thief) and has seen the state at `READY` or later
    /// (the owner that pushed the task saw `READY` when it built it).
    pub unsafe fn take_env(&self) -> Result<Vec<usize>, Error> {
        // SAFETY: the caller's contract: the writer's release store was
        // acquired, and no one else is handed the task.
        unsafe { self.env.replace(None) }.unwrap_or_else(|| Ok(Vec::new()))
    }

    /// Thief: the result (a global-root slot) or the task's error.
    pub fn finish(&self, r: Result<usize, Error>) {
        // SAFETY: the owner reads the cell only after it acquires `DONE`,
        // stored below; the thief writes it once.
        unsafe { self.result.replace(Some(r)) };
        self.state.store(DONE, Ordering::Release);
    }

    /// Owner, once it saw `DONE`: the thief's result.
    ///
    /// # Safety
    /// The caller saw the state at `DONE` (acquired).
    pub unsafe fn take_result(&self) -> Option<Result<usize, Error>> {
        // SAFETY: the caller's contract: `finish` wrote it before `DONE`.
        unsafe { self.result.replace(None) }
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
        // An environment that cannot be promoted (the system refuses the
        // memory) goes as the error: the thief does not run the task and
        // hands the error to the join.
        h.env_ready(r);
        coord.bell(h.thief()).ring();
    }
}
