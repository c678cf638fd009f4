//! Minor collection (§3.3, Figure 2).
//!
//! Copies the live nursery objects of one vproc to the top of its old-data
//! area, Cheney-style, from the vproc's roots. There are no pointers into a
//! local heap from outside it (§2.3) and old objects, being immutable and
//! older, cannot point into the nursery, so the roots are the root stack
//! alone and no synchronisation is needed. The copies become the young data;
//! the free space left is halved to make the new nursery.

use super::copy::Scan;
use crate::object::descriptor::DescriptorTable;
use crate::object::header::Header;
use crate::object::{is_pointer, Obj};
use crate::vproc::Vproc;
use std::time::Instant;

/// The copying state of one minor collection.
pub(crate) struct Minor<'a> {
    descs: &'a DescriptorTable,
    /// The nursery's occupied part: what this collection evacuates.
    pub nursery: (usize, usize),
    /// The whole local heap.
    pub local: (usize, usize),
    /// Next free byte of the old-data area (copies go here).
    top: usize,
    /// Next copy to scan.
    scan: usize,
}

impl Minor<'_> {
    /// Returns the new value of a field or root holding `w`.
    #[inline(always)]
    pub fn forward(&mut self, w: u64) -> u64 {
        if !is_pointer(w) {
            return w;
        }
        let a = w as usize;
        if a < self.local.0 || a >= self.local.1 {
            return w;
        }
        // SAFETY: a pointer value into this vproc's local heap targets an
        // object header (or a forwarded object's header slot).
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        if hw & 1 == 0 {
            return hw; // copied earlier in this pass, or promoted
        }
        if a < self.nursery.0 || a >= self.nursery.1 {
            return w; // old data stays
        }
        let h = Header::decode(hw).expect("header");
        let dst = self.top;
        self.top += h.size_bytes();
        o.copy_to(h, dst);
        o.forward_to(dst);
        dst as u64
    }

    /// Scans the copies until none is left unscanned (Cheney).
    #[inline]
    pub fn drain(&mut self) {
        while self.scan < self.top {
            // SAFETY: `[young_start, top)` holds the objects this pass
            // copied, laid out one after another.
            let o = unsafe { Obj::at(self.scan) };
            let h = o.header().expect("copied object has a header");
            self.scan += h.size_bytes();
            self.scan_fields(o, h);
        }
    }
}

impl<'a> Scan<'a> for Minor<'a> {
    fn descs(&self) -> &'a DescriptorTable {
        self.descs
    }

    #[inline(always)]
    fn forward(&mut self, w: u64) -> u64 {
        Minor::forward(self, w)
    }
}

/// Runs a minor collection; returns the bytes copied.
pub(crate) fn collect(v: &mut Vproc) -> usize {
    let _guard = crate::gc::AbortOnUnwind("minor collection");
    let t0 = Instant::now();
    v.count_allocation();
    let shared = v.shared.clone();
    let alloc_ptr = v.alloc_ptr();
    let lh = &mut v.split.local;
    lh.young_start = lh.old_top;
    let mut m = Minor {
        descs: &shared.descs,
        nursery: (lh.nursery_start, alloc_ptr),
        local: (lh.base, lh.end),
        top: lh.old_top,
        scan: lh.old_top,
    };
    for r in v.roots.as_mut_slice().iter_mut() {
        *r = m.forward(*r);
    }
    m.drain();
    if !shared.weak.is_empty() {
        super::weak::minor(&shared, v.id, &mut m);
    }
    let top = m.top;
    let lh = &mut v.split.local;
    debug_assert!(
        top <= lh.nursery_start,
        "minor collection overflowed into the nursery"
    );
    let copied = top - lh.young_start;
    lh.old_top = top;
    // A value held across this collection without a root is caught at its
    // next use (`compiled`'s debug checks, the verifier).
    #[cfg(debug_assertions)]
    crate::compiled::poison(lh.nursery_start, alloc_ptr);
    v.reset_nursery();
    v.record_pause(crate::trace::SpanKind::Minor, t0);
    v.stats.bytes_copied_minor += copied as u64;
    copied
}
