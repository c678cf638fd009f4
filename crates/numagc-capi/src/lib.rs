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
//! elements, a NUL-terminated string). What C writes is never trusted
//! beyond that: fields and arguments whose Rust type would restrict their
//! values (enums, `bool`) are declared as plain integers and converted by a
//! checked function (`numagc_dir::from_c`, `status::bool_arg`), and every
//! count is checked against its limit (`status::count_arg`, the descriptor's
//! field counts, the object length and heap limits) before an array of that
//! many is formed or a buffer sized by it, so bad input is
//! `NUMAGC_ERR_INVALID_ARGUMENT` (or the code the function documents), never
//! undefined behaviour or an abort. Runtimes and configurations are
//! owned by the caller from their `_new` until their `_free`; strings
//! returned by the library are freed with `numagc_string_free`. Global
//! roots are ids, so freeing one twice is an error, not a double free.
//!
//! # Tasks, threads and channels
//!
//! Every piece of C code that numagc runs — a callback, a `numagc_par2`
//! task, a step of a thread — is a *C body* (`body::run_body`): it gets a
//! scope token of its own, valid on the thread that runs it until it
//! returns, and a handle table whose first entries are its environment.
//! Bodies nest on one thread (a task runs inline inside its parent's
//! `numagc_par2`; a waiting `numagc_recv` runs other threads and stolen
//! tasks): the thread-local `ACTIVE` entry is saved and restored around
//! each, so the parent's scope is refused inside the nested body
//! (`NUMAGC_ERR_NOT_ON_VPROC`) and valid again afterwards. The checks on
//! return (status, frames left open) are the same for all bodies.
//!
//! * `numagc_par2` (`parallel.rs`) is `Scope::par2` with C tasks. A task's
//!   failure is kept as its C code and message and returned by the fork
//!   (`a`'s before `b`'s). `b`'s `userdata` may be used on another vproc
//!   thread while `a` runs.
//! * Threads (`thread.rs`) are `Scope::spawn` with C steps in
//!   continuation-passing style: a step says what comes next by calling
//!   exactly one `numagc_next_*` on the `numagc_next*` it is given (a
//!   token: its scope's token with bit 3 set). The call records the step —
//!   the environment as Rust handles of the step's scope, the channels, the
//!   C continuation and its `userdata` — and when the step returns the
//!   record becomes a Rust `Next` whose continuations run the C
//!   continuations as the next steps. No call, two calls, a nonzero status
//!   or open frames fail the thread; its message is kept for
//!   `numagc_take_thread_errors`. A thread's steps may run on any vproc.
//! * Channels (`channel.rs`) are tokens in a registry, so a freed channel
//!   is `NUMAGC_ERR_BAD_VALUE` and one of another runtime
//!   `NUMAGC_ERR_MISUSE`. `numagc_send`, `numagc_recv` and `numagc_select`
//!   wait in direct style (the vproc keeps its duties meanwhile) and are
//!   refused inside a thread step, which must return a `numagc_next_*`
//!   instead.

#![allow(non_camel_case_types)]
#![deny(unsafe_op_in_unsafe_fn)]
#![warn(clippy::undocumented_unsafe_blocks)]
// The safety contract of every function is the one stated in the module
// docs above and in the header's introduction.
#![allow(clippy::missing_safety_doc)]

// In this order in the header.
mod activation;
mod blocking;
mod body;
mod channel;
mod compiled;
mod fork;
mod ops;
mod parallel;
mod pe;
mod registry;
mod runtime;
mod scope;
mod status;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_bad_input;
#[cfg(test)]
mod tests_blocking;
#[cfg(test)]
mod tests_fork;
#[cfg(test)]
mod tests_parallel;
#[cfg(test)]
mod tests_pe;
#[cfg(test)]
mod tests_weak;
mod thread;
mod weak;

pub use blocking::*;
pub use channel::*;
pub use compiled::*;
pub use fork::*;
pub use ops::*;
pub use parallel::*;
pub use pe::*;
pub use runtime::*;
pub use scope::*;
pub use status::*;
pub use thread::*;
pub use weak::*;

/// A value held by C code: an immediate integer (bit 0 set) or a handle to
/// a root slot of the current callback (bit 0 clear). Never a heap address.
/// 0 is not a valid value.
pub type numagc_value = u64;

/// The id of a registered mixed-object descriptor.
pub type numagc_desc = u32;

/// The id the first descriptor registered with a runtime gets; the n-th
/// (from 0) gets `NUMAGC_FIRST_DESCRIPTOR_ID + n`, since
/// `numagc_register_mixed` hands ids out in registration order. A
/// compiler that registers its layouts first, in a fixed order, knows
/// their ids and header words (`numagc_inline_header`) when it compiles,
/// and checks each `*out_desc` against them.
pub const NUMAGC_FIRST_DESCRIPTOR_ID: numagc_desc = 3;
const _: () =
    assert!(NUMAGC_FIRST_DESCRIPTOR_ID as u16 == numagc_rs::DescId::nth_registered(0).id());

/// An open root frame, as returned by `numagc_frame_enter`.
pub type numagc_frame = u64;

/// The id of a global root (0 is never an id).
pub type numagc_global = u64;

/// The integer 0, the unit / empty value.
pub const NUMAGC_NIL: numagc_value = 1;

/// The most values an environment may have (`numagc_par2`, `numagc_spawn`,
/// `numagc_spawn_on`, `numagc_next_*`); more is
/// `NUMAGC_ERR_INVALID_ARGUMENT`, refused before the array is read.
/// Environments carry a few values: put bulk data in a vector.
pub const NUMAGC_MAX_ENV: usize = 1 << 16;

/// The most cases a choice may have (`numagc_select`, `numagc_next_select`);
/// more is `NUMAGC_ERR_INVALID_ARGUMENT`, refused before the array is read.
pub const NUMAGC_MAX_CASES: usize = 1 << 16;

/// Version of this C interface; incremented on incompatible changes.
pub const NUMAGC_ABI_VERSION: u32 = 1;
