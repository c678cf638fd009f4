//! Memory spaces of the split heap (manticore-numa-gc.md §3.1, §3.3):
//! the address-space reservation and chunk table, per-node chunk pools,
//! the global heap with its large-object space, each vproc's current chunk,
//! and the local-heap layout.

pub(crate) mod budget;
pub(crate) mod chunk_pool;
pub(crate) mod cursor;
pub mod global;
pub(crate) mod local;
pub(crate) mod space;
