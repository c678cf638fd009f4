//! The atomics of the cross-thread protocols (remote frees, heap adoption).
//!
//! Under `RUSTFLAGS="--cfg loom"` they are `loom`'s model-checked ones, so
//! the production code of [`crate::remote_free`] and the adoption and ownership
//! protocols of [`crate::thread_heap`] is what `src/loom_models.rs` explores.

#[cfg(loom)]
pub(crate) use loom::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};

#[cfg(not(loom))]
pub(crate) use std::sync::atomic::{AtomicPtr, AtomicU8, AtomicUsize, Ordering};
