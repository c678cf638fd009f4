//! Torture testing of numagc (issue 5, parts 1 and 2).
//!
//! Random mutator programs ([`program`]) run on a [`numagc::Runtime`] with
//! the heap verifier on, side by side with a plain-Rust shadow of the
//! object graph they build ([`shadow`]). The interpreter ([`interp`])
//! forces collections at random points — down to one after every
//! allocation — and around each compares digests of everything reachable
//! ([`check`]): before and after the collection, and against the shadow.
//! Objects carry unique ids ([`layout`]), so a shared object that a
//! collection duplicated, or an update lost on one copy, is found.
//!
//! Programs also run sections of compiled code ([`compiled`]): the same
//! shadow and checks, on the compiled-code interface of `numagc::compiled`
//! (frames, inline allocation and barriers, raw reads, `par2`).
//!
//! Two drivers use the same generator and interpreter: `numagc torture`
//! (the CLI, seeded rounds with random runtime settings, [`round`]) and the
//! proptest suite (`tests/`), whose failures shrink to a minimal program
//! ([`program::strategy`], [`rng`]).
//!
//! What the runtime itself guarantees is checked by its verifier
//! (`gc::verify`, after every collection): headers, pointers to object
//! starts, and the two invariants of manticore-numa-gc.md §2.3 (no pointer
//! between local heaps, none from the global heap into a local heap). The
//! verifier aborts the process on a violation; the CLI therefore runs the
//! rounds in a child process and reports an abort with the seed and the
//! operation, and proptest runs each case in a forked process.

pub mod check;
pub mod compiled;
pub mod hybrid;
pub mod interp;
pub mod layout;
pub mod program;
pub mod rng;
pub mod round;
pub mod shadow;

pub use interp::{Failure, FailureKind, Fault, FaultKind, Options, Report};
pub use program::{Build, COp, Collect, Op, Sizes, Src};
pub use round::{RoundPlan, RoundResult, RuntimeCounts};
