//! The C ABI of numagc: `include/numagc.h` and `libnumagc.{a,so}`.
//!
//! A C program creates a runtime from a configuration, registers object
//! layouts, and runs C callbacks on vprocs. Inside a callback it allocates,
//! reads and stores through a `numagc_scope`, keeping its values in *root
//! frames*. Everything here goes through the public API of the `numagc`
//! crate; the header is generated from this crate by cbindgen
//! (`tests/header.rs` fails when the committed header is out of date).
//!
//! # Handles, not pointers
//!
//! numagc's collectors move objects, so C code never sees a heap address.
//! A `numagc_value` is a 64-bit word that is either
//!
//! * an **immediate** (bit 0 set): a 63-bit integer, made by `numagc_int`,
//!   valid anywhere and forever; `NUMAGC_NIL` is the integer 0; or
//! * a **handle** (bit 0 clear): bits 1..=31 index a table of root-stack
//!   slots of the callback's Rust `Scope` and bits
//!   32..=63 carry a tag that the slot must still have. Collections update
//!   the slots, so a handle keeps naming the same object however often it
//!   moves.
//!
//! Every operation that produces an object returns a new handle in the
//! innermost open frame. The value 0 is never valid (functions write it to
//! their value outputs when they fail).
//!
//! # Frames
//!
//! The Rust API ties handles to the lifetime of a `Scope` and pops them when
//! a nested scope's closure returns. C has no closures that the borrow
//! checker can see, so the frames are explicit: `numagc_frame_enter` opens a
//! frame and `numagc_frame_leave` drops every handle created since, and must
//! name the innermost open frame (else `NUMAGC_ERR_UNBALANCED_FRAME`, and
//! nothing changes). `numagc_frame_return` leaves a frame and keeps one
//! value, re-rooted in the enclosing frame (the Rust `Scope::scope_value`).
//! A callback that returns 0 with frames still open gets
//! `NUMAGC_ERR_UNBALANCED_FRAME` from `numagc_run_on`.
//!
//! Mapping: the callback's Rust scope owns a growing table of `Slot`s
//! (`Scope::slot`). A frame is a mark in that table; leaving it clears the
//! slots above the mark (so they retain nothing) and makes them free for
//! reuse, with new tags, so the root stack grows to the high-water mark of
//! live handles and no further. Each operation that returns a Rust
//! `Handle` runs in a nested Rust scope (`Scope::scope`) and copies the
//! result into its table slot (`Scope::assign`), so the Rust root stack
//! never grows behind the table's back.
//!
//! # Thread rule
//!
//! A `numagc_scope*` is valid only on the vproc thread that runs its
//! callback, and only until the callback returns. It is an opaque token
//! that is never dereferenced: every scope function compares it with the
//! token of the callback running on the calling thread (a thread-local),
//! so a scope pointer kept after its callback returned, or passed to
//! another thread, gets `NUMAGC_ERR_NOT_ON_VPROC` instead of undefined
//! behaviour. Tokens are never reused. Handles are tagged per callback and
//! per slot use, so a handle from a left frame or from another callback is
//! refused with `NUMAGC_ERR_BAD_VALUE`. The tag check is probabilistic
//! (32 bits); a stale handle that slips through still names a live slot of
//! the current callback, never freed memory.
//!
//! A `numagc_runtime*` may be used from several threads at once (each
//! `numagc_run_on` waits for its own callback), but not while, or after,
//! it is freed. Callbacks cannot wait for other callbacks: `numagc_run_on`
//! from a callback returns `NUMAGC_ERR_MISUSE` instead of deadlocking.
//!
//! # Errors
//!
//! Every fallible function returns an `int`, a `numagc_status` (`NUMAGC_OK`
//! is 0) and, on failure, sets a thread-local message read with
//! `numagc_last_error()`. Successful calls leave the message alone. No Rust
//! panic crosses the boundary: every function catches it and returns
//! `NUMAGC_ERR_INTERNAL`. A callback's nonzero return value is returned by
//! `numagc_run_on` unchanged, with a message that quotes the last error on
//! the vproc (the callback ran on another thread, so its own
//! `numagc_last_error` is not the caller's).
//!
//! # Safety contract
//!
//! Every pointer argument is checked for NULL; beyond that a pointer must
//! be valid for the access its documentation states (an array of `n`
//! elements, a NUL-terminated string). Runtimes and configurations are
//! owned by the caller from their `_new` until their `_free`; strings
//! returned by the library are freed with `numagc_string_free`. Global
//! roots are ids, so freeing one twice is an error, not a double free.
//!
//! # Later: tasks and channels
//!
//! Parallel tasks (issue 3's scheduler) will reach C the way the Rust
//! `Scope::par2` does: a task is a C callback with an explicit environment
//! of values, promoted before it may be stolen, that runs under a scope
//! token of its own on whichever vproc takes it, with its own frames. The
//! token check, the per-callback handle table and the status codes already
//! work per callback, so those functions add entry points, not changes.

#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// The safety contract of every function is the one stated in the module
// docs above and in the header's introduction.
#![allow(clippy::missing_safety_doc)]

// In this order in the header.
mod status;
mod runtime;
mod scope;
mod ops;
#[cfg(test)]
mod tests;

pub use ops::*;
pub use runtime::*;
pub use scope::*;
pub use status::*;


/// A value held by C code: an immediate integer (bit 0 set) or a handle to
/// a root slot of the current callback (bit 0 clear). Never a heap address.
/// 0 is not a valid value.
pub type numagc_value = u64;

/// The id of a registered mixed-object descriptor.
pub type numagc_desc = u32;

/// An open root frame, as returned by `numagc_frame_enter`.
pub type numagc_frame = u64;

/// The id of a global root (0 is never an id).
pub type numagc_global = u64;

/// The integer 0, the unit / empty value.
pub const NUMAGC_NIL: numagc_value = 1;

/// Version of this C interface; incremented on incompatible changes.
pub const NUMAGC_ABI_VERSION: u32 = 1;
