//! Weak references, ephemerons and finalisers: the plan-neutral part
//! (multicore-ocaml-gc.txt §5.1 and §5.2; OCaml's `Ephemeron.K1`, `Weak`,
//! `Gc.finalise`, `Gc.finalise_last`; GHC's `mkWeak`).
//!
//! What every plan shares lives here: the object layout, the per-vproc
//! lists, the registry in [`crate::vproc::Shared`], and the processing
//! algorithm ([`process`]), which a plan's collectors run through the
//! [`WeakTracer`] they implement. The API is `crate::mutator::weak`
//! ([`crate::Scope::ephemeron`], [`crate::Scope::finalise`], ...). The
//! split plan's tracers and where its collectors call [`process`] are in
//! `plan::split::weak`.
//!
//! ## Objects
//!
//! An **ephemeron** is a heap object of the reserved descriptor
//! [`ID_EPHEMERON`] (`numagc.ephemeron`) with two fields, the key
//! ([`EPH_KEY`]) and the data ([`EPH_DATA`]). The descriptor declares both
//! fields raw, so the collectors' ordinary scan (and every other walk of
//! value fields) skips them; only [`process`] reads and writes them. A
//! **weak reference** is an ephemeron whose data is `NIL`: one layout, one
//! list, one algorithm (as in OCaml, §5.1). Semantics are those of
//! `Ephemeron.K1`: the data is alive while the ephemeron and its key both
//! are; once the key is found dead, a collection sets both fields to
//! [`CLEARED`] (the word 0, never a value), and reads return `None`. An
//! immediate key never dies. Ephemerons are immutable after creation (the
//! OCaml 5 `Ephemeron.K1.make key data` API), so an ephemeron is never older
//! than its key and data: a collector that keeps an ephemeron never meets a
//! field pointing to younger data than the ephemeron itself.
//!
//! ## Lists
//!
//! Each vproc keeps ([`VprocWeak`]) the ephemerons it created and the
//! finalisers it registered, by address, split in two: those in its
//! *private* heap (the split plan's local heap, a minor heap) and those in
//! the *shared* heap. A collection of a private heap walks the private
//! lists only, so its cost grows with the private entries, not with all of
//! them; a collection of the shared heap walks every list of every vproc.
//! The lists live in the registry ([`WeakRegistry`], one mutex per vproc,
//! uncontended: its vproc locks it to register and in its own collections,
//! the leader of a stop-the-world collection while the others wait) so that
//! the rounds of one collection see the ephemerons of every vproc: the data
//! of one vproc's ephemeron may be the key of another's. A count of all
//! entries lets collections skip all of this with one load when a program
//! has none (the collectors cost nothing more then).
//!
//! ## Finalisers
//!
//! `finalise(v, f)` (OCaml `Gc.finalise`): when `v` is first found
//! unreachable, the collection keeps it (resurrection: it and what it
//! reaches are traced before the ephemeron rounds, as §5.2 marks them when
//! marking first finishes) and queues `f` with it. `finalise_last(v, f)`
//! (`Gc.finalise_last`): after all tracing, ephemerons included, `f` is
//! queued without the value, which is collected. Each runs once. Queued
//! finalisers wait in their vproc's pending queue, whose values are roots
//! of every collection, and run on that vproc, never inside a collection:
//! at the end of each job (before its result is returned), when an idle
//! vproc has joined a collection, and at [`crate::Scope::run_finalisers`].
//! They get a `&mut Scope` and may allocate, collect and register
//! finalisers. A finaliser that returns an error or panics is recorded in
//! [`crate::Runtime::take_thread_errors`]; the vproc carries on. Pending
//! finalisers left when the runtime stops are dropped without running
//! (OCaml does not run finalisers at exit either). Immediates cannot be
//! finalised ([`crate::ErrorKind::Misuse`], OCaml's `Invalid_argument`).

mod process;

pub(crate) use process::{process, Lists, WeakTracer};

use crate::error::Result;
use crate::mutator::{Handle, Scope};
use crate::object::descriptor::Descriptor;
#[cfg(doc)]
use crate::object::header::ID_EPHEMERON;
use crate::sync::{lock, AtomicUsize, Mutex, MutexGuard, Ordering};
use std::collections::VecDeque;

/// Runs vproc `vp`'s due finalisers in a root scope of their own (an idle
/// vproc after it joined a collection).
pub(crate) fn run_pending(vp: &mut crate::vproc::Vproc) {
    if vp.shared.weak.is_empty() || vp.shared.weak.lock(vp.id).pending.is_empty() {
        return;
    }
    Scope::root(vp).run_finalisers();
    vp.publish_stats();
}

/// Field of an ephemeron holding its key.
pub(crate) const EPH_KEY: usize = 0;
/// Field of an ephemeron holding its data (`NIL` for a weak reference).
pub(crate) const EPH_DATA: usize = 1;
/// What a cleared field holds: the word 0, which is no value (values are
/// immediates, bit 0 set, or addresses of objects, never 0).
pub(crate) const CLEARED: u64 = 0;

/// The built-in descriptor of ephemerons: two fields, neither traced.
pub(crate) fn ephemeron_descriptor() -> Descriptor {
    Descriptor::mixed("numagc.ephemeron", 2, &[]).expect("the ephemeron layout is valid")
}

/// The function of a `finalise` finaliser: gets the value.
pub(crate) type FirstFn = Box<dyn for<'s> FnOnce(&mut Scope<'s>, Handle<'s>) -> Result<()> + Send>;
/// The function of a `finalise_last` finaliser: gets no value.
pub(crate) type LastFn = Box<dyn for<'s> FnOnce(&mut Scope<'s>) -> Result<()> + Send>;

/// A finaliser's function: `First` gets the value (`finalise`), `Last`
/// does not (`finalise_last`).
pub(crate) enum FinaliserFn {
    First(FirstFn),
    Last(LastFn),
}

/// A registered finaliser, or a queued one (then `value` is the
/// resurrected value for `First`, `NIL` for `Last`).
pub(crate) struct Finaliser {
    pub value: u64,
    pub f: FinaliserFn,
}

/// One vproc's ephemerons and finalisers (see the module doc).
#[derive(Default)]
pub(crate) struct VprocWeak {
    /// Ephemerons in this vproc's private heap / in the shared heap.
    pub eph_private: Vec<u64>,
    pub eph_shared: Vec<u64>,
    /// Finalisers whose value is in the private heap / the shared heap.
    pub fin_private: Vec<Finaliser>,
    pub fin_shared: Vec<Finaliser>,
    /// Finalisers due, oldest first; their values are roots.
    pub pending: VecDeque<Finaliser>,
}

impl VprocWeak {
    /// Entries in all lists.
    pub fn total(&self) -> usize {
        self.eph_private.len()
            + self.eph_shared.len()
            + self.fin_private.len()
            + self.fin_shared.len()
            + self.pending.len()
    }
}

/// Every vproc's lists, and how many entries they hold in all.
pub(crate) struct WeakRegistry {
    vprocs: Box<[Mutex<VprocWeak>]>,
    count: AtomicUsize,
}

/// A vproc's lists, locked; on drop, the registry's count follows what the
/// holder removed or added.
pub(crate) struct Locked<'a> {
    guard: MutexGuard<'a, VprocWeak>,
    before: usize,
    count: &'a AtomicUsize,
}

impl std::ops::Deref for Locked<'_> {
    type Target = VprocWeak;
    fn deref(&self) -> &VprocWeak {
        &self.guard
    }
}

impl std::ops::DerefMut for Locked<'_> {
    fn deref_mut(&mut self) -> &mut VprocWeak {
        &mut self.guard
    }
}

impl Drop for Locked<'_> {
    fn drop(&mut self) {
        let after = self.guard.total();
        if after > self.before {
            self.count.fetch_add(after - self.before, Ordering::Relaxed);
        } else if after < self.before {
            self.count.fetch_sub(self.before - after, Ordering::Relaxed);
        }
    }
}

impl WeakRegistry {
    pub fn new(vprocs: usize) -> WeakRegistry {
        WeakRegistry {
            vprocs: (0..vprocs)
                .map(|_| Mutex::new(VprocWeak::default()))
                .collect(),
            count: AtomicUsize::new(0),
        }
    }

    /// Whether any vproc has an ephemeron, a finaliser or a pending one.
    /// Collections skip weak processing when not; an entry is only added
    /// by a vproc outside its collections, so a collection's answer holds
    /// for its whole duration.
    #[inline(always)]
    pub fn is_empty(&self) -> bool {
        self.count.load(Ordering::Relaxed) == 0
    }

    /// Vproc `v`'s lists.
    pub fn lock(&self, v: usize) -> Locked<'_> {
        let guard = lock(&self.vprocs[v]);
        let before = guard.total();
        Locked {
            guard,
            before,
            count: &self.count,
        }
    }

    /// Every vproc's lists, in vproc order (the leader of a stop-the-world
    /// collection, while the others wait).
    pub fn lock_all(&self) -> Vec<Locked<'_>> {
        (0..self.vprocs.len()).map(|v| self.lock(v)).collect()
    }

    /// Drops every entry (the runtime stops): pending finalisers never run,
    /// and what their closures hold is released.
    pub fn clear(&self) {
        for v in 0..self.vprocs.len() {
            let taken = std::mem::take(&mut *self.lock(v));
            drop(taken);
        }
    }
}
