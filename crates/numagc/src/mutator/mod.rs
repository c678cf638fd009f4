//! The mutator API: how embedder code holds, reads and allocates values.
//!
//! A copying collector moves objects, so a raw object pointer held across a
//! point where a collection may run would dangle. The API makes that
//! impossible in safe code (in the spirit of V8's `HandleScope` and OCaml's
//! `CAMLlocal`):
//!
//! * A [`Handle`] names a slot of the vproc's root stack (or holds an
//!   immediate directly). Collections update the slots, so handles stay
//!   valid. A handle's lifetime is its [`Scope`]'s: nested scopes pop their
//!   slots on exit, and the borrow checker rejects a handle that outlives
//!   its scope.
//! * Everything that can collect takes `&mut Scope`. A [`View`] reads an
//!   object directly, with no root-stack traffic, and borrows the scope
//!   shared, so no collection can run while a view exists.
//! * A [`Typed`] handle holds an object of a [`Layout`] the program knows
//!   at compile time; its reads need no checks (`typed`).
//! * [`GlobalRoot`] keeps a value alive independently of any scope and can
//!   be read from any vproc; its value is promoted to the global heap.
//!
//! Parallelism: [`Scope::par2`] forks a task that another vproc may steal
//! (see `crate::sched`); a task receives its values as an explicit
//! environment of handles, since handles cannot cross threads.
//! [`Scope::tabulate`], [`Scope::par_map`] and [`Scope::seq_reduce`] build
//! and consume parallel sequences: vectors, or ropes of vectors for long
//! ones (`tabulate.rs`).
//!
//! Threads and channels: [`Scope::spawn`] starts a thread of the language
//! written in continuation-passing style ([`Next`]); [`Channel`]s are
//! synchronous, with a choice over several (`cml`).
//!
//! Blocking: code that may block outside the runtime runs in
//! [`Scope::blocking`], so that the other vprocs' collections need not wait
//! for it (`blocking`).
//!
//! Mutation: mutable objects (arrays, and mixed objects whose descriptor is
//! `mutable`) are allocated in the global heap, and storing a local value
//! into one promotes the value first — a write barrier that keeps both
//! invariants of §2.3 for languages with mutation.

mod blocking;
mod cml;
mod combined;
mod frame;
pub(crate) mod parallel;
mod registered;
pub(crate) mod roots;
mod scope;
mod tabulate;
#[cfg(test)]
mod test_layouts;
mod typed;
mod view;
mod weak;

pub use blocking::BlockingSection;
pub(crate) use cml::Step;
pub use cml::{Case, Channel, Next, Sel};
pub use frame::FrameSlot;
pub(crate) use parallel::SlotHandles;
pub use registered::Registered;
pub use roots::GlobalRoot;
pub use scope::{Handle, Scope, Slot};
pub use tabulate::ROPE_LEAF_MAX;
pub use typed::{Fresh, Layout, Record, Typed};
pub(crate) use view::resolve;
pub use view::{ObjectKind, View};
