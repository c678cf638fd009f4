//! Synchronisation primitives used by the runtime's protocols.
//!
//! The protocols (chunk pool, global-collection handshake, parallel scan work
//! queue, doorbells, task hand-off and promotion requests, channels) take
//! their primitives from here so that `RUSTFLAGS="--cfg loom"` swaps in
//! `loom`'s model-checked versions and the same code is explored by the
//! model tests in `src/loom_models/` (whose `mod.rs` docs list every protocol).

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
#[cfg(loom)]
pub(crate) use loom::sync::{Condvar, Mutex, MutexGuard};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{fence, AtomicBool, AtomicU32, AtomicUsize, Ordering};
#[cfg(not(loom))]
pub(crate) use std::sync::{Condvar, Mutex, MutexGuard};

/// Locks a mutex, ignoring poisoning: the runtime's protected data stays
/// consistent across a panicking task because every critical section is
/// a few field updates that cannot panic half-way.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    match m.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// Waits on a condition variable for at most `d`, ignoring poisoning.
#[cfg(not(loom))]
pub(crate) fn wait_timeout<'a, T>(
    cv: &Condvar,
    g: MutexGuard<'a, T>,
    d: std::time::Duration,
) -> MutexGuard<'a, T> {
    match cv.wait_timeout(g, d) {
        Ok((g, _)) => g,
        Err(p) => p.into_inner().0,
    }
}

/// Waits on a condition variable, ignoring poisoning (see [`lock`]).
pub(crate) fn wait<'a, T>(cv: &Condvar, g: MutexGuard<'a, T>) -> MutexGuard<'a, T> {
    match cv.wait(g) {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    }
}

/// A cell whose accesses another synchronisation orders (a protocol's
/// release store and acquire load, as `sched::task::Handoff`'s state), so
/// that it needs no lock of its own. Under `--cfg loom` it is loom's
/// `UnsafeCell`, which reports two accesses the protocol does not order.
#[cfg(loom)]
pub(crate) struct OrderedCell<T>(loom::cell::UnsafeCell<T>);

#[cfg(not(loom))]
pub(crate) struct OrderedCell<T>(std::cell::UnsafeCell<T>);

impl<T> OrderedCell<T> {
    pub(crate) fn new(v: T) -> OrderedCell<T> {
        #[cfg(loom)]
        return OrderedCell(loom::cell::UnsafeCell::new(v));
        #[cfg(not(loom))]
        OrderedCell(std::cell::UnsafeCell::new(v))
    }

    /// Replaces the value and returns the old one.
    ///
    /// # Safety
    /// The caller's protocol orders this access after every other access
    /// to the cell (no two threads touch it unordered).
    #[inline(always)]
    pub(crate) unsafe fn replace(&self, v: T) -> T {
        #[cfg(loom)]
        // SAFETY: the caller's contract.
        return self.0.with_mut(|p| unsafe { std::ptr::replace(p, v) });
        #[cfg(not(loom))]
        // SAFETY: the caller's contract.
        unsafe {
            std::ptr::replace(self.0.get(), v)
        }
    }
}

// SAFETY: the value moves between threads (`T: Send`), and every access is
// ordered by the protocol that `replace`'s callers keep, so no two threads
// touch it at once.
unsafe impl<T: Send> Sync for OrderedCell<T> {}
