//! Blocking sections, the API side: code that may block outside the
//! runtime (a system call, a lock, a foreign library) runs in one, and the
//! other vprocs' collections go on without waiting for it (the protocol:
//! `gc::blocking`; the proxy that acts meanwhile: `sched::proxy`).
//!
//! In the spirit of OCaml's `caml_enter_blocking_section` and GHC's safe
//! foreign calls: inside the section the code holds no heap values except
//! through handles (which collections update) and cannot reach the heap —
//! [`Scope::blocking`] borrows the scope for the whole call and gives the
//! closure nothing of it.

use crate::error::Result;
use crate::mutator::scope::Scope;
use crate::vproc::Shared;
use std::sync::Arc;

/// A blocking section entered with [`Scope::enter_blocking`]; leaving it
/// ([`BlockingSection::leave`], or dropping it) waits for a collection its
/// proxy is taking part in.
#[must_use = "the section is left when this is dropped"]
pub struct BlockingSection {
    shared: Arc<Shared>,
    vproc: usize,
}

impl BlockingSection {
    /// Leaves the section: returns once this vproc's thread owns its state
    /// again (after any collection in progress on its behalf). The scope is
    /// usable again from here on.
    pub fn leave(self) {
        // `Drop` leaves.
    }
}

impl Drop for BlockingSection {
    fn drop(&mut self) {
        crate::sched::proxy::leave(&self.shared, self.vproc);
    }
}

impl std::fmt::Debug for BlockingSection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "BlockingSection(vproc {})", self.vproc)
    }
}

impl<'s> Scope<'s> {
    /// Runs `f`, which may block outside the runtime (sleep, I/O, a lock, a
    /// foreign call), without stalling the other vprocs: while `f` runs,
    /// collections proceed without this vproc's thread, its proxy taking
    /// part with its roots and local heap. When `f` returns, this waits for
    /// a collection in progress, then joins one that is pending.
    ///
    /// `f` gets no access to the heap (this scope is borrowed meanwhile);
    /// handles stay valid and read the values' new places afterwards. A
    /// panic in `f` leaves the section and propagates.
    ///
    /// Errors: [`crate::ErrorKind::Os`] when the proxy thread (started by the
    /// vproc's first section) cannot be started; `f` did not run then.
    pub fn blocking<R>(&mut self, f: impl FnOnce() -> R) -> Result<R> {
        // SAFETY: the scope is borrowed mutably for the whole section, so
        // nothing touches this vproc's state until the section (dropped at
        // the end of this block, even on a panic in `f`) has been left.
        let r = {
            let section = unsafe { self.enter_blocking()? };
            let r = f();
            section.leave();
            r
        };
        self.poll();
        Ok(r)
    }

    /// Enters a blocking section for bindings that cannot pass a closure
    /// (the C ABI's `numagc_enter_blocking`); [`Scope::blocking`] is the
    /// safe form.
    ///
    /// # Safety
    /// Until the returned section is left or dropped, the caller must not
    /// use this scope, any enclosing scope, or any view or handle of them:
    /// the vproc's state belongs to its proxy meanwhile.
    pub unsafe fn enter_blocking(&mut self) -> Result<BlockingSection> {
        let shared = self.vp.shared.clone();
        let vproc = self.vp.id;
        // SAFETY: forwarded from the caller.
        unsafe { crate::sched::proxy::enter(self.vp)? };
        Ok(BlockingSection { shared, vproc })
    }
}
