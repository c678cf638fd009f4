//! The matrix of allocation arenas (paper §3, Fig. 4): size ranges × threads.
//! One [`LocalState`] is one column: every arena of one thread, with the local
//! heaps they draw from. Rows `0 .. K` are [`SmallArena`]s (subheaps of one
//! small class), rows `K .. M` the bins of [`VariableArenas`], and rows
//! `M .. N`, shared by all threads, are the global heap's very large chunks
//! (`large.rs`), as in the figure's single column for them.
//!
//! Each arena provides what the paper lists: "a list of available,
//! appropriately sized chunks" (a subheap's free list / a bin), "an
//! allocation strategy" (pop, bump, first fit and split), "a de-allocation
//! strategy" (push, no coalescing) and "a backup strategy to obtain more
//! memory" (other listed subheaps or bigger bins, the heap's top, the
//! remote-free list, deferred coalescing, a new subheap or local heap, the
//! global heap).
//!
//! Invariant: a column is touched only by the thread that owns its
//! [`crate::thread_heap::ThreadHeap`], so arena operations take no lock.

use crate::local_heap::VariableArenas;
use crate::remote_free::Outbox;
use crate::size_class::NUM_SMALL;
use crate::subheap::{SmallArena, SubheapRegion};
use crate::thread_heap::ThreadHeap;

/// Counters of one thread heap's slow paths.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LocalStats {
    /// Chunks freed by other threads and taken back from the remote lists.
    pub remote_frees_taken: usize,
    /// Of those, carriers (chunks that brought the addresses of others;
    /// `remote_free.rs`) taken back.
    pub remote_carriers_taken: usize,
    /// Deferred-coalescing sweeps run.
    pub sweeps: usize,
    /// Free chunks merged into a neighbour by those sweeps.
    pub merged: usize,
    /// Variable-size local heaps given back to the global heap.
    pub heaps_released: usize,
    /// Subheaps that emptied and gave their slot back to their local heap.
    pub subheaps_released: usize,
    /// Subheap local heaps given back to the global heap.
    pub subheap_heaps_released: usize,
}

pub(crate) struct LocalState {
    /// The thread heap this column belongs to (written into region headers).
    pub(crate) owner: *const ThreadHeap,
    /// Topology node of the owning thread, and whether to bind pages to it.
    pub(crate) node: u32,
    pub(crate) bind: bool,
    pub(crate) small: [SmallArena; NUM_SMALL],
    pub(crate) variable: VariableArenas,
    /// The thread's subheap local heaps.
    pub(crate) subheap_regions: *mut SubheapRegion,
    /// Chunks of other heaps this thread freed, on their way back.
    pub(crate) outbox: Outbox,
    pub(crate) stats: LocalStats,
}

impl LocalState {
    pub(crate) const fn new(owner: *const ThreadHeap) -> Self {
        LocalState {
            owner,
            node: 0,
            bind: false,
            small: SmallArena::column(),
            variable: VariableArenas::new(),
            subheap_regions: core::ptr::null_mut(),
            outbox: Outbox::new(),
            stats: LocalStats {
                remote_frees_taken: 0,
                remote_carriers_taken: 0,
                sweeps: 0,
                merged: 0,
                heaps_released: 0,
                subheaps_released: 0,
                subheap_heaps_released: 0,
            },
        }
    }
}
