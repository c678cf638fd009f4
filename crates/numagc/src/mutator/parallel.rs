//! Fork-join for the mutator: [`Scope::par2`] and the parallel reduction
//! built on it. The scheduling, stealing and promotion protocol is in
//! `crate::sched`; this file is the API side.

use crate::config::TaskPromotion;
use crate::error::{Error, ErrorKind, Result};
use crate::mutator::scope::{Handle, Scope};
use crate::sched::task::{Handoff, DONE};
use crate::sched::{self, Task, TaskFn};
use crate::sync::{lock, Mutex};
use crate::vproc::Shared;
use std::marker::PhantomData;
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};
use std::sync::Arc;

impl<'s> Scope<'s> {
    /// Runs `a` and `b` in parallel and returns both results.
    ///
    /// `b` is pushed on this vproc's deque, where an idle vproc may steal it;
    /// `a` runs here at once. Each receives `env` as handles of its own
    /// scope: `b` cannot capture handles, because it may run on another
    /// thread. If `b` is not stolen it runs here after `a` and nothing is
    /// promoted; if it is, its environment is promoted only then (lazy
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
        B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send + 'static,
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
    /// safepoint).
    fn fork_join<A, B>(&mut self, env: &[Handle<'_>], a: A, b: B) -> Result<(u64, u64)>
    where
        A: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>>,
        B: for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>]) -> Result<Handle<'i>> + Send + 'static,
    {
        let stack = self.vp.stack;
        if stack.exhausted() {
            return Err(Error::from(ErrorKind::StackExhausted {
                vproc: self.vp.id,
                left: stack.left(),
                size: stack.size,
            }));
        }
        let base = self.roots().len();
        let n = env.len();
        for &h in env {
            let w = self.word(h);
            self.push_slot_word(w);
        }
        let task = Arc::new(Task {
            handoff: Handoff::new(self.vp.id, n > 0),
            env_base: base,
            env_len: n,
            func: Mutex::new(Some(Box::new(b) as TaskFn)),
        });
        if n > 0 && self.vp.shared.config.task_promotion == TaskPromotion::Eager {
            let mut words = self.roots().copy_range(base, base + n);
            // Nothing is forked yet if this fails.
            let slots = sched::park_env(self.vp, &mut words)?;
            task.handoff.env_ready(slots);
        }
        sched::push(self.vp, task.clone());
        let ra = catch_unwind(AssertUnwindSafe(|| {
            self.scope_value(|s| {
                let env = s.slot_handles(base, n);
                a(s, &env)
            })
        }));
        // Joining is a safepoint too (see above).
        self.poll();
        // `b` is joined whatever became of `a`: a thief may still need the
        // environment, which lives in this frame of the root stack.
        let rb = self.join(&task, base, n);
        let ra = match ra {
            Ok(r) => r,
            Err(p) => resume_unwind(p),
        };
        let (ha, hb) = (ra?, rb?);
        Ok((self.word(ha), self.word(hb)))
    }

    /// Joins the task forked by `par2`: runs it here if it is still on this
    /// vproc's deque, else waits for the thief's result.
    fn join(&mut self, task: &Arc<Task>, base: usize, n: usize) -> Result<Handle<'s>> {
        if sched::pop_if(self.vp, task) {
            let shared: Arc<Shared> = self.vp.shared.clone();
            for slot in task.handoff.take_env() {
                shared.global_roots.remove(slot);
            }
            let f = lock(&task.func).take().expect("a task runs once");
            self.vp.stats.tasks_inline += 1;
            return self.scope_value(|s| {
                let env = s.slot_handles(base, n);
                f(s, &env)
            });
        }
        sched::wait_until(self, || task.handoff.state() == DONE);
        sched::take_result(self, task)
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

    /// Handles for root-stack slots `base .. base + n`.
    pub(super) fn slot_handles(&self, base: usize, n: usize) -> Vec<Handle<'s>> {
        (base..base + n)
            .map(|i| Handle {
                bits: (i as u64) << 1,
                _scope: PhantomData,
                _not_send: PhantomData,
            })
            .collect()
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
