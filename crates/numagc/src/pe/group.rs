//! A group of PEs and the service that moves work between them.
//!
//! `gumsmp-shared-distributed-heaps.txt` §2.1 (GUM's work distribution)
//! and §3.3 (GUMSMP: several runtime instances, each a shared heap for a
//! few cores). A [`PeGroup`] is `pes` runtimes of one configuration; each
//! runs its own plan, collections and vprocs, and they share nothing but
//! messages (`super::message`) over a transport (`super::transport`).
//!
//! Each PE has a service thread (chosen over polling at the vprocs'
//! safepoints: a vproc that computes without allocating would leave a
//! work request unanswered). It
//! - answers a work request with the oldest task its vprocs offered
//!   (the largest, in divide and conquer, as GUM exports its oldest
//!   spark), or with "no work";
//! - asks for work when a vproc of its PE is idle or waits for a remote
//!   result, and none of its own is offered: one request at a time, to a
//!   random other PE, backing off from 50 µs doubling to 2 ms after each
//!   "no work" (GUM's back-off; the figures are measured choices, see
//!   `docs/results/hybrid.md`);
//! - hands a received task to its vprocs: queued on the PE, run by a job
//!   it submits and by any vproc of the PE waiting for a remote result
//!   (so that a waiting vproc works, as GUM's scheduler runs other
//!   threads while one blocks on a fetch);
//! - completes an exported task when its result comes, and fails it when
//!   the PE that took it stops or sends a message that is refused.
//!
//! Only the forker waits for an exported task's result, in its own frame
//! after the fork's join; a vproc that took the fork's half from the
//! deque and finds it exported returns at once. Whatever a waiting vproc
//! runs meanwhile (imported tasks, stolen forks) therefore started after
//! the frames it runs on top of, so it never depends on them, and the
//! waits cannot close a cycle. (A thief that waited instead buried such
//! frames under a wait for a computation started elsewhere before the
//! steal: maze deadlocked at 2 PEs x 2 vprocs.)
//!
//! Invariants: an offered task is claimed once — by its forker's join
//! (run here) or by the service (exported) — through one compare-and-swap
//! (`Offered::claim`); an exported task is in `exported` from its
//! `schedule` message until its result or its failure, which wake every
//! vproc of the PE (whichever waits on it reads it).

use super::export::{Export, Exports};
use super::global::Books;
use super::message::{encode, AccessOp, Message};
use super::pack;
use super::remote::Pending;
use super::service::{ring_all, Service, StopMark, MIN_BACKOFF};
use super::transport::{InProcess, Liveness, Transport};
use crate::config::Config;
use crate::error::{Error, ErrorKind, Result};
use crate::mutator::{Handle, Scope};
use crate::runtime::Runtime;
use crate::sync::{lock, Mutex};
use crate::vproc::Shared;
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Instant;

/// How long [`PeGroup::finish`] waits for the figures of the PEs of
/// other processes.
const ENDED_WAIT: std::time::Duration = std::time::Duration::from_secs(10);
/// Most rounds of [`PeGroup::settle`] (one per indirection in a chain).
const SETTLE_ROUNDS: usize = 16;
/// How long a settling round waits for the weight in flight.
const SETTLE_DRAIN: std::time::Duration = std::time::Duration::from_secs(2);

/// Most PEs in a group.
pub const MAX_PES: usize = 1024;
/// Largest packet of a task's arguments or result, in words; a larger
/// graph is not exported (the task runs on its PE).
pub const PACKET_LIMIT_WORDS: usize = 1 << 16;
/// The smallest packet limit ([`PeGroup::set_packet_limit`]): room for a
/// task's few arguments as global addresses.
pub const MIN_PACKET_LIMIT_WORDS: usize = 64;

// The states of an offered task (`Offered::state`).
pub(crate) const OFFERED: u8 = 0;
pub(crate) const LOCAL: u8 = 1;
pub(crate) const EXPORTED: u8 = 2;

// `Offered`'s primitives come from `crate::sync`, so that `--cfg loom`
// explores this code (`loom_models::pe_offer`); `crate::sync` has no
// `AtomicU8`, so the state's cell is chosen here the same way.
#[cfg(not(loom))]
type StateCell = std::sync::atomic::AtomicU8;
#[cfg(loom)]
type StateCell = loom::sync::atomic::AtomicU8;

/// A task a vproc forked with `par2_export`, which another PE may take.
///
/// Its arguments stay in root-stack slots `env_base .. env_base +
/// env_len` of the forker's vproc `vproc` until it is claimed; when the
/// service claims it for export, the forker packs them at its next
/// safepoint (`serve_pack_requests`), as GUM's PE packs a spark's graph
/// when a work request comes, not when the spark is made.
///
/// Protocol (`loom_models::pe_offer`): claimed once, by the forker
/// (`claim_local`) or by the service (`claim(EXPORTED)`), one
/// compare-and-swap; an exported task is finished once (whoever removes
/// it from the service's `exported` map), the outcome stored before
/// `done` is set (Release), then the vprocs' doorbells rung; the forker,
/// seeing `done` (Acquire), takes the outcome.
pub(crate) struct Offered {
    pub(crate) state: StateCell,
    pub(super) export: Export,
    /// The forker's vproc and the arguments' root slots there.
    pub(super) vproc: usize,
    pub(super) env_base: usize,
    pub(super) env_len: usize,
    /// The PE it went to, once exported.
    pub(crate) to: crate::sync::AtomicUsize,
    pub(crate) outcome: Mutex<Option<Result<Vec<u64>>>>,
    pub(crate) done: crate::sync::AtomicBool,
}

impl Offered {
    pub fn new(export: Export, vproc: usize, env_base: usize, env_len: usize) -> Offered {
        Offered {
            state: StateCell::new(OFFERED),
            export,
            vproc,
            env_base,
            env_len,
            to: crate::sync::AtomicUsize::new(usize::MAX),
            outcome: Mutex::new(None),
            done: crate::sync::AtomicBool::new(false),
        }
    }

    /// Claims the task (`how`: `LOCAL` or `EXPORTED`); `false` when it
    /// was claimed already.
    pub fn claim(&self, how: u8) -> bool {
        self.state
            .compare_exchange(OFFERED, how, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// Claims the task for its forker; `false` when it was exported.
    pub fn claim_local(&self) -> bool {
        self.claim(LOCAL)
    }

    pub fn done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    /// Whether the service claimed it for another PE.
    pub fn exported(&self) -> bool {
        self.state.load(Ordering::Acquire) == EXPORTED
    }

    /// Completes an exported task: its outcome, then `done`.
    pub fn finish(&self, outcome: Result<Vec<u64>>) {
        *lock(&self.outcome) = Some(outcome);
        self.done.store(true, Ordering::Release);
    }
}

/// Exported tasks (id, offer) a vproc is to pack.
pub(super) type PackRequests = Vec<(u64, Arc<Offered>)>;

/// A task received from another PE, not yet started.
pub(super) struct Imported {
    pub(super) from: usize,
    pub(super) task: u64,
    pub(super) export: Export,
    pub(super) args: Vec<u64>,
}

/// An access to one of this PE's global objects, for a vproc to serve
/// (`super::remote`).
pub(crate) struct AccessWork {
    pub(crate) reply_to: usize,
    pub(crate) req: u64,
    pub(crate) gid: u64,
    pub(crate) field: u64,
    pub(crate) op: AccessOp,
    pub(crate) packet: Vec<u64>,
}

impl AccessWork {
    /// The access an `access` message asks for; `None` for another
    /// message.
    pub(super) fn of(m: Message) -> Option<AccessWork> {
        match m {
            Message::Access {
                req,
                reply_to,
                gid,
                field,
                op,
                packet,
            } => Some(AccessWork {
                reply_to: reply_to as usize,
                req,
                gid,
                field,
                op,
                packet,
            }),
            _ => None,
        }
    }

    /// The same access, of object `gid` of the PE it is sent to (on
    /// from an indirection).
    pub(super) fn message_to(self, gid: u64) -> Message {
        Message::Access {
            req: self.req,
            reply_to: self.reply_to as u32,
            gid,
            field: self.field,
            op: self.op,
            packet: self.packet,
        }
    }

    /// Whether it writes (a job must run it: the value is unpacked).
    pub(super) fn writes(&self) -> bool {
        matches!(self.op, AccessOp::Set | AccessOp::SetRaw)
    }
}

/// Work other PEs sent, which this PE's vprocs run.
pub(super) enum Work {
    Task(Imported),
    /// A write to one of this PE's objects (it may allocate: only a job
    /// runs it).
    Access(AccessWork),
    /// Reads wait in `reads`: whoever comes first — this job on an idle
    /// vproc, or a busy vproc at its next safepoint — serves them.
    Reads,
}

/// Counters of one PE's traffic.
#[derive(Default)]
pub(super) struct Counters {
    pub(super) messages_sent: AtomicU64,
    pub(super) bytes_sent: AtomicU64,
    pub(super) fish_sent: AtomicU64,
    pub(super) no_work: AtomicU64,
    pub(super) tasks_exported: AtomicU64,
    pub(super) tasks_imported: AtomicU64,
    pub(super) pack_ns: AtomicU64,
    pub(super) unpack_ns: AtomicU64,
    pub(super) remote_wait_ns: AtomicU64,
    pub(super) refused: AtomicU64,
    pub(super) accesses: AtomicU64,
    pub(super) accesses_served: AtomicU64,
    pub(super) access_wait_ns: AtomicU64,
    pub(super) weight_returned: AtomicU64,
    pub(super) weight_received: AtomicU64,
}

/// What one PE did, since the group started.
///
/// Read from JSON, a figure that an older file lacks is 0.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(default)]
pub struct PeStats {
    pub pe: usize,
    pub messages_sent: u64,
    pub bytes_sent: u64,
    /// Work requests sent, and how many were answered "no work".
    pub fish_sent: u64,
    pub no_work: u64,
    /// Tasks this PE gave to others, and took from others.
    pub tasks_exported: u64,
    pub tasks_imported: u64,
    /// Time spent packing and unpacking arguments and results.
    pub pack_ms: f64,
    pub unpack_ms: f64,
    /// Time vprocs waited for the results of exported tasks (running
    /// imported tasks meanwhile included).
    pub remote_wait_ms: f64,
    /// Messages refused (see `super::message::decode`).
    pub refused_messages: u64,
    /// Reads and writes of other PEs' objects this PE's tasks made, and
    /// those of its own objects it served (`super::remote`).
    pub accesses: u64,
    pub accesses_served: u64,
    /// Time tasks waited for the answers of their accesses (running
    /// other work meanwhile included): GUM's fetch waits.
    pub access_wait_ms: f64,
    /// `return-weight` messages sent: references to other PEs' objects
    /// that died here.
    pub weight_returns: u64,
    /// Entries of this PE's global indirection table, and global
    /// addresses it held, when the figures were taken (both 0 at the end
    /// of a job: every weight came back).
    pub git_entries: u64,
    pub imports: u64,
    /// Time this PE's vprocs spent collecting, summed over them.
    pub gc_ms: f64,
}

impl PeStats {
    /// The figures as words (`Message::Ended`; times as `f64` bits).
    pub(super) fn to_words(&self) -> Vec<u64> {
        vec![
            self.pe as u64,
            self.messages_sent,
            self.bytes_sent,
            self.fish_sent,
            self.no_work,
            self.tasks_exported,
            self.tasks_imported,
            self.pack_ms.to_bits(),
            self.unpack_ms.to_bits(),
            self.remote_wait_ms.to_bits(),
            self.refused_messages,
            self.accesses,
            self.accesses_served,
            self.access_wait_ms.to_bits(),
            self.weight_returns,
            self.git_entries,
            self.imports,
            self.gc_ms.to_bits(),
        ]
    }

    /// The figures of `to_words`, of PE `pe` (`None` when the words are
    /// not `STATS_WORDS` long or name another PE).
    pub(super) fn from_words(pe: usize, w: &[u64]) -> Option<PeStats> {
        if w.len() != super::message::STATS_WORDS || w[0] != pe as u64 {
            return None;
        }
        Some(PeStats {
            pe,
            messages_sent: w[1],
            bytes_sent: w[2],
            fish_sent: w[3],
            no_work: w[4],
            tasks_exported: w[5],
            tasks_imported: w[6],
            pack_ms: f64::from_bits(w[7]),
            unpack_ms: f64::from_bits(w[8]),
            remote_wait_ms: f64::from_bits(w[9]),
            refused_messages: w[10],
            accesses: w[11],
            accesses_served: w[12],
            access_wait_ms: f64::from_bits(w[13]),
            weight_returns: w[14],
            git_entries: w[15],
            imports: w[16],
            gc_ms: f64::from_bits(w[17]),
        })
    }
}

/// One PE's side of the group: what its vprocs and its service share.
pub(crate) struct PeContext {
    pub pe: usize,
    pub pes: usize,
    pub exports: Arc<Exports>,
    /// The largest packet, in words ([`PeGroup::set_packet_limit`]).
    packet_limit: AtomicUsize,
    pub(super) transport: Arc<dyn Transport>,
    pub(super) liveness: Arc<Liveness>,
    /// Offered tasks, oldest first.
    pub(super) pool: Mutex<VecDeque<Arc<Offered>>>,
    /// Exported tasks by id, until their result comes.
    pub(super) exported: Mutex<HashMap<u64, Arc<Offered>>>,
    /// Work other PEs sent: tasks, and accesses to this PE's objects.
    pub(super) imported: Mutex<VecDeque<Work>>,
    pub(super) has_imported: AtomicBool,
    pub(super) next_task: AtomicU64,
    /// The weight books: GIT and imports, tied to the heap
    /// (`super::global`).
    pub(crate) books: Mutex<Books>,
    /// Reads of this PE's objects, served by a job or at a safepoint
    /// (`PeContext::serve_reads`), and whether any wait.
    pub(super) reads: Mutex<VecDeque<AccessWork>>,
    pub(super) has_reads: AtomicBool,
    /// Accesses sent, by id, until their answer comes (`super::remote`).
    pub(super) requests: Mutex<HashMap<u64, Arc<Pending>>>,
    pub(super) next_req: AtomicU64,
    /// A vproc has been asked to scan the imports and has not yet.
    pub(super) scan_pending: AtomicBool,
    /// Vprocs waiting for an exported task's result.
    pub(super) remote_waiters: AtomicUsize,
    pub(super) stopping: AtomicBool,
    /// Set when PE 0 ended the job (its `stop` came): the end of
    /// [`PeGroup::serve`] that is not a loss.
    pub(super) ended: AtomicBool,
    /// On PE 0: the figures of the PEs of other processes, as their
    /// `ended` messages bring them ([`PeGroup::finish`]).
    pub(super) remote_stats: Mutex<Vec<Option<PeStats>>>,
    pub(super) counters: Counters,
    /// Per vproc: exported tasks (id, offer) whose arguments that vproc
    /// is to pack at its next safepoint, and whether any wait.
    pub(super) pack_requests: Box<[Mutex<PackRequests>]>,
    pub(super) pack_pending: Box<[AtomicBool]>,
    /// Errors of the service (refused messages, failed sends), oldest
    /// first, at most 64.
    pub(super) errors: Mutex<Vec<Error>>,
}

impl PeContext {
    pub(super) fn send(&self, to: usize, m: &Message) -> Result<()> {
        let bytes = encode(self.pe, m);
        self.counters.messages_sent.fetch_add(1, Ordering::Relaxed);
        self.counters
            .bytes_sent
            .fetch_add(bytes.len() as u64, Ordering::Relaxed);
        self.transport.send(to, bytes)
    }

    /// Sends `m` to PE `to`; a failure is recorded, not returned (for the
    /// answers and notices whose sender has no one to tell).
    pub(super) fn send_or_record(&self, to: usize, m: &Message) {
        if let Err(e) = self.send(to, m) {
            self.record(e);
        }
    }

    /// Whether PE `p` still runs: its service here has not stopped, and
    /// the transport has not lost it.
    pub(super) fn alive(&self, p: usize) -> bool {
        self.liveness.alive(p) && self.transport.peer_alive(p)
    }

    pub(super) fn record(&self, e: Error) {
        let mut es = lock(&self.errors);
        if es.len() < 64 {
            es.push(e);
        }
    }

    /// Offers `o` to other PEs.
    pub fn offer(&self, o: Arc<Offered>) {
        lock(&self.pool).push_back(o);
    }

    /// Removes `o`, claimed by its forker, if it is the newest offer (it
    /// usually is: forks are joined newest first); older stale offers
    /// are dropped by the service.
    pub fn withdraw(&self, o: &Arc<Offered>) {
        let mut p = lock(&self.pool);
        if p.back().is_some_and(|b| Arc::ptr_eq(b, o)) {
            p.pop_back();
        }
    }

    /// The oldest offer still unclaimed, claimed for export to `to`.
    pub(super) fn take_offer(&self, to: usize) -> Option<Arc<Offered>> {
        let mut p = lock(&self.pool);
        while let Some(o) = p.pop_front() {
            if o.claim(EXPORTED) {
                o.to.store(to, Ordering::Release);
                return Some(o);
            }
        }
        None
    }

    pub(super) fn has_offers(&self) -> bool {
        let mut p = lock(&self.pool);
        while p
            .front()
            .is_some_and(|o| o.state.load(Ordering::Acquire) != OFFERED)
        {
            p.pop_front();
        }
        !p.is_empty()
    }

    pub fn has_imported(&self) -> bool {
        self.has_imported.load(Ordering::Acquire)
    }

    fn take_imported(&self) -> Option<Work> {
        let mut q = lock(&self.imported);
        let t = q.pop_front();
        self.has_imported.store(!q.is_empty(), Ordering::Release);
        t
    }

    /// Queues a read of one of this PE's objects (the service), to be
    /// served by a job or at a vproc's safepoint.
    pub(super) fn push_read(&self, a: AccessWork) {
        lock(&self.reads).push_back(a);
        self.has_reads.store(true, Ordering::Release);
    }

    /// Serves the reads waiting, on `s`'s vproc. At a safepoint too: a
    /// read packs (copies out) and allocates nothing in the heap — a GIT
    /// entry is a global object, whose graph is global, so the packer
    /// never promotes (`pack::pack_in`).
    pub(super) fn serve_reads(&self, s: &mut Scope<'_>) {
        loop {
            let a = {
                let mut q = lock(&self.reads);
                let a = q.pop_front();
                self.has_reads.store(!q.is_empty(), Ordering::Release);
                a
            };
            match a {
                Some(a) => self.serve_access(s, a),
                None => return,
            }
        }
    }

    /// Queues work another PE sent (the service).
    pub(super) fn push_work(&self, w: Work) {
        let mut q = lock(&self.imported);
        q.push_back(w);
        self.has_imported.store(true, Ordering::Release);
    }

    /// Runs the work other PEs sent to this PE (imported tasks, accesses
    /// to its objects) until none is left, on `s`'s vproc.
    pub fn run_imported(&self, s: &mut Scope<'_>) {
        while let Some(w) = self.take_imported() {
            match w {
                Work::Task(t) => self.run_one(s, t),
                Work::Access(a) => self.serve_access(s, a),
                Work::Reads => self.serve_reads(s),
            }
        }
    }

    fn run_one(&self, s: &mut Scope<'_>, t: Imported) {
        let Imported {
            from,
            task,
            export,
            args,
        } = t;
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            s.scope(|s| {
                let t0 = Instant::now();
                let hs = pack::unpack_in(s, &args, from, Some(self))?;
                self.add_ns(&self.counters.unpack_ns, t0);
                let h = export.call(s, &hs)?;
                let t0 = Instant::now();
                let r = pack::pack_in(s, &[h], self.task_packing(), self);
                self.add_ns(&self.counters.pack_ns, t0);
                Ok(r)
            })
        }));
        let m = match outcome {
            Ok(Ok(Ok(words))) => Message::Result {
                task,
                outcome: Ok(words),
            },
            // The task ran, its result cannot travel: its forker runs it.
            Ok(Ok(Err(e))) if matches!(e.kind(), ErrorKind::NotExportable(_)) => {
                Message::Declined {
                    task,
                    reason: e.to_string(),
                }
            }
            Ok(Ok(Err(e))) | Ok(Err(e)) => Message::Result {
                task,
                outcome: Err(e.to_string()),
            },
            Err(p) => Message::Result {
                task,
                outcome: Err(crate::runtime::panic_error(s.vproc(), p).to_string()),
            },
        };
        self.send_or_record(from, &m);
    }

    /// Asks the forker's vproc to pack `o`'s arguments and send them to
    /// `o.to` as task `task` (the service, after claiming `o` for export).
    pub(super) fn request_pack(&self, shared: &Shared, task: u64, o: Arc<Offered>) {
        let v = o.vproc;
        lock(&self.pack_requests[v]).push((task, o));
        self.pack_pending[v].store(true, Ordering::SeqCst);
        shared.coord.signal(v);
    }

    /// Packs and sends the exported tasks waiting for `vp` (its duty at a
    /// safepoint, from `sched::serve_mail`). Arguments that cannot be
    /// packed (a mutable object, past the packet limit) fail the export:
    /// the forker runs the task itself and the PE that asked gets "no
    /// work".
    pub(crate) fn serve_pack_requests(&self, vp: &mut crate::vproc::Vproc) {
        if self.has_reads.load(Ordering::Acquire) {
            let mut s = Scope::root(vp);
            self.serve_reads(&mut s);
        }
        if !self.pack_pending[vp.id].swap(false, Ordering::SeqCst) {
            return;
        }
        let requests = std::mem::take(&mut *lock(&self.pack_requests[vp.id]));
        for (task, o) in requests {
            let to = o.to.load(Ordering::Acquire);
            let t0 = Instant::now();
            let packed = {
                let mut s = Scope::root(vp);
                let env = crate::mutator::SlotHandles::new(s.roots(), o.env_base, o.env_len);
                pack::pack_in(&mut s, env.as_slice(), self.task_packing(), self)
            };
            self.add_ns(&self.counters.pack_ns, t0);
            let sent = match packed {
                Ok(args) => self.send(
                    to,
                    &Message::Schedule {
                        task,
                        export: o.export.id,
                        name_hash: o.export.name_hash,
                        args,
                    },
                ),
                Err(e) => {
                    // Not exported after all: whoever removes it from the
                    // map finishes it (once).
                    if lock(&self.exported).remove(&task).is_some() {
                        // Counted before the forker can see the outcome.
                        self.counters.tasks_exported.fetch_sub(1, Ordering::SeqCst);
                        o.finish(Err(e));
                        ring_all(&vp.shared);
                    }
                    self.send(to, &Message::NoWork)
                }
            };
            if let Err(e) = sent {
                self.record(e);
            }
        }
    }

    /// The largest packet this PE makes, in words.
    pub(crate) fn packet_limit(&self) -> usize {
        self.packet_limit.load(Ordering::Relaxed)
    }

    /// How tasks' arguments and results are packed.
    pub(super) fn task_packing(&self) -> pack::Packing {
        pack::Packing::Task {
            limit: self.packet_limit(),
        }
    }

    pub(super) fn add_ns(&self, c: &AtomicU64, t0: Instant) {
        c.fetch_add(t0.elapsed().as_nanos() as u64, Ordering::Relaxed);
    }

    /// Waits on `s`'s vproc, the forker's, after the fork's join, for the
    /// result of `o`, exported, running imported tasks and stolen forks
    /// meanwhile (module doc: why only the forker waits); the result
    /// unpacked into `s`.
    pub fn wait_remote<'s>(&self, s: &mut Scope<'s>, o: &Offered) -> Result<Handle<'s>> {
        let t0 = Instant::now();
        self.wait_done(s, &|| o.done());
        self.add_ns(&self.counters.remote_wait_ns, t0);
        let words = lock(&o.outcome)
            .take()
            .expect("a done task has its outcome")?;
        self.unpack_one(s, &words, o.to.load(Ordering::Acquire), &"a result")
    }

    /// Unpacks a packet from PE `from` that must hold one value (`what`
    /// it answers: a task's result, a read, a fetch).
    pub(super) fn unpack_one<'s>(
        &self,
        s: &mut Scope<'s>,
        words: &[u64],
        from: usize,
        what: &dyn std::fmt::Display,
    ) -> Result<Handle<'s>> {
        let t0 = Instant::now();
        let hs = pack::unpack_in(s, words, from, Some(self))?;
        self.add_ns(&self.counters.unpack_ns, t0);
        match hs.as_slice() {
            [h] => Ok(*h),
            _ => Err(ErrorKind::Pe {
                pe: from,
                message: format!("{what} packet holds {} values, not 1", hs.len()),
            }
            .into()),
        }
    }

    /// Waits on `s`'s vproc until `done`, running the work other PEs
    /// sent meanwhile, and asking them for more (`remote_waiters`).
    pub(super) fn wait_done(&self, s: &mut Scope<'_>, done: &dyn Fn() -> bool) {
        self.remote_waiters.fetch_add(1, Ordering::SeqCst);
        loop {
            crate::sched::wait_until(s, || done() || self.has_imported());
            if done() {
                break;
            }
            self.run_imported(s);
        }
        self.remote_waiters.fetch_sub(1, Ordering::SeqCst);
    }

    /// This PE's figures; `shared` is its runtime's.
    pub(super) fn stats(&self, shared: &Shared) -> PeStats {
        let c = &self.counters;
        let (git, imports) = self.books_len();
        let n = |a: &AtomicU64| a.load(Ordering::Relaxed);
        let ms = |a: &AtomicU64| a.load(Ordering::Relaxed) as f64 / 1e6;
        PeStats {
            pe: self.pe,
            messages_sent: n(&c.messages_sent),
            bytes_sent: n(&c.bytes_sent),
            fish_sent: n(&c.fish_sent),
            no_work: n(&c.no_work),
            tasks_exported: n(&c.tasks_exported),
            tasks_imported: n(&c.tasks_imported),
            pack_ms: ms(&c.pack_ns),
            unpack_ms: ms(&c.unpack_ns),
            remote_wait_ms: ms(&c.remote_wait_ns),
            refused_messages: n(&c.refused),
            accesses: n(&c.accesses),
            accesses_served: n(&c.accesses_served),
            access_wait_ms: ms(&c.access_wait_ns),
            weight_returns: n(&c.weight_returned),
            git_entries: git as u64,
            imports: imports as u64,
            gc_ms: shared
                .stats
                .iter()
                .map(|m| lock(m).gc_ns() as f64 / 1e6)
                .sum(),
        }
    }
}

/// The PEs of a group that run in this process: all of them for a group
/// in one process ([`PeGroup::new`]), one for a group over MPI (one PE
/// per process, `super::mpi`).
pub struct PeGroup {
    pes: usize,
    /// PE 0 has told the PEs of other processes that the job is over.
    stop_sent: bool,
    runtimes: Vec<Runtime>,
    contexts: Vec<Arc<PeContext>>,
    services: Vec<JoinHandle<()>>,
}

fn check_pes(pes: usize) -> Result<()> {
    if (1..=MAX_PES).contains(&pes) {
        return Ok(());
    }
    Err(ErrorKind::Config(Box::new(crate::error::ConfigError {
        setting: "pes",
        value: pes.to_string(),
        allowed: format!("1 ..= {MAX_PES}"),
    }))
    .into())
}

impl PeGroup {
    /// Starts `pes` PEs in this process, each a runtime of `config` (its
    /// `vprocs` per PE) on which `setup` registers the program's
    /// descriptors (in the same order on every PE), running the functions
    /// of `exports`; messages go over channels ([`InProcess`]).
    ///
    /// Errors: `pes` outside `1 ..= MAX_PES`; a runtime that cannot start;
    /// an error of `setup`.
    pub fn new(
        pes: usize,
        config: Config,
        exports: Exports,
        setup: impl Fn(&Runtime) -> Result<()>,
    ) -> Result<PeGroup> {
        check_pes(pes)?;
        let transports = InProcess::group(pes)
            .into_iter()
            .map(|t| Arc::new(t) as Arc<dyn Transport>)
            .collect();
        PeGroup::start(transports, config, exports, setup)
    }

    /// Starts the one PE of a group that `transport` connects to the
    /// others, which run elsewhere (other processes, other machines):
    /// PE `transport.pe()` of `transport.pes()`. Every PE of the group
    /// must be started with the same `config`, `exports` and `setup`.
    /// PE 0 runs the program ([`PeGroup::run`]); the others
    /// [`PeGroup::serve`] until it is done.
    ///
    /// Errors: as [`PeGroup::new`].
    pub fn with_transport(
        transport: Arc<dyn Transport>,
        config: Config,
        exports: Exports,
        setup: impl Fn(&Runtime) -> Result<()>,
    ) -> Result<PeGroup> {
        check_pes(transport.pes())?;
        if transport.pe() >= transport.pes() {
            return Err(Error::misuse(format!(
                "a transport of PE {} in a group of {} PEs",
                transport.pe(),
                transport.pes()
            )));
        }
        PeGroup::start(vec![transport], config, exports, setup)
    }

    /// Starts a PE for each of `transports` (all of one group).
    fn start(
        transports: Vec<Arc<dyn Transport>>,
        config: Config,
        exports: Exports,
        setup: impl Fn(&Runtime) -> Result<()>,
    ) -> Result<PeGroup> {
        let pes = transports.first().map_or(0, |t| t.pes());
        let exports = Arc::new(exports);
        // This process's board: the PEs started here mark it when their
        // service stops; PEs elsewhere are judged by the transport
        // (`Transport::peer_alive`).
        let liveness = Liveness::new(pes);
        let mut g = PeGroup {
            pes,
            stop_sent: false,
            runtimes: Vec::with_capacity(transports.len()),
            contexts: Vec::with_capacity(transports.len()),
            services: Vec::with_capacity(transports.len()),
        };
        for t in transports {
            let pe = t.pe();
            let rt = Runtime::new_pe(config.clone(), pe, pes)?;
            setup(&rt)?;
            let ctx = Arc::new(PeContext {
                pe,
                pes,
                exports: exports.clone(),
                packet_limit: AtomicUsize::new(PACKET_LIMIT_WORDS),
                transport: t,
                liveness: liveness.clone(),
                pool: Mutex::new(VecDeque::new()),
                exported: Mutex::new(HashMap::new()),
                imported: Mutex::new(VecDeque::new()),
                has_imported: AtomicBool::new(false),
                next_task: AtomicU64::new(0),
                books: Mutex::new(Books::new(pe)),
                reads: Mutex::new(VecDeque::new()),
                has_reads: AtomicBool::new(false),
                requests: Mutex::new(HashMap::new()),
                next_req: AtomicU64::new(0),
                scan_pending: AtomicBool::new(false),
                remote_waiters: AtomicUsize::new(0),
                stopping: AtomicBool::new(false),
                ended: AtomicBool::new(false),
                remote_stats: Mutex::new(vec![None; pes]),
                counters: Counters::default(),
                errors: Mutex::new(Vec::new()),
                pack_requests: (0..config.vprocs).map(|_| Mutex::new(Vec::new())).collect(),
                pack_pending: (0..config.vprocs).map(|_| AtomicBool::new(false)).collect(),
            });
            let shared = rt.shared().clone();
            shared
                .pe
                .set(ctx.clone())
                .unwrap_or_else(|_| unreachable!("a new runtime is in no group"));
            let service = Service {
                ctx: ctx.clone(),
                shared,
                fishing: None,
                next_fish: Instant::now(),
                backoff: MIN_BACKOFF,
                next_vproc: 0,
                scanned_at: 0,
                rng: 0x9e37_79b9_7f4a_7c15 ^ (pe as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d),
            };
            let mark = StopMark(liveness.clone(), pe);
            let h = std::thread::Builder::new()
                .name(format!("numagc-pe{pe}-service"))
                .spawn(move || {
                    let _mark = mark;
                    service.run();
                })
                .map_err(|source| ErrorKind::Os {
                    what: "starting a PE's service thread",
                    source,
                })?;
            g.runtimes.push(rt);
            g.contexts.push(ctx);
            g.services.push(h);
        }
        Ok(g)
    }

    /// Sets the largest packet the PEs of this process make, in words
    /// (default [`PACKET_LIMIT_WORDS`]): past it, immutable graphs travel
    /// as global addresses, fetched when they are resolved. Small limits
    /// are for tests (the torture tester's hybrid mode), large ones for
    /// programs whose tasks carry big immutable data.
    ///
    /// Errors: [`ErrorKind::Config`] for a limit outside
    /// `MIN_PACKET_LIMIT_WORDS ..= MAX_ANSWER_WORDS`.
    pub fn set_packet_limit(&self, words: usize) -> Result<()> {
        if !(MIN_PACKET_LIMIT_WORDS..=pack::MAX_ANSWER_WORDS).contains(&words) {
            return Err(ErrorKind::Config(Box::new(crate::error::ConfigError {
                setting: "packet limit",
                value: words.to_string(),
                allowed: format!(
                    "{MIN_PACKET_LIMIT_WORDS} ..= {} words",
                    pack::MAX_ANSWER_WORDS
                ),
            }))
            .into());
        }
        for c in &self.contexts {
            c.packet_limit.store(words, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Number of PEs in the group (here and elsewhere).
    pub fn pes(&self) -> usize {
        self.pes
    }

    /// The PEs of the group running in this process.
    pub fn local_pes(&self) -> impl Iterator<Item = usize> + '_ {
        self.contexts.iter().map(|c| c.pe)
    }

    /// Whether PE 0, the one that runs the program, is in this process.
    pub fn runs_program(&self) -> bool {
        self.contexts.first().is_some_and(|c| c.pe == 0)
    }

    /// PE `pe`'s runtime. Panics when PE `pe` is not in this process.
    pub fn runtime(&self, pe: usize) -> &Runtime {
        let i = self
            .contexts
            .iter()
            .position(|c| c.pe == pe)
            .unwrap_or_else(|| panic!("PE {pe} is not in this process"));
        &self.runtimes[i]
    }

    /// Runs `f` on PE 0's vproc 0 and waits for its result; the other PEs
    /// take work from it as they go idle.
    ///
    /// Errors: [`ErrorKind::Misuse`] where PE 0 is not in this process
    /// (its other PEs [`PeGroup::serve`]); the run's errors.
    pub fn run<R, F>(&self, f: F) -> Result<R>
    where
        R: Send + 'static,
        F: for<'s> FnOnce(&mut Scope<'s>) -> R + Send + 'static,
    {
        if !self.runs_program() {
            return Err(Error::misuse(
                "PeGroup::run on a process without PE 0: the program runs on PE 0, the other PEs serve",
            ));
        }
        self.runtimes[0].run_on(0, f)
    }

    /// Serves the rest of the group — answers work requests, runs the
    /// tasks it is given — until PE 0 ends the job (it drops its group)
    /// or is lost; for the PEs of a group over several processes that do
    /// not run the program.
    ///
    /// Errors: [`ErrorKind::Pe`] when PE 0 was lost (it stopped
    /// answering) rather than ending the job; [`ErrorKind::Misuse`] on
    /// the process of PE 0.
    pub fn serve(&mut self) -> Result<()> {
        if self.runs_program() {
            return Err(Error::misuse(
                "PeGroup::serve on PE 0's process: it runs the program (PeGroup::run)",
            ));
        }
        for h in self.services.drain(..) {
            let _ = h.join();
        }
        let ended = self.contexts.iter().all(|c| c.ended.load(Ordering::SeqCst));
        if ended {
            Ok(())
        } else {
            Err(ErrorKind::Pe {
                pe: 0,
                message: "PE 0 was lost before it ended the job".into(),
            }
            .into())
        }
    }

    /// Each PE's traffic, in PE order.
    pub fn stats(&self) -> Vec<PeStats> {
        self.contexts
            .iter()
            .zip(&self.runtimes)
            .map(|(c, rt)| c.stats(rt.shared()))
            .collect()
    }

    /// The errors the PEs' services met (refused messages, failed sends),
    /// taken: each PE's, in PE order.
    pub fn take_errors(&self) -> Vec<Error> {
        self.contexts
            .iter()
            .flat_map(|c| std::mem::take(&mut *lock(&c.errors)))
            .collect()
    }

    /// Stops PE `pe`'s service as a PE that crashed would stop: it
    /// answers nothing from now on, and the other PEs fail the tasks they
    /// exported to it with [`ErrorKind::Pe`] (for fault tests; its runtime
    /// goes on until the group is dropped).
    pub fn stop_pe(&self, pe: usize) {
        let Some(c) = self.contexts.get(pe) else {
            return;
        };
        c.stopping.store(true, Ordering::SeqCst);
        let _ = c.transport.send(c.pe, encode(c.pe, &Message::Stop));
    }

    /// Ends the job and gives every PE's figures, in PE order: those of
    /// this process's PEs, and, on PE 0's process, those the PEs of other
    /// processes send when they stop serving (each waited for until it
    /// comes or its PE is lost, at most `ENDED_WAIT`). First the weight
    /// books are settled ([`PeGroup::settle`]), so the figures say what
    /// was left in them (`git_entries` and `imports`: 0 when every
    /// weight came back). A group that is dropped ends the job the same
    /// way, without the settling and the figures.
    pub fn finish(mut self) -> Vec<PeStats> {
        if self.runs_program() {
            self.settle();
        }
        let remote = self.end_job();
        if let (false, Some(c)) = (remote.is_empty(), self.contexts.first()) {
            let t0 = Instant::now();
            loop {
                let waiting = {
                    let got = lock(&c.remote_stats);
                    remote.iter().any(|&p| got[p].is_none() && c.alive(p))
                };
                if !waiting || t0.elapsed() > ENDED_WAIT {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
        // The weight the other processes' PEs returned came before their
        // figures; the service has taken it by now, or takes it soon.
        let t0 = Instant::now();
        while self.contexts.iter().any(|c| c.books_len() != (0, 0))
            && !remote.is_empty()
            && t0.elapsed() < SETTLE_DRAIN
        {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        let mut all: Vec<PeStats> = self.stats();
        if let Some(c) = self.contexts.first() {
            all.extend(lock(&c.remote_stats).iter().flatten().cloned());
            all.sort_by_key(|s| s.pe);
        }
        all
    }

    /// Settles the weight books of this process's PEs after a job: each
    /// PE that holds global addresses collects and scans its imports, so
    /// that every reference the job dropped returns its weight, and the
    /// owners drop their entries — in rounds, because an entry dropped
    /// may free an indirection's FetchMe, which the next round finds dead.
    /// Returns the GIT entries and imports left over all of them (both 0
    /// where every PE of the group is in this process and the job let go
    /// of every global object; the PEs of other processes settle when the
    /// job ends). Call it between jobs, from outside the group's vprocs.
    pub fn settle(&self) -> (usize, usize) {
        let all_here = self.contexts.len() == self.pes;
        let mut last = None;
        for _ in 0..SETTLE_ROUNDS {
            for (rt, c) in self.runtimes.iter().zip(&self.contexts) {
                if c.books_len().1 > 0 {
                    let c = c.clone();
                    if let Err(e) = rt.run_on(0, move |s| c.settle(s)) {
                        self.contexts[0].record(e);
                    }
                }
            }
            // Until the weight sent between this process's PEs is taken
            // (an import scan counts its returns as sent before its
            // dropped entries show in the books, `PeContext::scan_imports`:
            // a round that reads them gone waits for their weight).
            let t0 = Instant::now();
            while all_here && t0.elapsed() < SETTLE_DRAIN {
                let (sent, taken) = self.contexts.iter().fold((0, 0), |(s, t), c| {
                    (
                        s + c.counters.weight_returned.load(Ordering::SeqCst),
                        t + c.counters.weight_received.load(Ordering::SeqCst),
                    )
                });
                if sent == taken {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
            let left = self.contexts.iter().fold((0, 0), |(g, i), c| {
                let (cg, ci) = c.books_len();
                (g + cg, i + ci)
            });
            if left == (0, 0) || last == Some(left) {
                return left;
            }
            last = Some(left);
        }
        last.unwrap_or((0, 0))
    }

    /// On PE 0's process, tells the PEs of other processes that the job
    /// is over (once: [`PeGroup::finish`], else the drop), and gives
    /// them; elsewhere, none.
    fn end_job(&mut self) -> Vec<usize> {
        if !self.runs_program() || self.stop_sent {
            return Vec::new();
        }
        self.stop_sent = true;
        let local: Vec<usize> = self.local_pes().collect();
        let c = &self.contexts[0];
        let remote: Vec<usize> = (1..self.pes).filter(|p| !local.contains(p)).collect();
        for &p in remote.iter().filter(|&&p| c.alive(p)) {
            let _ = c.transport.send(p, encode(0, &Message::Stop));
        }
        remote
    }

    /// Exported tasks still waiting for a result, over all PEs (none
    /// after a run has returned).
    pub fn tasks_in_flight(&self) -> usize {
        self.contexts.iter().map(|c| lock(&c.exported).len()).sum()
    }
}

impl Drop for PeGroup {
    fn drop(&mut self) {
        self.end_job();
        for c in &self.contexts {
            c.stopping.store(true, Ordering::SeqCst);
            // Wakes the service out of its receive.
            let _ = c.transport.send(c.pe, encode(c.pe, &Message::Stop));
        }
        for h in self.services.drain(..) {
            let _ = h.join();
        }
        for c in &self.contexts {
            c.transport.close();
        }
        // The contexts hold no runtime; the runtimes drop after this.
    }
}
