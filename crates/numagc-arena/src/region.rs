//! The header at the start of every region the global heap hands out: local
//! heaps (subheap or variable-chunk ones), large chunks and the bootstrap
//! area. `free(ptr)` finds it by masking `ptr` with the region alignment.
//!
//! Paper §3: "A local heap is a contiguous piece of memory with a fixed size,
//! which in turn is allocated from the global heap." Here that fixed size is
//! [`REGION_SIZE`] (4 MiB), and every region is aligned to it, so the local
//! heap (and through it the owning thread) of any chunk is one mask away.
//!
//! Invariant: `kind`, `owner` and `node` are written before the region's bit
//! is set in [`crate::region_map`] and before any chunk of it is handed out,
//! and do not change while the region has a live chunk, so any thread holding
//! a chunk may read them without synchronisation.

use crate::thread_heap::ThreadHeap;

/// log2 of [`REGION_SIZE`].
pub(crate) const REGION_SHIFT: u32 = 22;
/// Size and alignment of a local heap (and alignment of every region).
pub const REGION_SIZE: usize = 1 << REGION_SHIFT;
/// The value of [`RegionHeader::magic`] in a live region.
pub(crate) const REGION_MAGIC: usize = 0x5ac0_9e11_a4e0_a000;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub(crate) enum RegionKind {
    /// A local heap carved into fixed-size-chunk subheaps (`subheap.rs`).
    Subheaps = 1,
    /// A local heap of variable-size chunks (`local_heap.rs`).
    Variable = 2,
    /// One very large chunk straight from the global heap (`large.rs`).
    Large = 3,
    /// The allocator's own bootstrap memory (`bootstrap.rs`).
    Bootstrap = 4,
}

#[repr(C)]
pub(crate) struct RegionHeader {
    pub magic: usize,
    pub kind: RegionKind,
    /// Topology node the region's pages were bound to.
    pub node: u32,
    /// The thread heap whose arenas own the chunks (null for large chunks and
    /// the bootstrap area, which have no owner thread).
    pub owner: *const ThreadHeap,
    /// Bytes mapped for the region (`REGION_SIZE` for local heaps).
    pub map_len: usize,
    /// Next region of the same owner and kind (owner-private list).
    pub next: *mut RegionHeader,
}

/// The region that `addr` lies in (its base, by masking).
#[inline]
pub(crate) fn base_of(addr: usize) -> usize {
    addr & !(REGION_SIZE - 1)
}
