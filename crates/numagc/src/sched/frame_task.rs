//! A forked task kept in the frame of the fork that made it: no allocation
//! per fork (issue 18, item 4).
//!
//! A fork used to allocate an `Arc<Task>` and a `Box` for the right-hand
//! closure (and free both at the join): 2 of the 4 `malloc`/`free` pairs
//! that made 43 % of a fork's instructions (`docs/results/par2-cost.md`).
//! Here the task and its closure live in a [`FrameTask`] on the stack of
//! the vproc that forks, as rayon's `StackJob` does, and the deque, the
//! mailboxes and the thief hold a [`TaskRef`]: the task's address.
//!
//! Invariant that makes a `TaskRef` sound: **the forking frame outlives
//! every use of the task by another vproc.** The fork (`Scope::par2`)
//! does not return, by any path (a result, an error, a panic of either
//! side), before it has joined the task: either it popped the task back
//! off its own deque (no one else has it), or it waited until the thief
//! marked the task `DONE` (`task::Handoff::finish`), the thief's last
//! access. The thief reads what it needs after that (the owner's id)
//! before finishing. A promotion request in the owner's mailbox is served
//! by the owner itself, inside the fork, so it too is used before the
//! frame goes.
//!
//! The closure is taken once: by whoever the deque handed the task to (the
//! owner's `pop` or one thief's `steal`; crossbeam's deque hands out each
//! item once), which is what makes the unsynchronised cell sound.

use super::task::Handoff;
use crate::error::Result;
use crate::mutator::{Handle, Scope};
use std::cell::UnsafeCell;
use std::ptr::NonNull;

/// What the deque, the mailboxes and the thief see of a forked task.
pub(crate) struct Task {
    pub handoff: Handoff,
    /// The environment: root-stack slots `env_base ..` of the owner.
    pub env_base: usize,
    pub env_len: usize,
    /// Runs the closure of the [`FrameTask`] this task heads (`Some`), or
    /// drops it unrun (`None`: its environment could not be promoted).
    run: RunFn,
}

/// The type-erased runner of a [`FrameTask`]'s closure: runs it in the
/// scope with the environment given, or drops it (`None`).
type RunFn = for<'a, 'i> unsafe fn(
    *const Task,
    Option<(&'a mut Scope<'i>, &'a [Handle<'i>])>,
) -> Option<Result<Handle<'i>>>;

/// A task and its closure, in the forking frame. `repr(C)`: the task is at
/// offset 0, so a `*const Task` is the `FrameTask`'s address.
#[repr(C)]
pub(crate) struct FrameTask<B> {
    task: Task,
    func: UnsafeCell<Option<B>>,
}

impl<B> FrameTask<B>
where
    B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send,
{
    pub fn new(handoff: Handoff, env_base: usize, env_len: usize, func: B) -> FrameTask<B> {
        FrameTask {
            task: Task {
                handoff,
                env_base,
                env_len,
                run: run_erased::<B>,
            },
            func: UnsafeCell::new(Some(func)),
        }
    }

    pub fn task(&self) -> &Task {
        &self.task
    }

    /// The reference the deque carries. The caller keeps the module's
    /// invariant: `self` stays where it is until the task is joined.
    pub fn task_ref(&self) -> TaskRef {
        TaskRef(NonNull::from(&self.task))
    }
}

/// # Safety
/// `t` heads a live `FrameTask<B>`, and the caller is the one vproc the
/// deque handed the task to (so no one else touches `func`).
unsafe fn run_erased<'i, B>(
    t: *const Task,
    with: Option<(&mut Scope<'i>, &[Handle<'i>])>,
) -> Option<Result<Handle<'i>>>
where
    B: for<'k> FnOnce(&mut Scope<'k>, &[Handle<'k>]) -> Result<Handle<'k>> + Send,
{
    // SAFETY: `repr(C)` puts the task at offset 0 of its `FrameTask<B>`,
    // which is live (the caller's contract).
    let ft = unsafe { &*(t as *const FrameTask<B>) };
    // SAFETY: only the vproc that was handed the task gets here, once per
    // task (the caller's contract), so this is the cell's only access.
    let f = unsafe { (*ft.func.get()).take() }.expect("a task runs once");
    with.map(|(s, env)| f(s, env))
}

impl Task {
    /// Runs the task's closure in `s` with `env`.
    ///
    /// # Safety
    /// The caller was handed the task by the deque (it runs it once).
    pub unsafe fn run<'i>(&self, s: &mut Scope<'i>, env: &[Handle<'i>]) -> Result<Handle<'i>> {
        // SAFETY: `self` heads its `FrameTask` (only `FrameTask::new` makes
        // tasks), live while anyone holds it; the rest is the caller's.
        unsafe { (self.run)(self, Some((s, env))) }.expect("a run returns a result")
    }

    /// Drops the task's closure without running it.
    ///
    /// # Safety
    /// As for [`Task::run`].
    pub unsafe fn discard(&self) {
        // SAFETY: as in `run`.
        unsafe { (self.run)(self, None) };
    }
}

/// A forked task's address, as the deque and the mailboxes carry it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) struct TaskRef(NonNull<Task>);

// SAFETY: a `TaskRef` is sent to thieves and mailboxes on other threads;
// what it points to is `Sync` (`Handoff`'s atomics and mutexes, plain
// integers, and the closure cell, which only the one vproc the deque
// hands the task to touches, and whose closure is `Send`).
unsafe impl Send for TaskRef {}
// SAFETY: as for `Send`.
unsafe impl Sync for TaskRef {}

impl std::ops::Deref for TaskRef {
    type Target = Task;

    fn deref(&self) -> &Task {
        // SAFETY: the module's invariant: the forking frame outlives every
        // holder of the reference.
        unsafe { self.0.as_ref() }
    }
}
