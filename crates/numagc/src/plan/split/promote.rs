//! Promotion (§3.1, §3.3): copying the transitive closure of local values
//! into the global heap so that another vproc, or a mutable global object,
//! may refer to them.
//!
//! "Promotion is essentially a major collection, where the root set is a
//! pointer to the promoted object." The local originals get forwarding
//! pointers, so the vproc's own later reads and its next collection find the
//! global copies.

use super::copy::ToGlobal;
use crate::vproc::Vproc;
use std::time::Instant;

/// Promotes every value in `words` in place; returns the bytes copied.
pub(crate) fn promote(v: &mut Vproc, words: &mut [u64]) -> usize {
    let _guard = crate::gc::AbortOnUnwind("promotion");
    let t0 = Instant::now();
    let shared = v.shared.clone();
    let (lo, hi) = (v.split.local.base, v.split.local.end);
    let mut c = ToGlobal::new(
        &shared.heap,
        &shared.descs,
        &mut v.split.cursor,
        &mut v.split.copy_reserve,
        v.node,
        (lo, hi),
        (lo, hi),
    );
    for w in words.iter_mut() {
        *w = c.forward(*w);
    }
    c.finish();
    if !shared.weak.is_empty() {
        // Promotion treats ephemerons as strong: see `plan::split::weak`.
        super::weak::promoted(&shared, v.id, &mut c, (lo, hi));
    }
    let (copied, objects) = (c.copied, c.objects);
    if copied > 0 {
        v.record_pause(crate::trace::SpanKind::Promotion, t0);
        v.stats.bytes_promoted += copied as u64;
        v.stats.objects_promoted += objects as u64;
    }
    copied
}

/// Whether `w` points into vproc `v`'s local heap.
#[inline(always)]
pub(crate) fn is_local(v: &Vproc, w: u64) -> bool {
    crate::object::is_pointer(w) && v.split.local.contains(w as usize)
}
