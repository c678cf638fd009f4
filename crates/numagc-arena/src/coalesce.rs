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
//! local heap is taken; and only when some chunk was freed since the last
//! sweep (otherwise there is nothing new to merge, and a growing heap would
//! pay a sweep of all its local heaps for every new one).
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
    v.freed_since_sweep = 0;
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::arena::LocalState;
    use crate::local_heap::{alloc_from_bins, alloc_from_top, free, grow, DATA_OFFSET};
    use crate::region::REGION_SIZE;
    use crate::size_class::MEDIUM_HEADER;

    /// Eight chunks that tile a fresh local heap exactly.
    const CHUNK: usize = (REGION_SIZE - DATA_OFFSET) / 8;

    fn fill_one_heap(st: &mut LocalState) -> Vec<*mut u8> {
        assert!(grow(st));
        let ps: Vec<_> = (0..8)
            .map(|_| alloc_from_top(&mut st.variable, CHUNK))
            .collect();
        for w in ps.windows(2) {
            assert_eq!(
                w[1] as usize - w[0] as usize,
                CHUNK,
                "chunks are carved in order"
            );
        }
        assert!(
            alloc_from_top(&mut st.variable, CHUNK).is_null(),
            "the heap is full"
        );
        ps
    }

    #[test]
    fn free_does_not_coalesce_and_a_request_that_cannot_be_met_does() {
        let mut st = LocalState::new(core::ptr::null());
        let ps = fill_one_heap(&mut st);
        // SAFETY: live chunks of this state's heap.
        unsafe {
            free(&mut st, ps[2]).unwrap();
            free(&mut st, ps[3]).unwrap();
        }
        // Not coalesced on free: a request for twice the size finds nothing.
        let big = 2 * CHUNK - 32;
        assert!(alloc_from_bins(&mut st.variable, big).is_null());
        // The same size as freed is served at once, from the last freed chunk.
        let again = alloc_from_bins(&mut st.variable, CHUNK);
        assert_eq!(again, ps[3]);
        // SAFETY: live chunk.
        unsafe { free(&mut st, again).unwrap() };
        // Deferred coalescing: the sweep merges the two neighbours.
        let report = sweep(&mut st);
        assert_eq!(report.merged, 1);
        let merged = alloc_from_bins(&mut st.variable, big);
        assert_eq!(
            merged, ps[2],
            "the merged chunk starts at the first of the two"
        );
        // SAFETY: its header says how large it is: both chunks (the rest, 32
        // bytes, was too small to split off).
        let size = unsafe { size_word(merged as usize - MEDIUM_HEADER) } & !15;
        assert_eq!(size, 2 * CHUNK);
    }

    #[test]
    fn a_heap_left_empty_goes_back_to_the_global_heap() {
        let mut st = LocalState::new(core::ptr::null());
        let first = fill_one_heap(&mut st);
        let second = fill_one_heap(&mut st); // the first is no longer current
        let before = crate::global_heap::stats().regions_released;
        for p in &first {
            // SAFETY: live chunks.
            unsafe { free(&mut st, *p).unwrap() };
        }
        assert!(region_map::contains(first[0] as usize));
        let report = sweep(&mut st);
        assert_eq!(report.released, 1);
        assert!(crate::global_heap::stats().regions_released > before);
        assert!(
            !region_map::contains(first[0] as usize),
            "a released heap is no longer ours"
        );
        // The current heap keeps its chunks.
        for p in &second {
            // SAFETY: live chunks.
            unsafe { free(&mut st, *p).unwrap() };
        }
        assert_eq!(sweep(&mut st).released, 0, "the current heap stays");
    }
}
