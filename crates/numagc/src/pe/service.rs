//! A PE's service thread: the work protocol of
//! `gumsmp-shared-distributed-heaps.txt` §2.1 (work requests, tasks sent
//! with their packed arguments, results sent back), run for one PE; the
//! module doc of `super::group` says what it does and why.

use super::group::{AccessWork, Imported, Offered, PeContext, PeStats, Work};
use super::message::{decode, AccessOp, Message};
use super::transport::Liveness;
use crate::error::{Error, ErrorKind};
use crate::sync::lock;
use crate::vproc::Shared;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub(super) const MIN_BACKOFF: Duration = Duration::from_micros(50);
const MAX_BACKOFF: Duration = Duration::from_millis(2);
/// A work request unanswered this long is given up (its PE may have
/// stopped) and another is sent.
const FISH_TIMEOUT: Duration = Duration::from_millis(200);
/// How long a PE of another process settles its weight books at the end
/// of a job before it reports them (`Service::settle_here`).
const SETTLE_WAIT: Duration = Duration::from_secs(2);

/// Wakes every vproc of the runtime waiting in a join or for a remote
/// result (they test what they wait for under their doorbell's lock).
pub(super) fn ring_all(shared: &Shared) {
    for v in 0..shared.coord.vprocs() {
        shared.coord.bell(v).ring();
    }
}

/// The service thread's state.
pub(super) struct Service {
    pub(super) ctx: Arc<PeContext>,
    pub(super) shared: Arc<Shared>,
    pub(super) fishing: Option<Instant>,
    pub(super) next_fish: Instant,
    pub(super) backoff: Duration,
    pub(super) next_vproc: usize,
    pub(super) rng: u64,
    /// The runtime's collection count at the last import scan.
    pub(super) scanned_at: u64,
}

impl Service {
    pub(super) fn run(mut self) {
        while !self.ctx.stopping.load(Ordering::SeqCst) {
            let wait = if self.fishing.is_some() {
                FISH_TIMEOUT
            } else {
                self.next_fish
                    .saturating_duration_since(Instant::now())
                    .clamp(MIN_BACKOFF, MAX_BACKOFF)
            };
            match self.ctx.transport.recv(wait) {
                Ok(Some((from, bytes))) => match decode(from, self.ctx.pes, &bytes) {
                    Ok(Message::Stop) if from != self.ctx.pe && from != 0 => self.refuse(
                        from,
                        ErrorKind::Pe {
                            pe: from,
                            message: "refused message: stop from a PE that does not run the job"
                                .into(),
                        }
                        .into(),
                    ),
                    Ok(Message::Stop) => {
                        if from != self.ctx.pe {
                            // PE 0 ended the job: the weight of the
                            // references that died here goes home, then
                            // this PE's figures go to PE 0.
                            self.settle_here();
                            let stats = self.ctx.stats(&self.shared).to_words();
                            self.ctx.send_or_record(0, &Message::Ended { stats });
                            self.ctx.ended.store(true, Ordering::SeqCst);
                        }
                        break;
                    }
                    Ok(m) => self.handle(from, m),
                    Err(e) => self.refuse(from, e),
                },
                Ok(None) => {}
                Err(e) => {
                    self.ctx.record(e);
                    break;
                }
            }
            if self.fishing.is_some_and(|t| t.elapsed() > FISH_TIMEOUT) {
                self.fishing = None;
            }
            self.fail_tasks_of_stopped_pes();
            self.maybe_scan();
            // A PE of another process whose PE 0 is lost has no job left.
            if self.ctx.pe != 0 && !self.ctx.transport.peer_alive(0) {
                break;
            }
            self.maybe_fish();
        }
    }

    /// Whether to ask for work: no imported task waits, and a vproc
    /// sleeps idle while this PE offers nothing (its idle vprocs would
    /// steal an offer themselves), or a vproc waits for a remote result
    /// (it cannot run this PE's own offers, which are forks of frames
    /// below it, so it asks even when there are some).
    fn wants_work(&self) -> bool {
        if self.ctx.has_imported() {
            return false;
        }
        self.ctx.remote_waiters.load(Ordering::SeqCst) > 0
            || (self.shared.coord.sleepers() > 0 && !self.ctx.has_offers())
    }

    fn maybe_fish(&mut self) {
        if self.fishing.is_some() || Instant::now() < self.next_fish || !self.wants_work() {
            return;
        }
        let (me, pes) = (self.ctx.pe, self.ctx.pes);
        let alive: Vec<usize> = (0..pes).filter(|&p| p != me && self.ctx.alive(p)).collect();
        if alive.is_empty() {
            return;
        }
        // xorshift64: a victim chosen at random, as GUM's FISH goes.
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let victim = alive[(self.rng % alive.len() as u64) as usize];
        match self.ctx.send(victim, &Message::Fish) {
            Ok(()) => {
                self.ctx.counters.fish_sent.fetch_add(1, Ordering::Relaxed);
                self.fishing = Some(Instant::now());
            }
            Err(e) => self.ctx.record(e),
        }
    }

    fn handle(&mut self, from: usize, m: Message) {
        let ctx = self.ctx.clone();
        match m {
            Message::Fish => {
                match ctx.take_offer(from) {
                    Some(o) => {
                        // The forker packs the arguments and sends the
                        // task (`PeContext::serve_pack_requests`).
                        let task = ctx.next_task.fetch_add(1, Ordering::Relaxed);
                        lock(&ctx.exported).insert(task, o.clone());
                        ctx.counters.tasks_exported.fetch_add(1, Ordering::Relaxed);
                        ctx.request_pack(&self.shared, task, o);
                    }
                    None => {
                        ctx.send_or_record(from, &Message::NoWork);
                    }
                }
            }
            Message::NoWork => {
                ctx.counters.no_work.fetch_add(1, Ordering::Relaxed);
                self.fishing = None;
                self.next_fish = Instant::now() + self.backoff;
                self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
            }
            Message::Schedule {
                task,
                export,
                name_hash,
                args,
            } => {
                self.fishing = None;
                self.backoff = MIN_BACKOFF;
                let Some(e) = ctx.exports.get(export, name_hash) else {
                    ctx.give_back(&self.shared, &args, from);
                    let outcome = Err(format!(
                        "PE {} has no exportable function {export} of that name",
                        ctx.pe
                    ));
                    ctx.send_or_record(from, &Message::Result { task, outcome });
                    return;
                };
                ctx.counters.tasks_imported.fetch_add(1, Ordering::Relaxed);
                self.give_work(Work::Task(Imported {
                    from,
                    task,
                    export: e,
                    args,
                }));
            }
            m @ Message::Access { .. } => {
                let a = AccessWork::of(m).expect("an access message");
                let forward = lock(&ctx.books).git.get(a.gid).map(|e| e.forward);
                match forward {
                    // An indirection: on to the owner it stands for; the
                    // answer goes straight to `reply_to`.
                    Some(Some(g)) => ctx.send_or_record(g.pe as usize, &a.message_to(g.id)),
                    Some(None) if a.writes() => self.give_work(Work::Access(a)),
                    Some(None) => {
                        // A read: an idle vproc's job, or a busy vproc's
                        // next safepoint, whichever comes first.
                        ctx.push_read(a);
                        let v = self.next_vproc();
                        self.shared.coord.signal(v);
                        self.submit(v, Work::Reads);
                    }
                    None => {
                        if a.op == AccessOp::Set {
                            ctx.give_back(&self.shared, &a.packet, from);
                        }
                        let outcome = Err(format!(
                            "no global object {}/{} (never exported, or all its weight came \
                             back)",
                            ctx.pe, a.gid
                        ));
                        ctx.send_or_record(
                            a.reply_to,
                            &Message::Value {
                                req: a.req,
                                outcome,
                            },
                        );
                    }
                }
            }
            Message::Value { req, outcome } => {
                let Err(outcome) = ctx.answer(req, outcome) else {
                    ring_all(&self.shared);
                    return;
                };
                if let Ok(words) = outcome {
                    ctx.give_back(&self.shared, &words, from);
                }
                self.refuse(
                    from,
                    ErrorKind::Pe {
                        pe: from,
                        message: format!("refused message: answer to unknown access {req}"),
                    }
                    .into(),
                );
            }
            Message::ReturnWeight { gid, weight } => {
                if let Err(e) = ctx.weight_returned(&self.shared, from, gid, weight) {
                    self.refuse(from, e);
                }
            }
            Message::Result { task, outcome } => {
                let Some(o) = lock(&ctx.exported).remove(&task) else {
                    if let Ok(words) = &outcome {
                        ctx.give_back(&self.shared, words, from);
                    }
                    self.refuse(
                        from,
                        ErrorKind::Pe {
                            pe: from,
                            message: format!("refused message: result of unknown task {task}"),
                        }
                        .into(),
                    );
                    return;
                };
                o.finish(outcome.map_err(|message| {
                    ErrorKind::Pe {
                        pe: from,
                        message: format!("exported task failed there: {message}"),
                    }
                    .into()
                }));
                ring_all(&self.shared);
            }
            Message::Declined { task, reason } => {
                let Some(o) = lock(&ctx.exported).remove(&task) else {
                    self.refuse(
                        from,
                        ErrorKind::Pe {
                            pe: from,
                            message: format!("refused message: declined unknown task {task}"),
                        }
                        .into(),
                    );
                    return;
                };
                // The forker runs the task itself (`fork.rs`).
                o.finish(Err(ErrorKind::NotExportable(format!(
                    "the result of PE {from}: {reason}"
                ))
                .into()));
                ring_all(&self.shared);
            }
            Message::Ended { stats } => match PeStats::from_words(from, &stats) {
                Some(st) if ctx.pe == 0 => lock(&ctx.remote_stats)[from] = Some(st),
                _ => self.refuse(
                    from,
                    ErrorKind::Pe {
                        pe: from,
                        message:
                            "refused message: figures of another PE, or sent to a PE other than 0"
                                .into(),
                    }
                    .into(),
                ),
            },
            Message::Stop => {}
        }
    }

    /// Settles this PE's books at the end of a job of a group over
    /// several processes: a vproc collects and scans the imports (their
    /// weight goes back), then the service takes the weight that comes
    /// back here, until the books are empty or `SETTLE_WAIT` has passed.
    fn settle_here(&mut self) {
        if self.ctx.books_len() == (0, 0) {
            return;
        }
        let done = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (c, d) = (self.ctx.clone(), done.clone());
        crate::runtime::submit_detached(&self.shared, 0, move |s| {
            c.settle(s);
            d.store(true, Ordering::Release);
        });
        let t0 = Instant::now();
        while t0.elapsed() < SETTLE_WAIT {
            if done.load(Ordering::Acquire) && self.ctx.books_len() == (0, 0) {
                return;
            }
            if let Ok(Some((from, bytes))) = self.ctx.transport.recv(Duration::from_millis(1)) {
                match decode(from, self.ctx.pes, &bytes) {
                    Ok(Message::Stop) => {}
                    Ok(m) => self.handle(from, m),
                    Err(e) => self.refuse(from, e),
                }
            }
        }
    }

    /// Queues work for this PE's vprocs: a job for an idle vproc, and a
    /// ring for waiting ones; whichever comes first runs it.
    fn give_work(&mut self, w: Work) {
        let v = self.next_vproc();
        self.submit(v, w);
    }

    /// The vproc to give the next job to, round robin.
    fn next_vproc(&mut self) -> usize {
        let v = self.next_vproc % self.shared.coord.vprocs();
        self.next_vproc += 1;
        v
    }

    /// Queues `w` and gives vproc `v` a job that runs the queue; rings
    /// the waiting vprocs. A job given reads goes on taking the reads that
    /// follow from the transport itself (`PeContext::keep_serving_reads`).
    fn submit(&mut self, v: usize, w: Work) {
        let reads = matches!(w, Work::Reads);
        self.ctx.push_work(w);
        let c = self.ctx.clone();
        crate::runtime::submit_detached(&self.shared, v, move |s| {
            c.run_imported(s);
            if reads {
                c.keep_serving_reads(s);
            }
        });
        ring_all(&self.shared);
    }

    /// Asks a vproc to scan the imports when a collection has run since
    /// the last scan and some are held (`super::global`).
    fn maybe_scan(&mut self) {
        // Cheapest first: the service loops often, and the collection
        // count is read under the collector's lock.
        if self.ctx.scan_pending.load(Ordering::Acquire) || self.ctx.books_len().1 == 0 {
            return;
        }
        let collections = self.shared.coord.collections();
        if collections == self.scanned_at || self.ctx.scan_pending.swap(true, Ordering::AcqRel) {
            return;
        }
        self.scanned_at = collections;
        let c = self.ctx.clone();
        let v = self.next_vproc();
        crate::runtime::submit_detached(&self.shared, v, move |s| {
            c.scan_imports(s);
            c.scan_pending.store(false, Ordering::Release);
        });
    }

    /// A refused message: counted and recorded; what was exported to its
    /// sender fails (a result may have been the message refused).
    fn refuse(&mut self, from: usize, e: Error) {
        self.ctx.counters.refused.fetch_add(1, Ordering::Relaxed);
        self.fail_exported_to(from, &e.to_string());
        self.ctx.record(e);
    }

    fn fail_exported_to(&self, pe: usize, why: &str) {
        if self.ctx.fail_accesses_to(pe, why) > 0 {
            ring_all(&self.shared);
        }
        let failed: Vec<Arc<Offered>> = {
            let mut ex = lock(&self.ctx.exported);
            let ids: Vec<u64> = ex
                .iter()
                .filter(|(_, o)| o.to.load(Ordering::Acquire) == pe)
                .map(|(&id, _)| id)
                .collect();
            ids.iter().filter_map(|id| ex.remove(id)).collect()
        };
        if failed.is_empty() {
            return;
        }
        for o in failed {
            o.finish(Err(ErrorKind::Pe {
                pe,
                message: format!("exported task lost: {why}"),
            }
            .into()));
        }
        ring_all(&self.shared);
    }

    fn fail_tasks_of_stopped_pes(&self) {
        let stopped: Vec<usize> = {
            let ex = lock(&self.ctx.exported);
            let mut ps: Vec<usize> = ex
                .values()
                .map(|o| o.to.load(Ordering::Acquire))
                .chain(self.ctx.access_targets())
                .filter(|&p| p < self.ctx.pes && !self.ctx.alive(p))
                .collect();
            ps.sort_unstable();
            ps.dedup();
            ps
        };
        for p in stopped {
            self.fail_exported_to(p, "the PE stopped");
        }
    }
}

/// Marks its PE stopped when the service ends, by returning or unwinding.
pub(super) struct StopMark(pub(super) Arc<Liveness>, pub(super) usize);

impl Drop for StopMark {
    fn drop(&mut self) {
        self.0.stopped(self.1);
    }
}
