//! Which regions of the address space belong to this heap manager: one bit
//! per [`REGION_SIZE`](crate::REGION_SIZE)-aligned region, so that `owns(ptr)` and `free` can
//! tell one of our chunks from a foreign pointer without touching memory that
//! might not be mapped.
//!
//! Paper §3 (end): "upon de-allocation it is undecidable whether a data vector
//! has been allocated within the realm of SAC or outside. However, our private
//! heap manager makes exactly this decidable." This map is how.
//!
//! Invariant: a region's bit is set from the moment its header is written
//! until just before it is unmapped or cached by the global heap; only the
//! first region of a large chunk has its bit set. The map itself is a lazily
//! committed `MAP_NORESERVE` mapping of 4 MiB (2^47 / 4 MiB bits), made once.

use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};

use crate::os;
use crate::region::REGION_SHIFT;

/// User-space addresses on x86-64 and aarch64 Linux stay below 2^47.
const ADDRESS_BITS: u32 = 47;
const BITS: usize = 1 << (ADDRESS_BITS - REGION_SHIFT);
const WORDS: usize = BITS / 64;
const MAP_BYTES: usize = WORDS * 8;

static MAP: AtomicPtr<AtomicU64> = AtomicPtr::new(core::ptr::null_mut());

fn words() -> Option<&'static [AtomicU64]> {
    let mut p = MAP.load(Ordering::Acquire);
    if p.is_null() {
        let fresh = os::map(MAP_BYTES)?.cast::<AtomicU64>();
        match MAP.compare_exchange(
            core::ptr::null_mut(),
            fresh,
            Ordering::AcqRel,
            Ordering::Acquire,
        ) {
            Ok(_) => p = fresh,
            Err(winner) => {
                // SAFETY: `fresh` was mapped just above and never published.
                unsafe { os::unmap(fresh.cast(), MAP_BYTES) };
                p = winner;
            }
        }
    }
    // SAFETY: `p` is a live mapping of WORDS zero-initialised u64s (a valid
    // AtomicU64 bit pattern) that is never unmapped.
    Some(unsafe { core::slice::from_raw_parts(p, WORDS) })
}

fn index(addr: usize) -> Option<usize> {
    let i = addr >> REGION_SHIFT;
    (i < BITS).then_some(i)
}

/// Marks the region at `base` as ours. `false` when the map cannot be made or
/// the address is outside the covered range (the caller then gives it back).
pub(crate) fn insert(base: usize) -> bool {
    match (words(), index(base)) {
        (Some(w), Some(i)) => {
            w[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
            true
        }
        _ => false,
    }
}

/// Forgets the region at `base`.
pub(crate) fn remove(base: usize) {
    if let (Some(w), Some(i)) = (words(), index(base)) {
        w[i / 64].fetch_and(!(1 << (i % 64)), Ordering::Release);
    }
}

/// Whether `addr` lies in a region this heap manager handed out (for a large
/// chunk: in its first region).
pub(crate) fn contains(addr: usize) -> bool {
    let Some(i) = index(addr) else { return false };
    let p = MAP.load(Ordering::Acquire);
    if p.is_null() {
        return false;
    }
    // SAFETY: a non-null MAP is the live, never-unmapped array of WORDS words
    // (see `words`), and `i / 64 < WORDS`.
    let w = unsafe { &*p.add(i / 64) };
    w.load(Ordering::Acquire) & (1 << (i % 64)) != 0
}
