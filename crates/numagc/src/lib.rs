//! numagc: a memory-management runtime for parallel functional languages on
//! multicore and NUMA machines.
//!
//! The first plan is the split heap of *Garbage Collection for Multicore
//! NUMA Machines* (Auhagen, Bergstrom, Fluet, Reppy; MSPC'11), in
//! `../shared/papers/manticore-numa-gc.md`:
//!
//! | paper | module |
//! |---|---|
//! | §2.2 vprocs, pinning, sparse placement | [`topology`], [`runtime`](Runtime), `vproc` |
//! | §2.3 heap invariants, promotion on sharing | `mutator` ([`Scope::promote`], [`Scope::set`]), `plan::split::promote` |
//! | §3.1 chunked global heap, node affinity | `heap::space`, `heap::chunk_pool`, `heap::global`, `heap::cursor` |
//! | §3.2 object headers, descriptor table | [`object::header`], [`object::descriptor`] |
//! | §3.3 local heaps, minor and major collections | `plan::split::{local_heap, mutator, minor, major, copy}` |
//! | §3.4 parallel global collection | `gc::handshake`, `gc::work_queue`, `plan::split::global` |
//! | §2.2–2.3 work stealing, lazy promotion of stolen tasks | `sched`, [`Scope::par2`] |
//! | §2.1 threads, synchronous channels, choice (CML) | `sched::thread`, `sched::channel`, [`Scope::spawn`], [`Channel`] |
//! | §2.1 PML's parallel arrays (ropes of vectors) | `mutator::tabulate`, [`Scope::tabulate`] |
//! | §4.3 placement policies local / interleave / node0 | [`numa`], `heap::global` |
//! | §3.4 extended: safepoint deadline, to-space set aside, refused memory | `gc::handshake`, `plan::split::{global, copy}`, `fault` |
//! | §3.4 extended: blocking sections (a proxy collects for a blocked vproc) | `gc::blocking`, `sched::proxy`, [`Scope::blocking`] |
//! | multicore-ocaml-gc.txt §5.1–5.2: ephemerons, weak references, finalisers | `weak`, `mutator::weak` ([`Scope::ephemeron`], [`Scope::finalise`]), `plan::split::weak` |
//!
//! ```
//! use numagc::{Config, Descriptor, Handle, Runtime};
//! let rt = Runtime::new(Config::builder().vprocs(1).build()?)?;
//! let pair = rt.register(Descriptor::mixed("pair", 2, &[0, 1])?)?;
//! let sum = rt.run_on(0, move |s| -> numagc::Result<i64> {
//!     let p = s.alloc_mixed(pair, &[Handle::int(20), Handle::int(22)], &[])?;
//!     s.collect_minor(); // `p` is a handle: it survives the move
//!     let v = s.view(p);
//!     Ok(v.field(0).as_int().unwrap() + v.field(1).as_int().unwrap())
//! })??;
//! assert_eq!(sum, 42);
//! # Ok::<(), numagc::Error>(())
//! ```

pub mod compiled;
pub mod config;
pub mod error;
#[cfg(feature = "fault-injection")]
pub mod fault;
#[cfg(not(feature = "fault-injection"))]
mod fault;
mod gc;
mod heap;
#[cfg(all(test, loom))]
mod loom_models;
mod mutator;
pub mod numa;
pub mod object;
pub mod pe;
mod plan;
mod runtime;
mod sched;
mod stack;
pub mod stats;
mod sync;
pub mod topology;
pub mod trace;
mod vproc;
mod weak;

pub use config::{Config, ConfigBuilder, NumaPolicy, PlanKind, TaskPromotion};
pub use error::{ConfigError, DescriptorError, Error, ErrorKind, Result};
pub use heap::global::BindRecord;
pub use mutator::{
    BlockingSection, Case, Channel, FrameSlot, Fresh, GlobalRoot, Handle, Layout, Next, ObjectKind,
    Record, Registered, Scope, Sel, Slot, Typed, View, ROPE_LEAF_MAX,
};
pub use object::descriptor::{DescId, Descriptor};
pub use runtime::{Runtime, RuntimeInfo};
pub use stats::{PromotionCost, StatsReport};
pub use topology::Topology;

/// The README's Rust examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeExamples;
