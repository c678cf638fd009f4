//! Minor collection (§3.3, Figure 2).
//!
//! Copies the live nursery objects of one vproc to the top of its old-data
//! area, Cheney-style, from the vproc's roots. There are no pointers into a
//! local heap from outside it (§2.3) and old objects, being immutable and
//! older, cannot point into the nursery, so the roots are the root stack
//! alone and no synchronisation is needed. The copies become the young data;
//! the free space left is halved to make the new nursery.

use crate::object::header::Header;
use crate::object::{is_pointer, update_value_fields, Obj};
use crate::vproc::Vproc;
use std::time::Instant;

/// Runs a minor collection; returns the bytes copied.
pub(crate) fn collect(v: &mut Vproc) -> usize {
    let _guard = crate::gc::AbortOnUnwind("minor collection");
    let t0 = Instant::now();
    v.count_allocation();
    let shared = v.shared.clone();
    let descs = &shared.descs;
    let lh = &mut v.split.local;
    let (nursery_lo, nursery_hi) = (lh.nursery_start, v.alloc_ptr);
    let (local_lo, local_hi) = (lh.base, lh.end);
    lh.young_start = lh.old_top;
    let mut top = lh.old_top;

    let forward = |w: u64, top: &mut usize| -> u64 {
        if !is_pointer(w) {
            return w;
        }
        let a = w as usize;
        if a < local_lo || a >= local_hi {
            return w;
        }
        // SAFETY: a pointer value into this vproc's local heap targets an
        // object header (or a forwarded object's header slot).
        let o = unsafe { Obj::at(a) };
        let hw = o.header_word();
        if hw & 1 == 0 {
            return hw; // copied earlier in this pass, or promoted
        }
        if a < nursery_lo || a >= nursery_hi {
            return w; // old data stays
        }
        let h = Header::decode(hw).expect("header");
        let dst = *top;
        *top += h.size_bytes();
        o.copy_to(h, dst);
        o.forward_to(dst);
        dst as u64
    };

    for r in v.roots.get_mut().iter_mut() {
        *r = forward(*r, &mut top);
    }
    let mut scan = lh.young_start;
    while scan < top {
        // SAFETY: `[young_start, top)` holds the objects this pass copied,
        // laid out one after another.
        let o = unsafe { Obj::at(scan) };
        let h = o.header().expect("copied object has a header");
        scan += h.size_bytes();
        update_value_fields(o, h, descs, |w| forward(w, &mut top));
    }
    debug_assert!(
        top <= nursery_lo,
        "minor collection overflowed into the nursery"
    );
    let copied = top - lh.young_start;
    lh.old_top = top;
    v.reset_nursery();
    v.record_pause(crate::trace::SpanKind::Minor, t0);
    v.stats.bytes_copied_minor += copied as u64;
    copied
}
