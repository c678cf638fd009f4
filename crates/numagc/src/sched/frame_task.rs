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

use super::task::{Handoff, TaskEnv};
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
    /// Runs the body of the [`FrameTask`] this task heads (`Some`), or
    /// drops it unrun (`None`: its environment could not be promoted).
    run: RunFn,
}

/// The type-erased runner of a [`FrameTask`]'s body: runs it in the
/// scope with the environment given, or drops it (`None`).
type RunFn = for<'a, 'i> unsafe fn(
    *const Task,
    Option<(&'a mut Scope<'i>, &'a [Handle<'i>])>,
) -> Option<Result<Handle<'i>>>;

/// The right-hand side of a fork, as a thief runs it: in a scope of the
/// thief's, with the environment as handles of that scope. The safe API's
/// closures are bodies as they are ([`ScopeBody`]); the compiled
/// interface's convert the handles to words (`compiled::fork`). The owner
/// that pops its task back takes the body out ([`FrameTask::take_body`])
/// and calls it in its own form, without the conversion.
pub(crate) trait TaskBody: Send {
    fn run<'i>(self, s: &mut Scope<'i>, env: &[Handle<'i>]) -> Result<Handle<'i>>;
}

/// A safe API closure as a task body.
pub(crate) struct ScopeBody<B>(pub B);

impl<B> TaskBody for ScopeBody<B>
where
    B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send,
{
    #[inline]
    fn run<'i>(self, s: &mut Scope<'i>, env: &[Handle<'i>]) -> Result<Handle<'i>> {
        (self.0)(s, env)
    }
}

/// A task and its body, in the forking frame. `repr(C)`: the task is at
/// offset 0, so a `*const Task` is the `FrameTask`'s address.
#[repr(C)]
pub(crate) struct FrameTask<B> {
    task: Task,
    body: UnsafeCell<Option<B>>,
}

impl<B: TaskBody> FrameTask<B> {
    /// A task of vproc `owner` whose environment is in its root slots
    /// `env_base .. env_base + env_len`; `parked`: their global-root slots
    /// when promotion is eager (the environment promoted already).
    #[inline(always)]
    pub fn new(
        owner: usize,
        env_base: usize,
        env_len: usize,
        parked: Option<Vec<usize>>,
        body: B,
    ) -> FrameTask<B> {
        let env = match parked {
            Some(slots) => TaskEnv::Parked(slots),
            None if env_len > 0 => TaskEnv::Lazy,
            None => TaskEnv::None,
        };
        FrameTask {
            task: Task {
                handoff: Handoff::new(owner, env),
                env_base,
                env_len,
                run: run_erased::<B>,
            },
            body: UnsafeCell::new(Some(body)),
        }
    }

    /// The reference the deque carries. The caller keeps the module's
    /// invariant: `self` stays where it is until the task is joined.
    #[inline(always)]
    pub fn task_ref(&self) -> TaskRef {
        TaskRef(NonNull::from(&self.task))
    }

    /// The body, for the owner that popped the task back to run it itself.
    ///
    /// # Safety
    /// The deque handed the task back to its owner, the caller (no thief
    /// has it).
    #[inline(always)]
    pub unsafe fn take_body(&self) -> B {
        // SAFETY: the caller's contract: the cell's only access.
        unsafe { (*self.body.get()).take() }.expect("a task runs once")
    }
}

/// # Safety
/// `t` heads a live `FrameTask<B>`, and the caller is the one vproc the
/// deque handed the task to (so no one else touches `body`).
unsafe fn run_erased<'i, B: TaskBody>(
    t: *const Task,
    with: Option<(&mut Scope<'i>, &[Handle<'i>])>,
) -> Option<Result<Handle<'i>>> {
    // SAFETY: `repr(C)` puts the task at offset 0 of its `FrameTask<B>`,
    // which is live (the caller's contract).
    let ft = unsafe { &*(t as *const FrameTask<B>) };
    // SAFETY: only the vproc that was handed the task gets here, once per
    // task (the caller's contract), so this is the cell's only access.
    let f = unsafe { ft.take_body() };
    with.map(|(s, env)| f.run(s, env))
}

impl Task {
    /// Runs the task's body in `s` with `env`.
    ///
    /// # Safety
    /// The caller was handed the task by the deque (it runs it once).
    pub unsafe fn run<'i>(&self, s: &mut Scope<'i>, env: &[Handle<'i>]) -> Result<Handle<'i>> {
        // SAFETY: `self` heads its `FrameTask` (only `FrameTask::new` makes
        // tasks), live while anyone holds it; the rest is the caller's.
        unsafe { (self.run)(self, Some((s, env))) }.expect("a run returns a result")
    }

    /// Drops the task's body without running it.
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
// what it points to is `Sync` (`Handoff`'s atomics and the cells its
// state orders, plain integers, and the body cell, which only the one
// vproc the deque hands the task to touches, and whose body is `Send`).
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
