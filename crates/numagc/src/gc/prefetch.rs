//! A small FIFO of fields waiting to be forwarded, with the header of each
//! field's target prefetched when it enters: the scan loops of the copying
//! collections use it to overlap the cache misses of reading from-space
//! headers.
//!
//! Why: a Cheney scan forwards the fields of the copies in breadth-first
//! order, so the from-space objects it reads next are scattered over the
//! whole from-space (a tree allocated depth-first is read level by level).
//! Profiles of binary-trees showed about half of the scan time stalled on
//! the load of a from-space header. Delaying each field by [`DEPTH`] others
//! lets that many misses be in flight at once; the technique is the
//! prefetch-on-grey FIFO of Cher, Hosking and Vijaykumar (ASPLOS 2004),
//! applied to a copying scan.
//!
//! Invariant: a field leaves the queue exactly once, and a scan loop drains
//! the queue before it decides that nothing is left to scan (forwarding a
//! queued field may copy more objects).

use crate::object::Obj;

/// Fields held back; 8 covers the latency of a miss to memory at the rate
/// the scan loop issues them (measured: 4, 8 and 16 — see
/// `docs/results/binarytrees.md`).
pub(crate) const DEPTH: usize = 8;

/// Fields whose target header has been prefetched, oldest first.
pub(crate) struct FieldQueue {
    fields: [(Obj, usize); DEPTH],
    head: usize,
    len: usize,
}

impl FieldQueue {
    pub fn new() -> FieldQueue {
        // SAFETY: never read before being overwritten by `push` (`len` is
        // 0); `Obj` is a plain address.
        let placeholder = unsafe { Obj::at(8) };
        FieldQueue { fields: [(placeholder, 0); DEPTH], head: 0, len: 0 }
    }

    /// Queues field `i` of `o`, whose value `w` points to an object that
    /// may need forwarding; returns the oldest field when the queue was
    /// full.
    #[inline(always)]
    pub fn push(&mut self, o: Obj, i: usize, w: u64) -> Option<(Obj, usize)> {
        prefetch(w as usize);
        let tail = (self.head + self.len) % DEPTH;
        if self.len == DEPTH {
            let out = self.fields[self.head];
            self.fields[self.head] = (o, i);
            self.head = (self.head + 1) % DEPTH;
            return Some(out);
        }
        self.fields[tail] = (o, i);
        self.len += 1;
        None
    }

    /// The oldest queued field.
    #[inline]
    pub fn pop(&mut self) -> Option<(Obj, usize)> {
        if self.len == 0 {
            return None;
        }
        let out = self.fields[self.head];
        self.head = (self.head + 1) % DEPTH;
        self.len -= 1;
        Some(out)
    }
}

/// Asks the processor to bring the cache line at `addr` in for reading. A
/// hint: it never faults, whatever the address.
#[inline(always)]
pub(crate) fn prefetch(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` is a hint that never faults, on any address;
    // SSE is part of the x86_64 baseline.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(addr as *const i8)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}
