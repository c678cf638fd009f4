//! Threads of the language and their scheduling (§2.1, §2.3, [RRX09]).
//!
//! A thread is a chain of continuations, as in Manticore, where "units of
//! work" are continuations: a thread's body runs, then returns what it does
//! next ([`Next`]): exit, yield, or synchronise on channels with a
//! continuation for each case. The vproc's Rust stack is never blocked by a
//! thread, so any number of threads share a vproc, a thread waiting on a
//! channel costs a queue entry, and a vproc that waits for something else
//! (a join, a job's `recv`) can run threads meanwhile without deadlock.
//!
//! * A runnable thread ([`Runnable`]) sits in a vproc's *ready queue*, an
//!   injector any vproc may push to: `spawn` pushes on the spawning vproc's
//!   queue (or the one named by `spawn_on`), and a thread woken by a
//!   rendezvous goes back to the queue of the vproc where it blocked, its
//!   *home*. Idle vprocs take from their own queue first and steal from the
//!   others' (`crate::sched::find_work`).
//! * Sharing (§2.3): a value sent on a channel is promoted before it is
//!   offered. A thread's environment is promoted when it is spawned and when
//!   it blocks (its continuation may run on any vproc), but not when a
//!   synchronisation completes at once: then the continuation runs on
//!   directly with its local environment. Promoted values wait in global
//!   roots, which global collections update, so a blocked thread never holds
//!   a vproc back from a collection.
//! * [`run`] is a trampoline: each continuation returns its successor
//!   instead of calling it, so a thread that loops for ever on a channel
//!   uses constant stack.
//!
//! Choice: a thread woken by a rendezvous resumes on its home vproc rather
//! than on the vproc that woke it, because its environment was promoted into
//! its home vproc's node-local chunks.

use super::channel::{self, Dir, Matched};
use crate::error::{Error, Result};
use crate::mutator::{GlobalRoot, Handle, Next, Scope, Step};
use crate::sync::lock;
use crate::vproc::Shared;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// A continuation of a thread: gets the thread's environment and, after a
/// receive, the value received.
pub(crate) type Cont = Box<
    dyn for<'i> FnOnce(&mut Scope<'i>, &[Handle<'i>], Option<Handle<'i>>) -> Result<Next<'i>>
        + Send,
>;

/// A thread ready to run its next continuation.
pub(crate) struct Runnable {
    pub env: Vec<GlobalRoot>,
    pub value: Option<GlobalRoot>,
    pub k: Cont,
}

/// How the party waiting on an offer is resumed.
pub(crate) enum Resume {
    /// A blocked thread: its environment and a continuation per case.
    Thread {
        home: usize,
        env: Vec<GlobalRoot>,
        conts: Vec<Option<Cont>>,
    },
    /// A vproc waiting in a job's `send`, `recv` or `select`.
    Vproc(usize),
}

pub(crate) type ChanCore = channel::Chan<GlobalRoot, Resume>;
pub(crate) type ThreadOffer = channel::Offer<GlobalRoot, Resume>;

/// Makes `r` runnable on vproc `home`.
pub(crate) fn push_ready(shared: &Shared, home: usize, r: Runnable) {
    shared.sched.ready[home].push(r);
    shared.coord.notify_work();
}

/// Wakes the party of `other`, an offer a rendezvous just completed.
pub(crate) fn wake(shared: &Shared, other: &ThreadOffer) {
    let case = other.completed_case().expect("a matched offer is claimed");
    drop(other.take_unsent());
    match lock(&other.resume).take() {
        Some(Resume::Thread {
            home,
            env,
            mut conts,
        }) => {
            let k = conts[case].take().expect("each case has its continuation");
            push_ready(
                shared,
                home,
                Runnable {
                    env,
                    value: other.take_received(),
                    k,
                },
            );
        }
        Some(Resume::Vproc(v)) => shared.coord.bell(v).ring(),
        None => unreachable!("an offer is queued only once its resume is set"),
    }
}

/// What the trampoline does after one continuation.
enum Outcome {
    /// Run `k` at once with these words as environment (and value).
    Continue {
        env: Vec<u64>,
        value: Option<u64>,
        k: Cont,
    },
    /// The thread exited, failed, yielded or blocked.
    Stop,
}

/// Runs thread `r` on `s`'s vproc until it exits, fails, yields or blocks.
pub(crate) fn run(s: &mut Scope<'_>, r: Runnable) {
    let Runnable { env, value, mut k } = r;
    // No safepoint between reading the roots and re-rooting the words.
    let mut env: Vec<u64> = env.into_iter().map(GlobalRoot::into_word).collect();
    let mut value: Option<u64> = value.map(GlobalRoot::into_word);
    s.vproc_mut().in_thread += 1;
    while let Outcome::Continue {
        env: e,
        value: v,
        k: next,
    } = s.scope(|s| step(s, &env, value, k))
    {
        (env, value, k) = (e, v, next);
    }
    s.vproc_mut().in_thread -= 1;
}

fn step<'i>(s: &mut Scope<'i>, env: &[u64], value: Option<u64>, k: Cont) -> Outcome {
    let env: Vec<Handle<'i>> = env.iter().map(|&w| s.push_root(w)).collect();
    let value = value.map(|w| s.push_root(w));
    let next = match catch_unwind(AssertUnwindSafe(|| k(s, &env, value))) {
        Ok(Ok(next)) => next,
        Ok(Err(e)) => return fail(s, e),
        Err(p) => {
            let e = crate::runtime::panic_error(s.vproc(), p);
            return fail(s, e);
        }
    };
    match next.step {
        Step::Exit => {
            s.vproc_mut().stats.threads_finished += 1;
            Outcome::Stop
        }
        Step::Yield { env, k } => {
            let env = match s.park(&env) {
                Ok(env) => env,
                Err(e) => return fail(s, e),
            };
            let me = s.vproc();
            push_ready(
                &s.shared(),
                me,
                Runnable {
                    env,
                    value: None,
                    k,
                },
            );
            Outcome::Stop
        }
        Step::Sync { env, cases } => synchronise(s, env, cases),
    }
}

fn fail(s: &mut Scope<'_>, e: Error) -> Outcome {
    s.vproc_mut().stats.threads_failed += 1;
    s.shared().record_thread_error(e);
    Outcome::Stop
}

/// A thread synchronises on `cases`: completes at once if a counterpart
/// waits, else blocks with its environment promoted.
fn synchronise<'i>(
    s: &mut Scope<'i>,
    env: Vec<Handle<'i>>,
    cases: Vec<crate::mutator::Case<'i>>,
) -> Outcome {
    let shared = s.shared();
    if let Err(e) = cases.iter().try_for_each(|c| c.chan.check_runtime(&shared)) {
        return fail(s, e);
    }
    let sent: Vec<Handle<'i>> = cases.iter().filter_map(|c| c.value).collect();
    let mut parked = match s.park(&sent) {
        Ok(p) => p.into_iter(),
        Err(e) => return fail(s, e),
    };
    let values = cases
        .iter()
        .map(|c| c.value.and_then(|_| parked.next()))
        .collect();
    let offer = channel::Offer::new(values);
    let chans: Vec<Arc<ChanCore>> = cases.iter().map(|c| c.chan.inner.clone()).collect();
    let dirs: Vec<Dir> = cases.iter().map(|c| c.dir).collect();
    let mut conts: Vec<Option<Cont>> = cases.into_iter().map(|c| Some(c.k)).collect();
    let on: Vec<(&ChanCore, Dir)> = chans.iter().map(|c| &**c).zip(dirs).collect();

    if let Some(m) = channel::sync(&on, &offer, false) {
        let env: Vec<u64> = env.iter().map(|&h| s.word(h)).collect();
        let k = conts[m.case]
            .take()
            .expect("each case has its continuation");
        return completed(s, &shared, &offer, m, env, k);
    }
    // Nobody waits yet: block. The continuation may run on any vproc.
    let me = s.vproc();
    let env = match s.park(&env) {
        Ok(env) => env,
        Err(e) => {
            // Not queued: the offer is dropped with its values.
            return fail(s, e);
        }
    };
    *lock(&offer.resume) = Some(Resume::Thread {
        home: me,
        env,
        conts,
    });
    s.vproc_mut().stats.sync_waits += 1;
    match channel::sync(&on, &offer, true) {
        None => Outcome::Stop,
        Some(m) => {
            // A counterpart arrived between the two looks.
            s.vproc_mut().stats.sync_waits -= 1;
            let Some(Resume::Thread { env, mut conts, .. }) = lock(&offer.resume).take() else {
                unreachable!("an offer that was not queued keeps its resume")
            };
            let env: Vec<u64> = env.into_iter().map(GlobalRoot::into_word).collect();
            let k = conts[m.case]
                .take()
                .expect("each case has its continuation");
            completed(s, &shared, &offer, m, env, k)
        }
    }
}

/// The caller's offer completed: wake the other party and continue with
/// `k`, handing it the value received, if any.
fn completed(
    s: &mut Scope<'_>,
    shared: &Shared,
    offer: &ThreadOffer,
    m: Matched<GlobalRoot, Resume>,
    env: Vec<u64>,
    k: Cont,
) -> Outcome {
    s.vproc_mut().stats.rendezvous += 1;
    wake(shared, &m.other);
    drop(offer.take_unsent());
    let value = offer.take_received().map(GlobalRoot::into_word);
    Outcome::Continue { env, value, k }
}

/// Waiting duties of a blocked job: what `Scope::select` calls.
pub(crate) fn select_blocking<'s>(
    s: &mut Scope<'s>,
    on: &[(&ChanCore, Dir)],
    values: Vec<Option<GlobalRoot>>,
) -> (usize, Option<u64>) {
    let shared = s.shared();
    let offer = channel::Offer::new(values);
    *lock(&offer.resume) = Some(Resume::Vproc(s.vproc()));
    let case = match channel::sync(on, &offer, true) {
        Some(m) => {
            s.vproc_mut().stats.rendezvous += 1;
            wake(&shared, &m.other);
            m.case
        }
        None => {
            s.vproc_mut().stats.sync_waits += 1;
            super::wait_until(s, || offer.done());
            offer.completed_case().expect("a done offer is claimed")
        }
    };
    drop(offer.take_unsent());
    (case, offer.take_received().map(GlobalRoot::into_word))
}
