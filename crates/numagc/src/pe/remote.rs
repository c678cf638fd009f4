//! Reads and writes of global objects: the mutator's calls, and their
//! service on the owner.
//!
//! `gumsmp-shared-distributed-heaps.txt` §2.1: "writes to a remote mutable
//! object go to its owner". A mutable object that travels to another PE
//! is a FetchMe there (`super::global`), and [`Scope::remote_get`] and
//! [`Scope::remote_set`] (and their raw twins) are a round trip to its
//! owner: an `access` message, answered by a `value`. Called on a local
//! object, they are the ordinary read and write, so a program written
//! with them runs on one PE or many unchanged.
//!
//! Choice (`docs/design/global-addresses.md`): explicit calls, not a read
//! barrier on every field read — numagc has no thunks to overwrite, and a
//! barrier would cost every program, on one PE too.
//!
//! While it waits, a task blocks only itself: its vproc runs the tasks and
//! accesses other PEs sent here, and forks stolen from this PE, as a
//! forker waiting for an exported task does (`PeContext::wait_remote`).
//! The owner serves an access on one of its vprocs (an `Access` job in the
//! PE's work queue, `super::group`): the read or write needs the heap, and
//! the service thread never touches it. An access that reaches an
//! indirection goes on to the owner it stands for, from the service,
//! with the same `reply_to`, so the answer comes straight back.

use super::global::fetchme_of;
use super::group::{AccessWork, PeContext};
use super::message::{decode, is_access, is_value, AccessOp, Message};
use super::pack;
use super::weight::GlobalId;
use crate::error::{Error, ErrorKind, Result};
use crate::mutator::{Handle, Scope};
use crate::sync::{lock, Mutex};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a vproc that waits for an answer takes messages from the
/// transport itself (`Transport::poll`, over MPI) before it sleeps until
/// the service hands the answer over. An answer usually comes within a
/// round trip, and taking it saves the hand-off between the service's
/// thread and the vproc's, a futex wake-up of tens of microseconds
/// (`numagc micro fetch`). The vproc yields between probes, so that on
/// cores shared with other threads (ranks oversubscribed, the services)
/// the owner's threads still run; past this it sleeps, so that a slow
/// answer costs its core nothing.
const TAKE_ANSWER_FOR: Duration = Duration::from_micros(200);

/// What an access gets: the answer's words, or the owner's error.
pub(crate) type Outcome = std::result::Result<Vec<u64>, String>;

/// An access sent, until its answer comes.
pub(crate) struct Pending {
    /// The PE it went to (its loss fails the access).
    pub(crate) to: usize,
    outcome: Mutex<Option<Outcome>>,
    done: AtomicBool,
}

impl Pending {
    /// Completes the access: its outcome, then `done` (Release).
    pub(crate) fn finish(&self, outcome: Outcome) {
        *lock(&self.outcome) = Some(outcome);
        self.done.store(true, Ordering::Release);
    }
}

impl<'s> Scope<'s> {
    /// This runtime's place in its PE group: its PE and the group's
    /// number of PEs; `None` outside a group.
    pub fn pe(&self) -> Option<(usize, usize)> {
        self.shared().pe.get().map(|c| (c.pe, c.pes))
    }

    /// Whether `h` is a FetchMe: the local name of an object another PE
    /// of the group owns.
    pub fn is_remote(&self, h: Handle<'_>) -> bool {
        fetchme_of(self.view(h)).is_some()
    }

    /// The number of fields of `h`'s object, local or remote (a FetchMe
    /// knows its object's length); 0 for an immediate.
    pub fn remote_len(&self, h: Handle<'_>) -> usize {
        let v = self.view(h);
        match fetchme_of(v) {
            Some((_, header)) => header.len(),
            None => v.len(),
        }
    }

    /// Field `i` of `obj`, a value field: read here when `obj` is local,
    /// at its owner when it is remote (the value comes back packed: a
    /// copy of its immutable graph, its mutable objects as FetchMes).
    ///
    /// Errors: those of [`Scope::field`]; for a remote object, the
    /// owner's (an index out of bounds, a raw field) and the loss of the
    /// owner as [`ErrorKind::Pe`].
    pub fn remote_get(&mut self, obj: Handle<'_>, i: usize) -> Result<Handle<'s>> {
        let Some(target) = self.remote_target(obj, i)? else {
            return self.field(obj, i);
        };
        self.access_value(target, i, AccessOp::Get)
    }

    /// Raw field `i` of `obj`, local or remote.
    ///
    /// Errors: as [`Scope::remote_get`], for a value field.
    pub fn remote_get_raw(&mut self, obj: Handle<'_>, i: usize) -> Result<u64> {
        let Some(target) = self.remote_target(obj, i)? else {
            return self.view(obj).try_raw(i);
        };
        let pe = target.0.pe as usize;
        match self
            .access(target, i, AccessOp::GetRaw, Vec::new())?
            .as_slice()
        {
            [w] => Ok(*w),
            ws => Err(ErrorKind::Pe {
                pe,
                message: format!("a raw read answered with {} words, not 1", ws.len()),
            }
            .into()),
        }
    }

    /// Stores `value` into value field `i` of the mutable object `obj`,
    /// here or at its owner (the value travels packed, its mutable objects
    /// as global addresses).
    ///
    /// Errors: those of [`Scope::set`]; for a remote object, the owner's,
    /// a value that cannot travel ([`ErrorKind::NotExportable`]) and the
    /// loss of the owner.
    pub fn remote_set(&mut self, obj: Handle<'_>, i: usize, value: Handle<'_>) -> Result<()> {
        let Some(target) = self.remote_target(obj, i)? else {
            return self.set(obj, i, value);
        };
        let packet = target.1.pack_value(self, value)?;
        self.access(target, i, AccessOp::Set, packet).map(drop)
    }

    /// Stores `raw` into raw field `i` of the mutable object `obj`, here or
    /// at its owner.
    ///
    /// Errors: as [`Scope::remote_set`].
    pub fn remote_set_raw(&mut self, obj: Handle<'_>, i: usize, raw: u64) -> Result<()> {
        let Some(target) = self.remote_target(obj, i)? else {
            return self.set_raw(obj, i, raw);
        };
        self.access(target, i, AccessOp::SetRaw, vec![raw])
            .map(drop)
    }

    /// `h`'s value here: for a FetchMe of an immutable object, a copy of
    /// the object's graph, fetched from its owner (GUM's fetch, §2.1;
    /// only this task waits). Below the copied object, objects past the
    /// packet limit come as FetchMes in turn, to resolve when reached.
    /// Anything else — a local value, a FetchMe of a mutable object (its
    /// fields are read with [`Scope::remote_get`]) — is `h` itself.
    ///
    /// Each call fetches again: keep the copy's handle to use it twice.
    ///
    /// Errors: the owner's, and its loss, as [`ErrorKind::Pe`]; the
    /// allocation errors.
    pub fn resolve(&mut self, h: Handle<'_>) -> Result<Handle<'s>> {
        let shared = self.shared();
        let v = self.view(h);
        let immutable_remote = fetchme_of(v).is_some_and(|(_, header)| {
            let id = header.id();
            id == crate::object::header::ID_RAW
                || id == crate::object::header::ID_VECTOR
                || shared
                    .descs
                    .get(id)
                    .is_some_and(|d| !d.is_mutable() && id != crate::object::header::ID_FETCHME)
        });
        if !immutable_remote {
            let w = self.word(h);
            return Ok(self.push_root(w));
        }
        let target = self.remote_target(h, 0)?.expect("a FetchMe");
        self.access_value(target, 0, AccessOp::Fetch)
    }

    /// A read or a fetch (`op`) whose answer is one packed value,
    /// unpacked here.
    fn access_value(
        &mut self,
        target: (GlobalId, Arc<PeContext>),
        field: usize,
        op: AccessOp,
    ) -> Result<Handle<'s>> {
        let (owner, ctx) = (target.0.pe as usize, target.1.clone());
        let words = self.access(target, field, op, Vec::new())?;
        ctx.unpack_one(self, &words, owner, &format_args!("the answer to {op:?}"))
    }

    /// The GA and PE context of `obj` when it is a FetchMe, its index
    /// checked against the remote object's length; `None` for a local
    /// object.
    fn remote_target(
        &mut self,
        obj: Handle<'_>,
        i: usize,
    ) -> Result<Option<(GlobalId, Arc<PeContext>)>> {
        let v = self.view(obj);
        let Some((gid, header)) = fetchme_of(v) else {
            return Ok(None);
        };
        if i >= header.len().max(1) {
            return Err(Error::misuse(format!(
                "field {i} of a remote object of {} fields (global object {}/{})",
                header.len(),
                gid.pe,
                gid.id
            )));
        }
        match self.vproc_mut().shared.pe.get() {
            Some(c) if (gid.pe as usize) < c.pes => Ok(Some((gid, c.clone()))),
            _ => Err(Error::misuse(format!(
                "a FetchMe of PE {} on a runtime outside its group",
                gid.pe
            ))),
        }
    }

    /// Sends an access to the owner and waits for its answer.
    fn access(
        &mut self,
        (gid, ctx): (GlobalId, Arc<PeContext>),
        field: usize,
        op: AccessOp,
        packet: Vec<u64>,
    ) -> Result<Vec<u64>> {
        ctx.access(self, gid, field, op, packet)
    }
}

impl PeContext {
    /// Packs `value` for a write to another PE, with global addresses.
    fn pack_value(&self, s: &mut Scope<'_>, value: Handle<'_>) -> Result<Vec<u64>> {
        let t0 = Instant::now();
        let r = pack::pack_in(s, &[value], self.task_packing(), self);
        self.add_ns(&self.counters.pack_ns, t0);
        r
    }

    /// Sends access `op` of field `field` of `gid` and waits on `s`'s
    /// vproc for the answer, running work sent to this PE meanwhile.
    fn access(
        &self,
        s: &mut Scope<'_>,
        gid: GlobalId,
        field: usize,
        op: AccessOp,
        packet: Vec<u64>,
    ) -> Result<Vec<u64>> {
        let owner = gid.pe as usize;
        let req = self.next_req.fetch_add(1, Ordering::Relaxed);
        let p = Arc::new(Pending {
            to: owner,
            outcome: Mutex::new(None),
            done: AtomicBool::new(false),
        });
        lock(&self.requests).insert(req, p.clone());
        self.counters.accesses.fetch_add(1, Ordering::Relaxed);
        let m = Message::Access {
            req,
            reply_to: self.pe as u32,
            gid: gid.id,
            field: field as u64,
            op,
            packet,
        };
        if let Err(e) = self.send(owner, &m) {
            lock(&self.requests).remove(&req);
            return Err(e);
        }
        let t0 = Instant::now();
        self.take_answer(s, &p);
        self.wait_done(s, &|| p.done.load(Ordering::Acquire));
        self.add_ns(&self.counters.access_wait_ns, t0);
        let outcome = lock(&p.outcome)
            .take()
            .expect("a done access has its outcome");
        outcome.map_err(|message| {
            ErrorKind::Pe {
                pe: owner,
                message: format!("access to global object {}/{}: {message}", gid.pe, gid.id),
            }
            .into()
        })
    }

    /// Takes the messages that come, for at most `TAKE_ANSWER_FOR`, until
    /// `p` is answered: the answers of this PE's accesses (this one's or
    /// another vproc's, which it rings) it gives to their waiters itself;
    /// everything else goes on to the service. It stops early when a
    /// collection is requested: the wait that follows joins it.
    fn take_answer(&self, s: &Scope<'_>, p: &Pending) {
        if !self.transport.polls() {
            return;
        }
        let shared = s.shared();
        let t0 = Instant::now();
        while !p.done.load(Ordering::Acquire)
            && !shared.coord.pending()
            && t0.elapsed() < TAKE_ANSWER_FOR
        {
            let got = self
                .transport
                .poll(&mut |from, bytes| self.take_value(&shared, from, bytes));
            if !got {
                std::thread::yield_now();
            }
        }
    }

    /// Gives a `value` message to the access it answers; `false` (the
    /// service is to have it, and refuse it if it must) for any other
    /// message, a `value` that does not decode, or one that answers no
    /// access of this PE.
    fn take_value(&self, shared: &crate::vproc::Shared, from: usize, bytes: &[u8]) -> bool {
        if !is_value(bytes) {
            return false;
        }
        let Ok(Message::Value { req, outcome }) = decode(from, self.pes, bytes) else {
            return false;
        };
        if self.answer(req, outcome).is_err() {
            return false;
        }
        super::service::ring_all(shared);
        true
    }

    /// Serves the reads that come after a job served reads on an idle
    /// vproc (the service's job for reads, `Service::submit_reads`),
    /// taking them from the transport itself for at most
    /// `TAKE_ANSWER_FOR` after the last one: the owner's half of what
    /// [`PeContext::take_answer`] saves the asker, the hand-off from the
    /// service to a vproc woken for each read. Only reads of objects this
    /// PE holds (no indirection) are taken; everything else goes on to
    /// the service, and the reads the service queues meanwhile are served
    /// here too. It stops at once for anything else the vproc has to do:
    /// a collection, a job (another PE's task or write, which the reads
    /// must not starve), work to steal.
    pub(super) fn keep_serving_reads(&self, s: &mut Scope<'_>) {
        if !self.transport.polls() {
            return;
        }
        let shared = s.shared();
        let me = s.vproc();
        let mut last = Instant::now();
        while !shared.coord.pending()
            && !shared.coord.interrupted(me)
            && !shared.sched.has_work(me)
            && last.elapsed() < TAKE_ANSWER_FOR
        {
            let got = self
                .transport
                .poll(&mut |from, bytes| self.take_read(from, bytes));
            if self.has_reads.load(Ordering::Acquire) {
                self.serve_reads(s);
                last = Instant::now();
            } else if !got {
                std::thread::yield_now();
            }
        }
    }

    /// Queues an `access` message that reads an object this PE holds;
    /// `false` for anything else (the service's).
    fn take_read(&self, from: usize, bytes: &[u8]) -> bool {
        if !is_access(bytes) {
            return false;
        }
        let Some(a) = decode(from, self.pes, bytes).ok().and_then(AccessWork::of) else {
            return false;
        };
        if a.writes() || lock(&self.books).git.get(a.gid).map(|e| e.forward) != Some(None) {
            return false;
        }
        self.push_read(a);
        true
    }

    /// The answer to access `req` came (the service, on `value`). The
    /// outcome comes back when no access of that id waits (its packet's
    /// weight is to be given back).
    pub(crate) fn answer(&self, req: u64, outcome: Outcome) -> std::result::Result<(), Outcome> {
        match lock(&self.requests).remove(&req) {
            Some(p) => {
                p.finish(outcome);
                Ok(())
            }
            None => Err(outcome),
        }
    }

    /// Fails the accesses sent to PE `pe`, which was lost.
    pub(crate) fn fail_accesses_to(&self, pe: usize, why: &str) -> usize {
        let failed: Vec<Arc<Pending>> = {
            let mut rs = lock(&self.requests);
            let ids: Vec<u64> = rs
                .iter()
                .filter(|(_, p)| p.to == pe)
                .map(|(&id, _)| id)
                .collect();
            ids.iter().filter_map(|id| rs.remove(id)).collect()
        };
        for p in &failed {
            p.finish(Err(format!("PE {pe} was lost: {why}")));
        }
        failed.len()
    }

    /// The PEs that accesses wait on.
    pub(crate) fn access_targets(&self) -> Vec<usize> {
        let mut ps: Vec<usize> = lock(&self.requests).values().map(|p| p.to).collect();
        ps.sort_unstable();
        ps.dedup();
        ps
    }

    /// Serves an access to one of this PE's global objects, on `s`'s
    /// vproc, and sends the answer.
    pub(crate) fn serve_access(&self, s: &mut Scope<'_>, a: AccessWork) {
        self.counters
            .accesses_served
            .fetch_add(1, Ordering::Relaxed);
        let outcome = s
            .scope(|s| self.do_access(s, &a))
            .map_err(|e| e.to_string());
        let m = Message::Value {
            req: a.req,
            outcome,
        };
        self.send_or_record(a.reply_to, &m);
    }

    fn do_access(&self, s: &mut Scope<'_>, a: &AccessWork) -> Result<Vec<u64>> {
        let Some(obj) = self.global_object(s, a.gid) else {
            if a.op == AccessOp::Set {
                // The value will not be stored: its weight goes back.
                self.give_back(&s.shared(), &a.packet, a.reply_to);
            }
            return Err(Error::misuse(format!(
                "no global object {}/{} (all its weight came back)",
                self.pe, a.gid
            )));
        };
        let field = usize::try_from(a.field).unwrap_or(usize::MAX);
        match a.op {
            AccessOp::Get => {
                let v = s.field(obj, field)?;
                if !self.is_value_field(s, obj, field) {
                    return Err(Error::misuse(format!("field {field} is raw, not a value")));
                }
                let t0 = Instant::now();
                let answer = pack::Packing::Answer {
                    limit: self.packet_limit(),
                };
                let r = pack::pack_in(s, &[v], answer, self);
                self.add_ns(&self.counters.pack_ns, t0);
                r
            }
            AccessOp::GetRaw => {
                if self.is_value_field(s, obj, field) {
                    return Err(Error::misuse(format!("field {field} is a value, not raw")));
                }
                Ok(vec![s.view(obj).try_raw(field)?])
            }
            AccessOp::Set => {
                let hs = pack::unpack_in(s, &a.packet, a.reply_to, Some(self))?;
                let [v] = hs.as_slice() else {
                    return Err(Error::misuse(format!(
                        "a write of {} values, not 1",
                        hs.len()
                    )));
                };
                s.set(obj, field, *v)?;
                Ok(Vec::new())
            }
            AccessOp::Fetch => {
                if self.is_mutable(s, obj) {
                    return Err(Error::misuse(
                        "a mutable object is not fetched: its fields are read where it lives",
                    ));
                }
                let t0 = Instant::now();
                let answer = pack::Packing::Answer {
                    limit: self.packet_limit(),
                };
                let r = pack::pack_in(s, &[obj], answer, self);
                self.add_ns(&self.counters.pack_ns, t0);
                r
            }
            AccessOp::SetRaw => {
                let [w] = a.packet.as_slice() else {
                    return Err(Error::misuse(format!(
                        "a raw write of {} words, not 1",
                        a.packet.len()
                    )));
                };
                s.set_raw(obj, field, *w)?;
                Ok(Vec::new())
            }
        }
    }

    fn is_mutable(&self, s: &Scope<'_>, obj: Handle<'_>) -> bool {
        match s.view(obj).kind() {
            Some(crate::ObjectKind::Array) => true,
            Some(crate::ObjectKind::Mixed(d)) => {
                s.shared().descs.get(d.id()).is_some_and(|d| d.is_mutable())
            }
            _ => false,
        }
    }

    fn is_value_field(&self, s: &Scope<'_>, obj: Handle<'_>, i: usize) -> bool {
        let v = s.view(obj);
        match v.kind() {
            Some(crate::ObjectKind::Mixed(d)) => s
                .shared()
                .descs
                .get(d.id())
                .is_some_and(|d| d.is_pointer_field(i)),
            Some(crate::ObjectKind::Raw) | None => false,
            _ => true,
        }
    }
}
