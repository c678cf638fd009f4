//! Fork-join for the mutator: [`Scope::par2`] and the parallel reduction
//! built on it. The scheduling, stealing and promotion protocol is in
//! `crate::sched`; this file is the API side.

use crate::compiled::record::Roots;
use crate::error::{Error, ErrorKind, Result};
use crate::mutator::scope::{Handle, Scope};
use crate::sched::task::DONE;
use crate::sched::{self, FrameTask, ScopeBody, TaskBody, TaskRef};
use crate::vproc::Vproc;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

impl<'s> Scope<'s> {
    /// Runs `a` and `b` in parallel and returns both results.
    ///
    /// `b` is pushed on this vproc's deque, where an idle vproc may steal it;
    /// `a` runs here at once. Each receives `env` as handles of its own
    /// scope: `b` cannot capture handles, because it may run on another
    /// thread; it may borrow from the caller's frame (as `rayon::join`'s
    /// closures may), since `par2` joins it before returning, on every
    /// path. Forking allocates nothing (the task lives in this frame,
    /// `sched::frame_task`) for environments of up to 8 values. If `b` is
    /// not stolen it runs here after `a` and nothing is promoted; if it is, its environment is promoted only then (lazy
    /// promotion, `--task-promotion`), and its result is promoted so that
    /// this vproc can read it. Nested calls are fine.
    ///
    /// Errors: the first of `a`'s and `b`'s errors; a panic in `b` on another
    /// vproc is [`ErrorKind::TaskPanicked`], a panic in `a` (or in `b` run here)
    /// propagates after `b` has been joined. [`ErrorKind::StackExhausted`] when
    /// forks nest so deep that the vproc's stack is nearly used up (see
    /// `crate::stack`); nothing is forked then.
    pub fn par2<A, B>(&mut self, env: &[Handle<'_>], a: A, b: B) -> Result<(Handle<'s>, Handle<'s>)>
    where
        A: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>>,
        B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send,
    {
        // Every fork is a safepoint: a thief waiting for this vproc to
        // promote an environment is served here even when the tasks compute
        // without allocating (a leaf of a matrix product, measured: the
        // thief slept through half of the run without this).
        self.poll();
        // The environment's slots live in a nested scope, whose end pops
        // them on every path out: results, errors, and a panic unwinding
        // from `a` or from `b` run here (a job that catches panics would
        // otherwise keep their environments alive).
        let (wa, wb) = self.scope(|s| s.fork_join(env, a, b))?;
        Ok((self.push_root(wa), self.push_root(wb)))
    }

    /// `par2` in its own scope: forks `b`, runs `a`, joins `b`, and
    /// returns both results' words (rooted by the caller before its next
    /// safepoint). The task lives in this frame (`sched::frame_task`): it
    /// is joined on every path out of this function, a panic of `a`
    /// included, before the frame goes.
    fn fork_join<A, B>(&mut self, env: &[Handle<'_>], a: A, b: B) -> Result<(u64, u64)>
    where
        A: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>>,
        B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send,
    {
        check_stack(self.vp)?;
        let base = self.roots().len();
        let n = env.len();
        for &h in env {
            let w = self.word(h);
            self.push_slot_word(w);
        }
        let parked = park_eagerly(self.vp, base, n)?;
        let task = FrameTask::new(self.vp.id, base, n, parked, ScopeBody(b));
        let tref = task.task_ref();
        sched::push(self.vp, tref);
        // From here until the join, a thief may hold `task`: nothing may
        // unwind out of this frame meanwhile (`Unjoined`), so `a` and the
        // poll after it run under `catch_unwind`.
        let unjoined = Unjoined;
        let ra = catch_unwind(AssertUnwindSafe(|| {
            let r = self.scope_value(|s| {
                let env = SlotHandles::new(s.roots(), base, n);
                a(s, env.as_slice())
            });
            // Joining is a safepoint too (see above).
            self.poll();
            r
        }));
        // `b` is joined whatever became of `a`: a thief may still need the
        // environment, which lives in this frame of the root stack, and
        // the task, which lives in this frame of the Rust stack.
        let rb = match pop_back_body(self.vp, &task, unjoined) {
            Ok(ScopeBody(b)) => self.scope(|s| {
                let env = SlotHandles::new(s.roots(), base, n);
                b(s, env.as_slice()).map(|h| s.word(h))
            }),
            Err(unjoined) => self.join_stolen(&tref, unjoined),
        };
        let ra = match ra {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        };
        let ha = ra?;
        Ok((self.word(ha), rb?))
    }

    /// Joins a task `par2` forked that a thief took: waits for its
    /// result, doing a waiting vproc's duties meanwhile, then disarms
    /// `unjoined` (no other vproc holds the task any more). The result's
    /// word is rooted by the caller before its next safepoint.
    pub(crate) fn join_stolen(&mut self, tref: &TaskRef, unjoined: Unjoined) -> Result<u64> {
        sched::wait_until(self, || tref.handoff.state() == DONE);
        std::mem::forget(unjoined);
        sched::take_result(self.vp, tref)
    }

    /// Parallel reduction over `lo..hi`: `leaf(s, env, i, j)` computes the
    /// result of a range of at most `grain` indices, `combine(s, env, x, y)`
    /// joins the results of two adjacent ranges. The range is split in
    /// halves with [`Scope::par2`], so idle vprocs steal the large halves
    /// first.
    pub fn par_reduce<L, C>(
        &mut self,
        env: &[Handle<'_>],
        lo: usize,
        hi: usize,
        grain: usize,
        leaf: L,
        combine: C,
    ) -> Result<Handle<'s>>
    where
        L: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], usize, usize) -> Result<Handle<'i>>
            + Send
            + Sync
            + 'static,
        C: for<'i> Fn(&mut Scope<'i>, &[Handle<'i>], Handle<'i>, Handle<'i>) -> Result<Handle<'i>>
            + Send
            + Sync
            + 'static,
    {
        if grain == 0 {
            return Err(Error::misuse("par_reduce: grain must be at least 1"));
        }
        if lo > hi {
            return Err(Error::misuse(format!(
                "par_reduce: empty range {lo}..{hi} reversed"
            )));
        }
        let ops = Arc::new((leaf, combine));
        self.scope_value(|s| {
            let env = s.slot_handles_of(env);
            reduce(s, &env, lo, hi, grain, &ops)
        })
    }

    /// The same values as `hs`, as handles of this scope.
    pub(super) fn slot_handles_of(&self, hs: &[Handle<'_>]) -> Vec<Handle<'s>> {
        hs.iter()
            .map(|&h| Handle {
                bits: h.bits,
                _scope: PhantomData,
                _not_send: PhantomData,
            })
            .collect()
    }
}

fn reduce<'i, L, C>(
    s: &mut Scope<'i>,
    env: &[Handle<'i>],
    lo: usize,
    hi: usize,
    grain: usize,
    ops: &Arc<(L, C)>,
) -> Result<Handle<'i>>
where
    L: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], usize, usize) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
    C: for<'k> Fn(&mut Scope<'k>, &[Handle<'k>], Handle<'k>, Handle<'k>) -> Result<Handle<'k>>
        + Send
        + Sync
        + 'static,
{
    if hi - lo <= grain {
        return (ops.0)(s, env, lo, hi);
    }
    let mid = lo + (hi - lo) / 2;
    let (ops_a, ops_b) = (ops.clone(), ops.clone());
    let (x, y) = s.par2(
        env,
        move |s, env| reduce(s, env, lo, mid, grain, &ops_a),
        move |s, env| reduce(s, env, mid, hi, grain, &ops_b),
    )?;
    (ops.1)(s, env, x, y)
}

/// Refuses a fork when `vp`'s stack is nearly used up (`crate::stack`).
pub(crate) fn check_stack(vp: &Vproc) -> Result<()> {
    let stack = vp.stack;
    if stack.exhausted() {
        return Err(Error::from(ErrorKind::StackExhausted {
            vproc: vp.id,
            left: stack.left(),
            size: stack.size,
        }));
    }
    Ok(())
}

/// The owner's join of `task` when no thief took it: pops it back off
/// `vp`'s deque and returns its body to be run here, disarming `unjoined`
/// (no other vproc holds the task, so a panic of the body may unwind).
/// `Err(unjoined)` when a thief has it: join with [`Scope::join_stolen`].
#[inline(always)]
pub(crate) fn pop_back_body<B: TaskBody>(
    vp: &mut Vproc,
    task: &FrameTask<B>,
    unjoined: Unjoined,
) -> std::result::Result<B, Unjoined> {
    if !sched::pop_back(vp, &task.task_ref()) {
        return Err(unjoined);
    }
    std::mem::forget(unjoined);
    // SAFETY: popped back off this vproc's deque: no one else was handed
    // the task.
    Ok(unsafe { task.take_body() })
}

/// The environment of a fork, root slots `base .. base + n`, promoted
/// and parked in global roots now when promotion is eager (`None` when it
/// is lazy or there is none). Nothing is forked yet if this fails.
#[inline(always)]
pub(crate) fn park_eagerly(vp: &mut Vproc, base: usize, n: usize) -> Result<Option<Vec<usize>>> {
    if n > 0 && vp.eager_promotion {
        return park_now(vp, base, n).map(Some);
    }
    Ok(None)
}

#[cold]
#[inline(never)]
fn park_now(vp: &mut Vproc, base: usize, n: usize) -> Result<Vec<usize>> {
    let mut words = vp.roots.copy_range(base, base + n);
    sched::park_env(vp, &mut words)
}

/// Handles for root-stack slots `base .. base + n`, without an allocation
/// when there are at most 8 (a fork's environment, nearly always).
pub(crate) enum SlotHandles<'s> {
    Inline([Handle<'s>; 8], usize),
    Heap(Vec<Handle<'s>>),
}

impl<'s> SlotHandles<'s> {
    pub(crate) fn new(roots: Roots<'_>, base: usize, n: usize) -> SlotHandles<'s> {
        let slot = |i: usize| Handle {
            bits: roots.slot_addr(i) as u64,
            _scope: PhantomData,
            _not_send: PhantomData,
        };
        if n <= 8 {
            let mut hs = [slot(0); 8];
            for (k, h) in hs.iter_mut().take(n).enumerate() {
                *h = slot(base + k);
            }
            SlotHandles::Inline(hs, n)
        } else {
            SlotHandles::Heap((base..base + n).map(slot).collect())
        }
    }

    pub(crate) fn as_slice(&self) -> &[Handle<'s>] {
        match self {
            SlotHandles::Inline(hs, n) => &hs[..*n],
            SlotHandles::Heap(hs) => hs,
        }
    }
}

/// Armed while a forked task may be held by a thief: a panic that would
/// unwind out of the forking frame then (none is expected: the task's
/// own code and the fork's other side run under `catch_unwind`) aborts
/// instead, because the thief would go on using the task, and the
/// environment, in the frame that unwinding frees.
pub(crate) struct Unjoined;

impl Drop for Unjoined {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("numagc: a panic in par2 while its forked task may run on another vproc cannot be recovered from; aborting");
            std::process::abort();
        }
    }
}
