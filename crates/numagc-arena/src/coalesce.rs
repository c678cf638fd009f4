//! Deferred coalescing (paper §3): "we employ a deferred coalescing scheme
//! that only reconstructs larger chunks of memory if a concrete allocation
//! request cannot be satisfied from the immediately available resources.
//! Deferred coalescing moves overhead from de-allocations to allocations."
//!
//! A sweep walks every variable-size local heap of the thread chunk by chunk
//! (chunk sizes tile the heap, so no boundary tags are needed), merges each
//! run of adjacent free chunks into one (taking them out of their bins), and
//! gives a run that reaches the top back to the wilderness. A local heap
//! left without live chunks, other than the current one, goes back to the
//! global heap (which returns its pages to the system). A non-current heap's
//! remaining top becomes a free chunk, so that the bins can find it.
//!
//! It runs only from the allocation slow path, after the bins, the top of
//! the current local heap and the remote frees have failed, and before a new
//! local heap is taken.
//!
//! Invariant kept: the tiling and bin invariants of [`crate::local_heap`].

use crate::arena::LocalState;
use crate::global_heap;
use crate::local_heap::{self, chunk_size, in_use, size_word, VariableRegion, DATA_OFFSET};
use crate::region_map;

/// What one sweep did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SweepReport {
    /// Free chunks merged into a neighbour.
    pub merged: usize,
    /// Local heaps given back to the global heap.
    pub released: usize,
}

/// Coalesces the free chunks of all of this thread's variable-size heaps.
pub(crate) fn sweep(st: &mut LocalState) -> SweepReport {
    let mut report = SweepReport::default();
    let v = &mut st.variable;
    let mut prev: *mut VariableRegion = core::ptr::null_mut();
    let mut r = v.regions;
    while !r.is_null() {
        // SAFETY: the list holds live variable regions of this thread.
        let region = unsafe { &mut *r };
        let next = region.hdr.next.cast::<VariableRegion>();
        let mut p = r as usize + DATA_OFFSET;
        while p < region.top {
            // SAFETY: p is a chunk start (tiling invariant).
            let word = unsafe { size_word(p) };
            if in_use(word) {
                p += chunk_size(word);
                continue;
            }
            let mut q = p;
            let mut total = 0;
            let mut run = 0;
            while q < region.top {
                // SAFETY: q is a chunk start (tiling invariant).
                let w = unsafe { size_word(q) };
                if in_use(w) {
                    break;
                }
                // SAFETY: q is a free chunk, in a bin.
                unsafe { local_heap::unlink(v, q) };
                total += chunk_size(w);
                q += chunk_size(w);
                run += 1;
            }
            report.merged += run - 1;
            if q == region.top {
                region.top = p;
            } else {
                // SAFETY: [p, q) was free chunks just taken out of the bins.
                unsafe { local_heap::insert(v, p, total) };
            }
            p = q;
        }
        if r != v.current && region.live == 0 {
            // Everything merged into the top: give the heap back.
            if prev.is_null() {
                v.regions = next;
            } else {
                // SAFETY: prev is a live region of this list.
                unsafe { (*prev).hdr.next = next.cast() };
            }
            region_map::remove(r as usize);
            // SAFETY: no live chunk, no bin entry (all merged into the top),
            // unlinked from the list and the region map.
            unsafe { global_heap::release_region(r.cast()) };
            report.released += 1;
        } else {
            if r != v.current && region.end - region.top >= 32 {
                let c = region.top;
                let rest = region.end - c;
                region.top = region.end;
                // SAFETY: [c, end) is unused memory of the region.
                unsafe { local_heap::insert(v, c, rest) };
            }
            prev = r;
        }
        r = next;
    }
    report
}
