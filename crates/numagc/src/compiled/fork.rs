//! `Mutator::par2`: fork-join for compiled code on the scheduler's own
//! protocol (`crate::sched`: the deque, lazy promotion, the hand-off),
//! without the safe API's scopes and handles on the path that runs both
//! sides here.
//!
//! The steps are those of `Scope::par2` (`mutator/parallel.rs`), whose
//! invariants hold here too:
//!
//! 1. The stack check; the environment's words go into root slots
//!    `base .. base + n` of this vproc (lazy promotion reads them there if
//!    the task is stolen), *before* the safepoint, which may collect.
//! 2. A safepoint (a thief waiting for an environment is served); the
//!    right side becomes a [`FrameTask`] in this frame, pushed on the
//!    deque. No allocation for up to 8 environment words.
//! 3. The left side runs here on a mutator of its own (frames it leaves
//!    are popped), under `catch_unwind`; its result is rooted in slot
//!    `base + n` while the right side runs, since that may collect.
//! 4. The join: the task popped back is run here (its environment re-read
//!    from the slots, which collections update); a stolen one is waited
//!    for, serving collections and requests, and its result taken from
//!    its global root. Until then nothing unwinds out of this frame
//!    (`Unjoined`): a thief may hold the task.
//! 5. The root slots are popped; both results are returned as words, valid
//!    until the caller's next call that may collect (the contract).

use super::Mutator;
use crate::error::Result;
use crate::mutator::parallel::{check_stack, park_eagerly, pop_back_body, Unjoined};
use crate::mutator::{Handle, Scope};
use crate::sched::{self, FrameTask, TaskBody};
use crate::vproc::Vproc;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// Up to this many environment words are copied on the stack.
const INLINE_ENV: usize = 8;

/// `Mutator::poll` on the vproc itself.
#[inline(always)]
fn poll(v: &mut Vproc) {
    if v.rec().limit() == 0 {
        super::slow::poll(v);
    }
}

/// The environment's words, copied (on the stack for up to
/// [`INLINE_ENV`]).
enum EnvWords {
    Inline([u64; INLINE_ENV], usize),
    Heap(Vec<u64>),
}

impl EnvWords {
    /// Words `word(0) .. word(n - 1)`.
    #[inline(always)]
    fn collect(n: usize, word: impl Fn(usize) -> u64) -> EnvWords {
        if n <= INLINE_ENV {
            let mut words = [0u64; INLINE_ENV];
            for (k, w) in words.iter_mut().take(n).enumerate() {
                *w = word(k);
            }
            EnvWords::Inline(words, n)
        } else {
            EnvWords::Heap((0..n).map(word).collect())
        }
    }

    #[inline(always)]
    fn as_slice(&self) -> &[u64] {
        match self {
            EnvWords::Inline(w, n) => &w[..*n],
            EnvWords::Heap(w) => w,
        }
    }
}

/// A side of a fork on the compiled interface, called with a mutator
/// and the environment's words (both sides run on the same vproc unless a
/// thief takes the right one).
struct CompiledBody<R>(R);

impl<R> TaskBody for CompiledBody<R>
where
    R: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64> + Send,
{
    /// As a thief runs it: the environment's words from its handles, a
    /// mutator on the thief's vproc, the result rooted in the scope.
    fn run<'i>(self, s: &mut Scope<'i>, env: &[Handle<'i>]) -> Result<Handle<'i>> {
        let words = EnvWords::collect(env.len(), |k| s.word(env[k]));
        let w = {
            // SAFETY: the compiled side keeps the interface's contract (it
            // is the caller's code, under the same contract as its own
            // mutator).
            let mut m = unsafe { s.compiled() };
            (self.0)(&mut m, words.as_slice())?
        };
        Ok(s.push_root(w))
    }
}

/// A side run here on vproc `v`: the environment's words read from root
/// slots `base .. base + n` (collections since the fork updated them).
#[inline(always)]
fn run_here<F>(v: &mut Vproc, base: usize, n: usize, f: F) -> Result<u64>
where
    F: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64>,
{
    let words = EnvWords::collect(n, |k| v.roots.ops().get(base + k));
    f(&mut Mutator::on(v), words.as_slice())
}

pub(super) fn par2<L, R>(m: &mut Mutator<'_>, env: &[u64], left: L, right: R) -> Result<(u64, u64)>
where
    L: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64>,
    R: for<'m> FnOnce(&mut Mutator<'m>, &[u64]) -> Result<u64> + Send,
{
    let v = m.vp();
    check_stack(v)?;
    // The environment is rooted before the safepoint: its words are only
    // valid until the next call that may collect, and the poll may.
    let base = v.roots.len();
    let n = env.len();
    for &w in env {
        v.roots.ops().push(w);
    }
    poll(v);
    let parked = match park_eagerly(v, base, n) {
        Ok(p) => p,
        Err(e) => {
            v.roots.truncate(base);
            return Err(e);
        }
    };
    let task = FrameTask::new(v.id, base, n, parked, CompiledBody(right));
    let tref = task.task_ref();
    sched::push(v, tref);
    let unjoined = Unjoined;
    let vp: *mut Vproc = v;
    let ra = catch_unwind(AssertUnwindSafe(|| {
        // SAFETY: `vp` is `m`'s vproc, borrowed mutably through `m` for
        // this whole function; `v` above is not used while this lives,
        // and the left side's mutator is dropped inside it.
        let v = unsafe { &mut *vp };
        // The left result is a root while the right side runs.
        let r = run_here(v, base, n, left).map(|w| v.roots.ops().push(w));
        poll(v);
        r
    }));
    // SAFETY: as above; the left side's mutator is gone.
    let v = unsafe { &mut *vp };
    let rb = match pop_back_body(v, &task, unjoined) {
        Ok(CompiledBody(right)) => run_here(v, base, n, right),
        Err(unjoined) => Scope::root(v).join_stolen(&tref, unjoined),
    };
    let ra = match ra {
        Ok(r) => r,
        Err(p) => {
            v.roots.truncate(base);
            resume_unwind(p)
        }
    };
    // The left result, where collections during the right side left it.
    let ra = ra.map(|()| v.roots.ops().get(base + n));
    v.roots.truncate(base);
    Ok((ra?, rb?))
}
