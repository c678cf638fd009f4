//! Parallel execution on vprocs (§2.2, §2.3): work-stealing deques, fork-join
//! with lazy promotion, and the idle loop.
//!
//! * Each vproc owns a deque ([`deque`]). [`crate::Scope::par2`] pushes the
//!   second branch on it, runs the first inline, then pops the second back
//!   and runs it inline too — unless an idle vproc stole it meanwhile.
//! * Idle vprocs steal the oldest task of another vproc, from vprocs on
//!   their own node first, then from the other nodes ([`Scheduler::victims`]),
//!   spin briefly, and then sleep in the coordinator until work is pushed,
//!   a collection starts, a job arrives or the runtime shuts down: an idle
//!   runtime uses no CPU.
//! * Lazy promotion ([`task`]): a task's environment stays in its owner's
//!   local heap until a thief actually takes it; only then does the owner
//!   promote it. The result of a stolen task is promoted by the thief so
//!   that the owner can read it. `--task-promotion eager` promotes every
//!   environment at the fork instead, for comparison.
//! * A forked task lives in the frame of the fork that made it
//!   ([`frame_task`]); the deque, the mailboxes and a thief hold its
//!   address, which the fork keeps valid by joining before it returns. A
//!   fork allocates nothing and takes no lock; a push wakes thieves only
//!   when the deque was empty and one sleeps ([`push_waking`]).
//! * A vproc that waits (to join a stolen task, or for the environment of a
//!   task it stole) keeps answering: it joins pending global collections,
//!   promotes environments that thieves asked it for, and steals other work;
//!   its doorbell wakes it when any of these happen ([`doorbell`]).
//!
//! Invariants: a task is run by exactly one vproc (the deque hands it out
//! once); the environment of a task is read from the owner's stack only by
//! the owner; every word that crosses between vprocs is global and sits in a
//! global root while in transit, so collections in between update it.

pub(crate) mod channel;
pub(crate) mod deque;
pub(crate) mod doorbell;
pub(crate) mod frame_task;
pub(crate) mod proxy;
pub(crate) mod task;
pub(crate) mod thread;

use crate::error::Result;
use crate::gc::handshake::Coordinator;
use crate::mutator::{Handle, Scope};
use crate::trace::SpanKind;
use crate::vproc::{Shared, Vproc};
use deque::{Injector, Steal, Stealer, Worker};
use std::sync::Arc;
use task::{Mailbox, DONE, READY};
use thread::Runnable;

pub(crate) use frame_task::{FrameTask, ScopeBody, Task, TaskBody, TaskRef};

/// The scheduler state every vproc sees.
pub(crate) struct Scheduler {
    stealers: Vec<Stealer<TaskRef>>,
    /// Per vproc: tasks whose environment a thief asked for.
    mailboxes: Box<[Mailbox<TaskRef>]>,
    /// Per vproc: the order in which it tries victims (own node first).
    victims: Vec<Vec<usize>>,
    /// Per vproc: threads ready to run (`thread`).
    pub ready: Box<[Injector<Runnable>]>,
}

/// Something an idle or waiting vproc can run.
pub(crate) enum Work {
    Task(TaskRef),
    Thread(Runnable),
}

impl Scheduler {
    /// One deque per vproc; `nodes[v]` is vproc `v`'s topology node.
    pub fn new(nodes: &[usize]) -> (Scheduler, Vec<Worker<TaskRef>>) {
        let workers: Vec<Worker<TaskRef>> = nodes.iter().map(|_| Worker::new_lifo()).collect();
        let n = nodes.len();
        let num_nodes = nodes.iter().max().map_or(1, |m| m + 1);
        let victims = (0..n)
            .map(|v| {
                // Same node first, then by node index starting after ours;
                // within a node, starting after `v`, so thieves spread out.
                let mut order: Vec<usize> = (1..n).map(|k| (v + k) % n).collect();
                order.sort_by_key(|&u| (nodes[u] + num_nodes - nodes[v]) % num_nodes);
                order
            })
            .collect();
        let s = Scheduler {
            stealers: workers.iter().map(|w| w.stealer()).collect(),
            mailboxes: (0..n).map(|_| Mailbox::new()).collect(),
            victims,
            ready: (0..n).map(|_| Injector::new()).collect(),
        };
        (s, workers)
    }

    /// The victims of vproc `v`, nearest first.
    pub fn victims(&self, v: usize) -> &[usize] {
        &self.victims[v]
    }

    /// Whether `v` has a thread ready or some other vproc has a task or a
    /// thread to steal.
    pub fn has_work(&self, v: usize) -> bool {
        !self.ready[v].is_empty()
            || self.victims[v]
                .iter()
                .any(|&u| !self.stealers[u].is_empty() || !self.ready[u].is_empty())
    }

    /// Drops every ready thread (shutdown).
    pub fn clear_ready(&self) {
        for q in self.ready.iter() {
            while let Steal::Success(_) | Steal::Retry = q.steal() {}
        }
    }
}

fn take<T>(from: impl Fn() -> Steal<T>) -> Option<T> {
    loop {
        match from() {
            Steal::Success(t) => return Some(t),
            Steal::Empty => return None,
            Steal::Retry => continue,
        }
    }
}

/// Finds something for vproc `vp` to run: a thread of its own ready queue,
/// else a task stolen from another vproc (nearest first), else a thread
/// stolen from another vproc's ready queue.
pub(crate) fn find_work(vp: &mut Vproc) -> Option<Work> {
    let sched = &vp.shared.sched;
    if let Some(r) = take(|| sched.ready[vp.id].steal()) {
        return Some(Work::Thread(r));
    }
    if let Some(t) = steal(vp) {
        return Some(Work::Task(t));
    }
    let sched = &vp.shared.sched;
    for &u in sched.victims(vp.id) {
        if let Some(r) = take(|| sched.ready[u].steal()) {
            vp.stats.threads_stolen += 1;
            return Some(Work::Thread(r));
        }
    }
    None
}

/// Runs `w` on `s`'s vproc.
pub(crate) fn run_work(s: &mut Scope<'_>, w: Work) {
    match w {
        Work::Task(t) => s.scope(|s| run_stolen(s, &t)),
        Work::Thread(r) => {
            let t0 = s.vproc_mut().tracer.start();
            s.scope(|s| thread::run(s, r));
            s.vproc_mut().tracer.end(SpanKind::Thread, t0);
        }
    }
}

/// Steals one task for vproc `vp`, nearest victims first.
pub(crate) fn steal(vp: &mut Vproc) -> Option<TaskRef> {
    let sched = &vp.shared.sched;
    for &u in sched.victims(vp.id) {
        if let Some(t) = take(|| sched.stealers[u].steal()) {
            vp.stats.tasks_stolen += 1;
            return Some(t);
        }
    }
    None
}

/// Pushes a forked task on `vp`'s deque and wakes sleeping thieves if it
/// was empty ([`push_waking`]).
#[inline(always)]
pub(crate) fn push(vp: &mut Vproc, t: TaskRef) {
    push_waking(&vp.worker, &vp.shared.coord, t);
    vp.stats.tasks_forked += 1;
}

/// Pushes `t` on `worker`, waking sleeping and waiting vprocs
/// (`Coordinator::notify_work`) only when the deque was empty.
///
/// Why that is enough: a vproc goes to sleep only after it announced
/// itself and then found every deque empty (`Coordinator::wait_idle`,
/// `wait_for_work_or`). A deque that is not empty at a push was not
/// empty since the push that made it so, which saw it empty and woke
/// whoever had announced itself before; a vproc that looked later found
/// a task and did not sleep. (The owner reads the deque's front without
/// a fence, so a thief taking the last task at the same moment can make
/// the owner see a task that is gone and skip the wake-up; that thief is
/// awake and looks for more when it is done, and the owner runs the task
/// itself if no one takes it. Java's fork/join pool makes the same
/// choice: it signals only when a push finds its queue nearly empty.)
///
/// The point is the fence: `notify_work`'s fence costs 10–12 ns on the
/// development VM (`scripts/fence-cost.sh`), where a whole fork costs
/// 55–85 ns (`docs/results/par2-cost.md`), and a fork nested in another
/// finds the deque holding its parent's task, so it skips the fence.
#[inline(always)]
pub(crate) fn push_waking<T, J>(worker: &Worker<T>, coord: &Coordinator<J>, t: T) {
    let was_empty = worker.is_empty();
    worker.push(t);
    if was_empty {
        coord.notify_work();
    }
}

/// Pops `vp`'s newest task if it is `t`. Fork-join nesting means that when
/// `t` is not on top, it was stolen and the deque is empty.
#[inline(always)]
pub(crate) fn pop_if(vp: &mut Vproc, t: &TaskRef) -> bool {
    match vp.worker.pop() {
        Some(top) if top == *t => true,
        Some(other) => {
            // Not reachable with well-nested forks; keep the task queued.
            vp.worker.push(other);
            false
        }
        None => false,
    }
}

/// The owner's join of its task `t` when no thief took it: pops it back
/// off `vp`'s deque (`true`; the caller then runs it) and frees an
/// environment parked at the fork.
#[inline]
pub(crate) fn pop_back(vp: &mut Vproc, t: &TaskRef) -> bool {
    if !pop_if(vp, t) {
        return false;
    }
    unpark_env(vp, t);
    vp.stats.tasks_inline += 1;
    true
}

/// Promotes the environments thieves asked `vp` for (a safepoint duty).
pub(crate) fn serve_mail(vp: &mut Vproc) {
    if !vp.shared.coord.signalled(vp.id) {
        return;
    }
    let shared = vp.shared.clone();
    let me = vp.id;
    task::serve_requests(
        &shared.coord,
        &shared.sched.mailboxes[me],
        me,
        |t| &t.handoff,
        |t| {
            let mut words: Vec<u64> = vp.roots.copy_range(t.env_base, t.env_base + t.env_len);
            park_env(vp, &mut words)
        },
    );
    // A PE's exported tasks whose arguments this vproc packs (`crate::pe`).
    if let Some(pe) = shared.pe.get() {
        pe.serve_pack_requests(vp);
    }
}

/// Promotes `words` now and parks them in global roots (eager promotion).
pub(crate) fn park_env(vp: &mut Vproc, words: &mut [u64]) -> Result<Vec<usize>> {
    crate::plan::promote_words(vp, words)?;
    Ok(words
        .iter()
        .map(|&w| vp.shared.global_roots.add(w))
        .collect())
}

/// The owner popped task `t` back: frees the global roots its environment
/// was parked in. Only an eager fork parks an environment before a thief
/// asks (a lazy one is parked for the thief that stole the task, which is
/// then never popped back): a task has one exactly when it has an
/// environment and the vproc promotes eagerly (`park_eagerly`).
#[inline]
pub(crate) fn unpark_env(vp: &Vproc, t: &Task) {
    if vp.eager_promotion && t.env_len > 0 {
        unpark_env_slots(vp, t);
    }
}

#[cold]
#[inline(never)]
fn unpark_env_slots(vp: &Vproc, t: &Task) {
    // SAFETY: the owner popped the task back (the caller's contract), so no
    // thief was handed it; the owner built it `READY`.
    if let Ok(slots) = unsafe { t.handoff.take_env() } {
        for slot in slots {
            vp.shared.global_roots.remove(slot);
        }
    }
}

/// Runs a task taken from another vproc's deque on `s`'s vproc.
pub(crate) fn run_stolen(s: &mut Scope<'_>, t: &TaskRef) {
    let me = s.vproc();
    let owner = t.handoff.owner;
    let t0 = s.vproc_mut().tracer.start();
    if t.handoff.want(me) {
        let shared = s.shared();
        shared.sched.mailboxes[owner].post(*t);
        shared.coord.signal(owner);
    }
    // Waiting for the owner to promote the environment, this vproc does
    // not steal more: a second task from the same owner would wait for the
    // same safepoint, and emptying the owner's deque leaves it nothing to do
    // but steal back and wait in turn (measured: two vprocs asleep half of
    // the time on matrix_multiplication).
    wait_for(s, || t.handoff.state() >= READY, false);
    let result = s.scope(|s| {
        let shared = s.shared();
        // SAFETY: the deque handed the task to this vproc, which saw `READY`.
        let slots = match unsafe { t.handoff.take_env() } {
            Ok(slots) => slots,
            Err(e) => {
                // SAFETY: as above.
                unsafe { t.discard() };
                return Err(e);
            }
        };
        let env: Vec<Handle<'_>> = slots
            .into_iter()
            .map(|slot| s.push_root(shared.global_roots.take(slot)))
            .collect();
        // SAFETY: the deque handed the task to this vproc.
        let run =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { t.run(s, &env) }));
        match run {
            Ok(Ok(h)) => s.promote_word(h).map(|w| s.shared().global_roots.add(w)),
            Ok(Err(e)) => Err(e),
            Err(p) => Err(crate::runtime::panic_error(me, p)),
        }
    });
    // Publish before finishing: once the owner sees the result, the
    // statistics of everything this task did are visible (`Runtime::stats`).
    s.vproc_mut().tracer.end(SpanKind::StolenTask, t0);
    s.vproc_mut().publish_stats();
    t.handoff.finish(result);
    s.shared().coord.bell(owner).ring();
}

const WAIT_SPINS: usize = 2_000;

/// Waits on `s`'s vproc until `done()` holds, doing a waiting vproc's
/// duties meanwhile: global collections, promotion requests, ready threads
/// and stolen work.
pub(crate) fn wait_until(s: &mut Scope<'_>, done: impl Fn() -> bool) {
    wait_for(s, done, true)
}

/// `wait_until`, running ready threads and stolen work meanwhile only when
/// `steal` is set.
fn wait_for(s: &mut Scope<'_>, done: impl Fn() -> bool, steal: bool) {
    // Most waits are short: spin a little before the slower duties and the
    // doorbell's sleep (a futex wake-up costs tens of microseconds).
    for _ in 0..WAIT_SPINS {
        if done() {
            return;
        }
        std::hint::spin_loop();
    }
    let t0 = s.vproc_mut().tracer.start();
    loop {
        if done() {
            break;
        }
        let shared = s.shared();
        let me = s.vproc();
        if shared.coord.pending() {
            s.poll();
            continue;
        }
        if shared.coord.signalled(me) {
            serve_mail(s.vproc_mut());
            continue;
        }
        if steal {
            if let Some(w) = find_work(s.vproc_mut()) {
                run_work(s, w);
                continue;
            }
        }
        let slept = s.vproc_mut().tracer.start();
        shared.coord.wait_for_work_or(
            me,
            || done() || shared.coord.pending() || shared.coord.signalled(me),
            || steal && shared.sched.has_work(me),
        );
        s.vproc_mut().tracer.end(SpanKind::Sleep, slept);
    }
    s.vproc_mut().tracer.end(SpanKind::Wait, t0);
}

/// Reads the result of a task that was stolen, once `DONE`: its word, to
/// be rooted before the next safepoint.
pub(crate) fn take_result(vp: &Vproc, t: &Task) -> Result<u64> {
    debug_assert_eq!(t.handoff.state(), DONE);
    // SAFETY: the caller saw `DONE` (the debug assertion above).
    let slot = unsafe { t.handoff.take_result() }.expect("a finished task has a result")?;
    Ok(vp.shared.global_roots.take(slot))
}

/// The idle loop of a vproc thread: jobs, collections, stealing, sleep.
pub(crate) fn idle_loop(vp: &mut Vproc, mut run_job: impl FnMut(&mut Vproc, crate::vproc::Job)) {
    use crate::gc::handshake::Wake;
    let shared: Arc<Shared> = vp.shared.clone();
    const SPINS: usize = 64;
    loop {
        let mut stolen = None;
        for i in 0..SPINS {
            // A pending collection or job, or shutdown, comes first.
            if shared.coord.pending() || shared.coord.interrupted(vp.id) {
                break;
            }
            if let Some(w) = find_work(vp) {
                stolen = Some(w);
                break;
            }
            if i < SPINS / 2 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
        if let Some(w) = stolen {
            run_in_root_scope(vp, w);
            continue;
        }
        // Idle time goes to the plan's concurrent work (the shared plan's
        // marking and sweeping) before the vproc sleeps.
        if !shared.coord.pending() && !shared.coord.interrupted(vp.id) && crate::plan::idle_work(vp)
        {
            vp.publish_stats();
            continue;
        }
        let t0 = vp.tracer.start();
        let wake = shared
            .coord
            .wait_idle(vp.id, || shared.sched.has_work(vp.id));
        vp.tracer.end(SpanKind::Sleep, t0);
        match wake {
            Wake::Job(j) => run_job(vp, j),
            Wake::Collect => {
                crate::plan::join_collection(vp);
                crate::weak::run_pending(vp);
            }
            Wake::Steal => {
                if let Some(w) = find_work(vp) {
                    run_in_root_scope(vp, w);
                }
            }
            Wake::Shutdown => return,
        }
    }
}

fn run_in_root_scope(vp: &mut Vproc, w: Work) {
    {
        let mut s = Scope::root(vp);
        run_work(&mut s, w);
    }
    vp.roots.clear();
    vp.publish_stats();
}
