//! Memory spaces a plan assembles (manticore-numa-gc.md §3.1): the
//! address-space reservation and chunk table, per-node chunk pools, the
//! global heap of chunks with its large-object space and heap limit, and
//! the bump cursor over a chunk. The layout of a split-heap local heap is
//! the split plan's (`crate::plan::split::local_heap`).

pub(crate) mod budget;
pub(crate) mod chunk_pool;
pub(crate) mod cursor;
pub mod global;
pub(crate) mod prefetch;
pub(crate) mod space;
