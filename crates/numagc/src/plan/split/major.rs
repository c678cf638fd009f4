//! Major collection (§3.3, Figure 3).
//!
//! Copies the live old data of a local heap — everything below the young
//! data of the last minor collection — into the vproc's current global chunk,
//! then slides the young data down to the bottom of the local heap. The young
//! data is certainly live (a minor collection has just run), so keeping it
//! local avoids promoting it prematurely. With `include_young` the young data
//! goes to the global heap too; the slow path asks for that when the young
//! data alone leaves the nursery below its minimum.
//!
//! [`evacuate_all`] takes the nursery too, without a minor collection first:
//! the split-heap plan's survivor promotion (see `plan::split`).
//!
//! Ephemerons and finalisers (`plan::split::weak`) are processed after the
//! copy and before the slide, so the young ones are rebased like the
//! pointers into the young data.
//!
//! Roots: the root stack and the young objects. Old objects cannot point to
//! young ones (they are immutable and older), so after the copy only the
//! roots and the young objects themselves can point into the young data, and
//! the slide adjusts exactly those.

use super::copy::ToGlobal;
use crate::object::{is_pointer, update_value_fields, Obj};
use crate::vproc::Vproc;
use std::time::Instant;

/// Runs a major collection (the nursery must be empty: call right after a
/// minor collection). Returns the bytes copied to the global heap.
pub(crate) fn collect(v: &mut Vproc, include_young: bool) -> usize {
    let from_hi = if include_young {
        v.split.local.old_top
    } else {
        v.split.local.young_start
    };
    evacuate(v, from_hi)
}

/// Evacuates the whole local heap, nursery included, to the global heap
/// (survivor promotion): a minor and a major collection in one pass, which
/// copies the nursery's survivors once instead of twice. Counted as a major
/// collection. Returns the bytes copied.
pub(crate) fn evacuate_all(v: &mut Vproc) -> usize {
    v.count_allocation();
    v.stats.survivor_evacuations += 1;
    let end = v.split.local.end;
    evacuate(v, end)
}

/// Copies the live objects of `[base, from_hi)` to the global heap and
/// slides what lies above `from_hi` (the young data) down to `base`.
fn evacuate(v: &mut Vproc, from_hi: usize) -> usize {
    let _guard = crate::gc::AbortOnUnwind("major collection");
    let t0 = Instant::now();
    let shared = v.shared.clone();
    let lh = v.split.local.clone();
    let id = v.id;
    let copied = {
        let mut c = ToGlobal::new(
            &shared.heap,
            &shared.descs,
            &mut v.split.cursor,
            &mut v.split.copy_reserve,
            v.node,
            (lh.base, from_hi),
            (lh.base, lh.end),
        );
        // Pointers into the young data are rebased by the distance it will
        // slide, in the same pass that forwards the old data they reach.
        let delta = from_hi - lh.base;
        let (young_lo, young_hi) = (from_hi, lh.old_top);
        let rebase = |w: u64| -> u64 {
            let a = w as usize;
            if is_pointer(w) && a >= young_lo && a < young_hi {
                (a - delta) as u64
            } else {
                w
            }
        };
        for r in v.roots.as_mut_slice().iter_mut() {
            *r = rebase(c.forward(*r));
        }
        let mut s = from_hi;
        while s < lh.old_top {
            // SAFETY: the young data lies object after object.
            let o = unsafe { Obj::at(s) };
            let h = o.header().expect("young object has a header");
            update_value_fields(o, h, &shared.descs, |w| rebase(c.forward(w)));
            s += h.size_bytes();
        }
        c.finish();
        if !shared.weak.is_empty() {
            // Before the slide: the weak processing reads the forwarding
            // pointers left in the evacuated range.
            super::weak::major(&shared, id, &mut c, (young_lo, young_hi), delta);
        }
        c.copied
    };
    // Slide the young data (if kept) down to the base: its pointers were
    // rebased above, and nothing else points into it (old objects are
    // older, the global heap never points into a local heap).
    let young = lh.old_top.saturating_sub(from_hi);
    if young > 0 && from_hi > lh.base {
        // SAFETY: both ranges lie inside this vproc's local heap; `copy`
        // handles the overlap.
        unsafe { std::ptr::copy(from_hi as *const u8, lh.base as *mut u8, young) };
    }
    let lh = &mut v.split.local;
    lh.old_top = lh.base + young;
    lh.young_start = lh.base;
    v.reset_nursery();
    v.record_pause(crate::trace::SpanKind::Major, t0);
    v.stats.bytes_copied_major += copied as u64;
    copied
}
