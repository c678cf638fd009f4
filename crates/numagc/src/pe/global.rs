//! Global addresses wired to the heap: the global indirection table (GIT)
//! as a root set, FetchMes, the import table held weakly, and
//! the weight that comes back when a FetchMe dies.
//!
//! `gumsmp-shared-distributed-heaps.txt` §2.1: an object that cannot be
//! copied to another PE travels as a global address (GA: owner PE, id in
//! the owner's GIT, weight); the receiver holds it as a **FetchMe**, and
//! weighted reference counting tells the owner when no PE holds it any
//! more. `super::weight` keeps the books; this module ties them to the
//! heap. The plan it follows, and the choices, are in
//! `docs/design/global-addresses.md`.
//!
//! What travels as a GA (`super::pack`): a mutable object (an array, a
//! mixed object of a mutable descriptor), whose reads and writes then go
//! to its owner (`super::remote`); and a FetchMe, which is sent on as the
//! GA it stands for, with half of the weight held here.
//!
//! # The owner's side
//! - A GIT entry ([`Exported`]) holds its object in a global-root slot, so
//!   the object lives, and both plans' collectors update the slot when they
//!   move it (`crate::mutator::roots`). The slot is freed when the entry's
//!   last weight comes back ([`PeContext::weight_returned`]).
//! - An object exported twice gets one id while its entry lives
//!   ([`super::weight::Git::share`]): `reverse` maps the object's address
//!   at export to its id, and a look-up is trusted only when the entry's
//!   root still holds that address (a collection may have moved the object
//!   and given the address to another; then the object gets a second id,
//!   which is correct, only less shared).
//! - A GA of this PE that comes back in a packet is its object again; its
//!   weight is returned at once ([`PeContext::import_global`]).
//!
//! # The holder's side
//! - Each GA held is one FetchMe (`ID_FETCHME`: owner, id, the remote
//!   object's header) and one [`Imported`] entry, which holds the FetchMe
//!   through a weak reference kept in a global-root slot. So an object
//!   imported twice is one FetchMe, and the import table keeps no
//!   FetchMe alive.
//! - After collections, a vproc scans the imports ([`PeContext::scan_imports`]):
//!   an entry whose FetchMe died is dropped, and its weight goes back to
//!   the owner in a `return-weight` message. The service asks for a scan
//!   when the runtime's collection count has moved.
//! - Weight underflow (a FetchMe holding a weight of 1 sent on) makes an
//!   *indirection*: this PE exports its FetchMe under a GA of its own, with
//!   full weight, whose entry `forward`s accesses to the real owner
//!   (`super::weight`'s module doc says why this choice).
//!
//! # Invariants
//! - Nothing allocates in the heap while `books` is locked: an allocation
//!   may collect, and a collection waits for every vproc of the PE, one of
//!   which may be waiting for the lock. [`PeContext::import_global`]
//!   therefore makes its FetchMe first and takes the lock after; under the
//!   lock it joins a live entry or replaces a dead one, never one the scan
//!   has dropped (the scan holds the same lock).
//! - Every GA a failed packing made or split is undone ([`GaUndo`]), so a
//!   packet that never leaves takes no weight with it.
//! - A packet whose message is refused (a task of an unknown function, a
//!   write to an object that is gone, an answer no one waits for) gives
//!   the weight of its GAs back to their owners ([`PeContext::give_back`]),
//!   as if it had been unpacked and dropped. (A packet that breaks the
//!   format gives nothing back, and one whose unpacking stops at the heap
//!   limit keeps the weight of the GAs it did not reach: both are errors
//!   of the job.)

use super::group::PeContext;
use super::weight::{Git, GlobalAddress, GlobalId, Imports, Split, WeightError};
use crate::error::{Error, ErrorKind, Result};
use crate::mutator::resolve;
use crate::mutator::{Handle, Scope};
use crate::object::descriptor::Descriptor;
use crate::object::header::{Header, ID_ARRAY, ID_FETCHME, ID_LIMIT};
use crate::object::is_pointer;
use crate::sync::lock;
use crate::vproc::Shared;
use crate::{ObjectKind, View};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// The fields of a FetchMe: the owner PE, the id in its GIT, and the
/// header word of the object it stands for (its kind and length, so that
/// bounds are checked before a message goes).
pub(crate) const FM_PE: usize = 0;
pub(crate) const FM_ID: usize = 1;
pub(crate) const FM_HEADER: usize = 2;
const FETCHME_SIZE: usize = 3;

/// The built-in descriptor of FetchMes (`ID_FETCHME`):
/// immutable, no value field.
pub(crate) fn fetchme_descriptor() -> Descriptor {
    Descriptor::mixed("numagc.fetchme", FETCHME_SIZE, &[]).expect("the FetchMe layout is valid")
}

/// The GA a FetchMe stands for and its object's header, if `v` is one.
pub(crate) fn fetchme_of(v: View<'_>) -> Option<(GlobalId, Header)> {
    match v.kind() {
        Some(ObjectKind::Mixed(d)) if d.id() == ID_FETCHME => Some((
            GlobalId {
                pe: v.raw(FM_PE) as u32,
                id: v.raw(FM_ID),
            },
            Header::decode(v.raw(FM_HEADER))?,
        )),
        _ => None,
    }
}

/// The header word of an object, as a FetchMe keeps it.
pub(crate) fn header_of(v: View<'_>) -> u64 {
    let id = match v.kind() {
        Some(ObjectKind::Mixed(d)) => d.id(),
        Some(ObjectKind::Array) => ID_ARRAY,
        Some(ObjectKind::Vector) => crate::object::header::ID_VECTOR,
        _ => crate::object::header::ID_RAW,
    };
    Header::new(id, v.len() as u64).bits()
}

/// A header word a packet may carry for a GA: a valid header of a known
/// kind (checked before a FetchMe keeps it).
pub(crate) fn valid_header(w: u64) -> Option<Header> {
    Header::decode(w).filter(|h| u32::from(h.id()) < ID_LIMIT)
}

/// A GIT entry: the exported object, rooted.
pub(crate) struct Exported {
    /// The global-root slot that holds the object.
    slot: usize,
    /// The object's address when exported (its key in `Books::reverse`).
    identity: u64,
    /// For an indirection: the GA this PE's FetchMe stands for, where
    /// accesses go on to.
    pub(crate) forward: Option<GlobalId>,
}

/// An import entry: a weak reference to the one FetchMe of a GA, in a
/// global-root slot.
pub(crate) struct Imported {
    weak_slot: usize,
}

/// One PE's weight books, tied to its heap.
pub(crate) struct Books {
    pub(crate) git: Git<Exported>,
    reverse: HashMap<u64, u64>,
    pub(crate) imports: Imports<Imported>,
}

impl Books {
    pub(crate) fn new(pe: usize) -> Books {
        Books {
            git: Git::new(pe as u32),
            reverse: HashMap::new(),
            imports: Imports::default(),
        }
    }

    /// The live GIT id of the object at `identity`, if it was exported
    /// and has not moved since.
    fn id_of(&self, shared: &Shared, identity: u64) -> Option<u64> {
        let id = *self.reverse.get(&identity)?;
        let e = self.git.get(id)?;
        (resolve(shared.global_roots.get(e.slot)) == identity).then_some(id)
    }

    /// A share of weight for the object `v` (exported before or now).
    fn share(&mut self, shared: &Shared, v: View<'_>, forward: Option<GlobalId>) -> GlobalAddress {
        let identity = v.identity();
        let known = self.id_of(shared, identity);
        let ga = self.git.share(known, || Exported {
            slot: shared.global_roots.add(identity),
            identity,
            forward,
        });
        if known.is_none() {
            self.reverse.insert(identity, ga.gid.id);
        }
        ga
    }

    /// `weight` of this PE's entry `id` comes back: the entry, and its
    /// root, go with the last of it. Errors as [`Git::returned`] (the
    /// books are left as they were).
    fn take_back(&mut self, shared: &Shared, id: u64, weight: u32) -> Result<(), WeightError> {
        if let Some(e) = self.git.returned(id, weight)? {
            self.release(shared, id, e);
        }
        Ok(())
    }

    /// Frees a dropped entry's root.
    fn release(&mut self, shared: &Shared, id: u64, e: Exported) {
        shared.global_roots.remove(e.slot);
        if self.reverse.get(&e.identity) == Some(&id) {
            self.reverse.remove(&e.identity);
        }
    }
}

/// What a packing did to the books, undone if the packet never leaves.
#[derive(Default)]
pub(crate) struct GaUndo {
    /// Shares of this PE's entries given out.
    owned: Vec<GlobalAddress>,
    /// Shares split from FetchMes held here.
    split: Vec<GlobalAddress>,
}

impl GaUndo {
    /// Gives the weight back: the packet was not sent.
    pub(crate) fn undo(self, ctx: &PeContext, shared: &Shared) {
        let mut b = lock(&ctx.books);
        for ga in self.owned {
            // The share was taken from this entry: it cannot be refused.
            let _ = b.take_back(shared, ga.gid.id, ga.weight);
        }
        for ga in self.split {
            // The FetchMe is alive (it was being packed): its entry is.
            let _ = b
                .imports
                .import(ga, || unreachable!("a split entry is held"));
        }
    }
}

impl PeContext {
    /// The GA `v` travels as, with the header of the object it names
    /// (`super::pack`, for a mutable object or a FetchMe), its weight
    /// noted in `undo`.
    ///
    /// Errors: [`ErrorKind::NotExportable`] for an object in a private
    /// heap (mutable objects and FetchMes never are) or a FetchMe this PE
    /// does not hold.
    pub(crate) fn export_global(
        &self,
        shared: &Shared,
        v: View<'_>,
        is_private: bool,
        undo: &mut GaUndo,
    ) -> Result<(GlobalAddress, u64)> {
        if is_private {
            return Err(ErrorKind::NotExportable(format!(
                "{v:?} is in a private heap and cannot be a global object"
            ))
            .into());
        }
        let mut b = lock(&self.books);
        if let Some((gid, header)) = fetchme_of(v) {
            return match b.imports.split(gid) {
                Ok(Split::Half(ga)) => {
                    undo.split.push(ga);
                    Ok((ga, header.bits()))
                }
                Ok(Split::Underflow) => {
                    let ga = b.share(shared, v, Some(gid));
                    undo.owned.push(ga);
                    Ok((ga, header.bits()))
                }
                Err(e) => Err(ErrorKind::NotExportable(format!("a stale FetchMe: {e}")).into()),
            };
        }
        let ga = b.share(shared, v, None);
        undo.owned.push(ga);
        Ok((ga, header_of(v)))
    }

    /// The local object of a GA that came in a packet from PE `sender`:
    /// this PE's own object (the weight goes back to its entry), or the
    /// one FetchMe of the GA here (made now if there is none, or if the
    /// one there was died).
    ///
    /// Errors: [`ErrorKind::Pe`] naming `sender` for a GA of this PE that
    /// names no live entry or carries more weight than is outstanding;
    /// the allocation errors.
    pub(crate) fn import_global<'s>(
        &self,
        s: &mut Scope<'s>,
        ga: GlobalAddress,
        header: u64,
        sender: usize,
    ) -> Result<Handle<'s>> {
        let shared = s.shared();
        let refuse = |e: WeightError| -> Error {
            ErrorKind::Pe {
                pe: sender,
                message: format!("refused packet: {e}"),
            }
            .into()
        };
        if ga.weight == 0 {
            return Err(refuse(WeightError::Zero(ga.gid)));
        }
        if ga.gid.pe as usize == self.pe {
            let mut b = lock(&self.books);
            let Some(e) = b.git.get(ga.gid.id) else {
                return Err(refuse(WeightError::Unknown(ga.gid)));
            };
            // Rooted before the weight that may free the entry goes back.
            let h = s.push_root(shared.global_roots.get(e.slot));
            b.take_back(&shared, ga.gid.id, ga.weight).map_err(refuse)?;
            return Ok(h);
        }
        // A live FetchMe joins the weight; no allocation under the lock.
        {
            let mut b = lock(&self.books);
            if let Some(h) = self.live_fetchme(s, &b, ga.gid) {
                b.imports
                    .import(ga, || unreachable!("held"))
                    .map_err(refuse)?;
                return Ok(h);
            }
        }
        // Allocated before the weight is recorded: an unpacking that fails
        // here with the heap limit gives this GA's weight back
        // (`unpack::unpack_in`).
        let fm = s.alloc_mixed(
            crate::object::descriptor::DescId(ID_FETCHME),
            &[],
            &[u64::from(ga.gid.pe), ga.gid.id, header],
        )?;
        let weak = s.weak_ref(fm)?;
        let weak_slot = s.global_root_slot(weak)?;
        let mut b = lock(&self.books);
        if let Some(h) = self.live_fetchme(s, &b, ga.gid) {
            // Another vproc made one meanwhile: ours is garbage.
            shared.global_roots.remove(weak_slot);
            b.imports
                .import(ga, || unreachable!("held"))
                .map_err(refuse)?;
            return Ok(h);
        }
        let old = b
            .imports
            .replace(ga, Imported { weak_slot })
            .map_err(refuse)?;
        if let Some(old) = old {
            shared.global_roots.remove(old.weak_slot);
        }
        drop(b);
        // The FetchMe the weak reference holds (promoted with it).
        let w = s.push_root(shared.global_roots.get(weak_slot));
        s.weak_get(w)?
            .ok_or_else(|| Error::misuse("a FetchMe died while rooted"))
    }

    /// The FetchMe of `gid` held here, if its entry is live; rooted in `s`.
    fn live_fetchme<'s>(&self, s: &mut Scope<'s>, b: &Books, gid: GlobalId) -> Option<Handle<'s>> {
        let i = b.imports.get(gid)?;
        weak_target(s, i.weak_slot)
    }

    /// Drops the imports whose FetchMe died and sends their weight back
    /// to the owners; returns how many were dropped. Run on a vproc after
    /// a collection (the service asks for it) and at the end of a job.
    pub(crate) fn scan_imports(&self, s: &mut Scope<'_>) -> usize {
        let shared = s.shared();
        let mut returns: Vec<(GlobalId, u32)> = Vec::new();
        {
            let mut b = lock(&self.books);
            let held: Vec<(GlobalId, usize)> = b
                .imports
                .gids()
                .map(|g| (g, b.imports.get(g).expect("listed").weak_slot))
                .collect();
            let mut dead = Vec::new();
            for (g, slot) in held {
                if s.scope(|s| weak_target(s, slot).is_none()) {
                    dead.push(g);
                }
            }
            for g in dead {
                let slot = b.imports.get(g).expect("listed").weak_slot;
                shared.global_roots.remove(slot);
                for w in b.imports.dropped(g).unwrap_or_default() {
                    returns.push((g, w));
                }
            }
            // Counted as sent before the entries' disappearance can be
            // seen (under the lock): `PeGroup::settle` reads the books
            // and waits while the returns sent outnumber those taken, so a
            // scan that dropped entries and has not sent their weight yet
            // (its thread preempted) is waited for, not mistaken for lost
            // weight.
            self.counters
                .weight_returned
                .fetch_add(returns.len() as u64, Ordering::Relaxed);
        }
        let n = returns.len();
        for (g, weight) in returns {
            let m = super::message::Message::ReturnWeight { gid: g.id, weight };
            self.send_or_record(g.pe as usize, &m);
        }
        n
    }

    /// `weight` of this PE's entry `id` came back from PE `from` (the
    /// service, on `return-weight`).
    pub(crate) fn weight_returned(
        &self,
        shared: &Shared,
        from: usize,
        id: u64,
        weight: u32,
    ) -> Result<()> {
        lock(&self.books)
            .take_back(shared, id, weight)
            .map_err(|e| -> Error {
                ErrorKind::Pe {
                    pe: from,
                    message: format!("refused message: return-weight: {e}"),
                }
                .into()
            })?;
        self.counters
            .weight_received
            .fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Returns the weight of the global addresses in `packet`, a packet
    /// from PE `sender` that will not be unpacked (its message was
    /// refused): what this PE owns goes back to its entries, the rest to
    /// the owners in `return-weight` messages, as if this PE had imported
    /// the references and dropped them. A packet that breaks the format
    /// gives nothing back (nothing in it can be trusted). Returns how many
    /// global addresses were given back.
    pub(crate) fn give_back(&self, shared: &Shared, packet: &[u64], sender: usize) -> usize {
        let gas = super::unpack::globals_of(packet, sender, self, &shared.descs);
        self.give_back_addresses(shared, &gas, sender);
        gas.len()
    }

    /// Returns the weight of `gas`, global addresses that came from PE
    /// `sender` and that this PE will not import (a refused message's, or
    /// those an unpacking did not reach): what this PE owns goes back to
    /// its entries, the rest to the owners in `return-weight` messages.
    pub(crate) fn give_back_addresses(
        &self,
        shared: &Shared,
        gas: &[GlobalAddress],
        sender: usize,
    ) {
        for ga in gas {
            if ga.gid.pe as usize == self.pe {
                let taken = lock(&self.books).take_back(shared, ga.gid.id, ga.weight);
                if let Err(e) = taken {
                    self.record(
                        ErrorKind::Pe {
                            pe: sender,
                            message: format!("refused packet: {e}"),
                        }
                        .into(),
                    );
                }
            } else {
                self.counters
                    .weight_returned
                    .fetch_add(1, Ordering::Relaxed);
                let m = super::message::Message::ReturnWeight {
                    gid: ga.gid.id,
                    weight: ga.weight,
                };
                self.send_or_record(ga.gid.pe as usize, &m);
            }
        }
    }

    /// The end of a job on this PE: a full collection, then the import
    /// scan, so that every FetchMe the job dropped returns its weight.
    /// Returns the imports dropped.
    pub(crate) fn settle(&self, s: &mut Scope<'_>) -> usize {
        if let Err(e) = s.collect_global() {
            self.record(e);
        }
        self.scan_imports(s)
    }

    /// This PE's global object `id`, rooted in `s`; `None` when it has no
    /// such entry.
    pub(crate) fn global_object<'s>(&self, s: &Scope<'s>, id: u64) -> Option<Handle<'s>> {
        let b = lock(&self.books);
        let e = b.git.get(id)?;
        Some(s.push_root(s.shared().global_roots.get(e.slot)))
    }

    /// GIT entries and imports live now.
    pub(crate) fn books_len(&self) -> (usize, usize) {
        let b = lock(&self.books);
        (b.git.len(), b.imports.len())
    }
}

/// The target of the weak reference in global-root slot `slot`, rooted
/// in `s`; `None` once cleared. Allocates nothing.
fn weak_target<'s>(s: &mut Scope<'s>, slot: usize) -> Option<Handle<'s>> {
    let w = s.shared().global_roots.get(slot);
    if !is_pointer(w) {
        return None;
    }
    let weak = s.push_root(w);
    s.weak_get(weak).ok().flatten()
}
