//! The API of weak references, ephemerons and finalisers
//! (multicore-ocaml-gc.txt §5.1–5.2). The objects, lists and processing
//! are `crate::weak`; each plan's collectors process them.
//!
//! ```
//! use numagc::{Config, Handle, Runtime};
//! let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
//! rt.run_on(0, |s| -> numagc::Result<()> {
//!     let key = s.alloc_vector(&[Handle::int(1)])?;
//!     let w = s.weak_ref(key)?;
//!     s.collect_minor();
//!     assert!(s.weak_get(w)?.is_some(), "the key is still held by `key`");
//!     let w2 = s.scope_value(|s| {
//!         let k = s.alloc_vector(&[Handle::int(2)])?;
//!         s.weak_ref(k)
//!     })?;
//!     s.collect_minor();
//!     assert!(s.weak_get(w2)?.is_none(), "nothing else held it");
//!     Ok(())
//! })??;
//! # Ok::<(), numagc::Error>(())
//! ```

use crate::error::{Error, ErrorKind, Result};
use crate::mutator::view::resolve;
use crate::mutator::{Handle, Scope};
use crate::object::descriptor::DescId;
use crate::object::header::ID_EPHEMERON;
use crate::object::{is_pointer, Obj};
use crate::plan;
use crate::weak::{Finaliser, FinaliserFn, CLEARED, EPH_DATA, EPH_KEY};
use std::panic::{catch_unwind, AssertUnwindSafe};

impl<'s> Scope<'s> {
    /// A new ephemeron with `key` and `data` (OCaml's
    /// `Ephemeron.K1.make key data`): `data` stays alive while the
    /// ephemeron and `key` both are; once a collection finds `key`
    /// unreachable (other than through ephemerons whose own keys are dead),
    /// both are cleared. An immediate key never dies. Ephemerons cannot be
    /// changed after creation.
    ///
    /// On the split plan an ephemeron that becomes shared (promoted, stored
    /// into a mutable object) takes its key and data with it to the global
    /// heap, where they live until the next global collection decides.
    pub fn ephemeron(&mut self, key: Handle<'_>, data: Handle<'_>) -> Result<Handle<'s>> {
        let e = self.alloc_mixed(DescId(ID_EPHEMERON), &[], &[CLEARED, CLEARED])?;
        // No safepoint from here to the registration: the words read now
        // stay valid.
        let mut words = [self.word(key), self.word(data)];
        let at = resolve(self.word(e));
        let private = plan::is_private(self.vp, at as usize);
        if !private {
            // Never for an object of three words, but a shared ephemeron
            // must not point into a private heap.
            plan::promote_words(self.vp, &mut words)?;
        }
        // SAFETY: `at` is the object just allocated, which nothing else
        // references yet.
        let o = unsafe { Obj::at(at as usize) };
        o.set_field(EPH_KEY, words[0]);
        o.set_field(EPH_DATA, words[1]);
        let mut lists = self.vp.shared.weak.lock(self.vp.id);
        if private {
            lists.eph_private.push(at);
        } else {
            lists.eph_shared.push(at);
        }
        Ok(e)
    }

    /// A weak reference to `target` (OCaml's `Weak`, GHC's `mkWeak` with no
    /// finaliser): an ephemeron whose data is `NIL`.
    pub fn weak_ref(&mut self, target: Handle<'_>) -> Result<Handle<'s>> {
        self.ephemeron(target, Handle::NIL)
    }

    /// The target of a weak reference (its key): `None` once cleared.
    pub fn weak_get(&mut self, w: Handle<'_>) -> Result<Option<Handle<'s>>> {
        self.ephemeron_key(w)
    }

    /// An ephemeron's key, `None` once cleared. The handle returned holds
    /// the key strongly, like any handle.
    ///
    /// Errors: [`ErrorKind::Misuse`] when `e` is not an ephemeron.
    pub fn ephemeron_key(&mut self, e: Handle<'_>) -> Result<Option<Handle<'s>>> {
        self.ephemeron_field(e, EPH_KEY)
    }

    /// An ephemeron's data, `None` once cleared (`Some(NIL)` for a weak
    /// reference whose target lives).
    ///
    /// Errors: [`ErrorKind::Misuse`] when `e` is not an ephemeron.
    pub fn ephemeron_data(&mut self, e: Handle<'_>) -> Result<Option<Handle<'s>>> {
        self.ephemeron_field(e, EPH_DATA)
    }

    /// Whether `h` is an ephemeron (or a weak reference).
    pub fn is_ephemeron(&self, h: Handle<'_>) -> bool {
        self.ephemeron_obj(h).is_ok()
    }

    fn ephemeron_obj(&self, e: Handle<'_>) -> Result<Obj> {
        let w = resolve(self.word(e));
        if !is_pointer(w) {
            return Err(Error::misuse(
                "an immediate is not an ephemeron or a weak reference",
            ));
        }
        // SAFETY: a handle's pointer value targets a live object.
        let o = unsafe { Obj::at(w as usize) };
        match o.header() {
            Some(h) if h.id() == ID_EPHEMERON => Ok(o),
            Some(h) => Err(Error::misuse(format!(
                "an object of id {} is not an ephemeron or a weak reference",
                h.id()
            ))),
            None => unreachable!("a resolved object has a header"),
        }
    }

    fn ephemeron_field(&mut self, e: Handle<'_>, i: usize) -> Result<Option<Handle<'s>>> {
        let w = self.ephemeron_obj(e)?.field(i);
        if w == CLEARED {
            return Ok(None);
        }
        // A value read out of an ephemeron becomes strongly reachable: a
        // concurrent marker must hear of it (`plan::weak_read`).
        plan::weak_read(self.vp, w);
        Ok(Some(self.push_root(w)))
    }

    /// Registers `f` to run once with `value` when a collection first finds
    /// `value` unreachable (OCaml's `Gc.finalise`). The collection keeps
    /// the value for `f`, which may store it somewhere reachable again
    /// (resurrection). `f` runs later on this vproc, outside the collection
    /// (at the end of the current job, or at [`Scope::run_finalisers`]),
    /// and may allocate. Values registered several times get one call per
    /// registration.
    ///
    /// Errors: [`ErrorKind::Misuse`] when `value` is an immediate (OCaml raises
    /// `Invalid_argument`).
    pub fn finalise(
        &mut self,
        value: Handle<'_>,
        f: impl for<'a> FnOnce(&mut Scope<'a>, Handle<'a>) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.register_finaliser(value, FinaliserFn::First(Box::new(f)), "finalise")
    }

    /// Registers `f` to run once after `value` has been found unreachable
    /// and collected (OCaml's `Gc.finalise_last`): `f` does not get the
    /// value. Runs like [`Scope::finalise`]'s functions.
    ///
    /// Errors: [`ErrorKind::Misuse`] when `value` is an immediate.
    pub fn finalise_last(
        &mut self,
        value: Handle<'_>,
        f: impl for<'a> FnOnce(&mut Scope<'a>) -> Result<()> + Send + 'static,
    ) -> Result<()> {
        self.register_finaliser(value, FinaliserFn::Last(Box::new(f)), "finalise_last")
    }

    fn register_finaliser(&mut self, value: Handle<'_>, f: FinaliserFn, what: &str) -> Result<()> {
        let w = resolve(self.word(value));
        if !is_pointer(w) {
            return Err(Error::misuse(format!(
                "{what}: an immediate cannot be finalised (it is never collected)"
            )));
        }
        let private = plan::is_private(self.vp, w as usize);
        let mut lists = self.vp.shared.weak.lock(self.vp.id);
        let entry = Finaliser { value: w, f };
        if private {
            lists.fin_private.push(entry);
        } else {
            lists.fin_shared.push(entry);
        }
        Ok(())
    }

    /// Finalisers of this vproc that are due and have not run yet.
    pub fn pending_finalisers(&self) -> usize {
        if self.vp.shared.weak.is_empty() {
            return 0;
        }
        self.vp.shared.weak.lock(self.vp.id).pending.len()
    }

    /// Runs this vproc's due finalisers, oldest first, including those that
    /// become due meanwhile; returns how many ran. Each runs in a scope of
    /// its own. One that returns an error or panics is recorded for
    /// [`crate::Runtime::take_thread_errors`], and the others still run.
    pub fn run_finalisers(&mut self) -> usize {
        let mut ran = 0;
        while !self.vp.shared.weak.is_empty() {
            // Taken out under the lock and rooted before the next
            // safepoint: the queue's value is up to date until then.
            let Some(f) = self.vp.shared.weak.lock(self.vp.id).pending.pop_front() else {
                break;
            };
            let r = catch_unwind(AssertUnwindSafe(|| {
                self.scope(|s| match f.f {
                    FinaliserFn::First(g) => {
                        let h = s.push_root(f.value);
                        g(s, h)
                    }
                    FinaliserFn::Last(g) => g(s),
                })
            }));
            let vproc = self.vp.id;
            let failed = match r {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e),
                Err(p) => Some(Error::from(ErrorKind::TaskPanicked {
                    vproc,
                    message: format!("a finaliser: {}", crate::runtime::panic_message(p)),
                })),
            };
            if let Some(e) = failed {
                self.vp.shared.record_thread_error(e);
            }
            ran += 1;
        }
        ran
    }
}
