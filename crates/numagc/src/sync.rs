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
