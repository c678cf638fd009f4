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
//! first region of a large chunk has its bit set. The map itself is a
//! static array of 4 MiB (2^47 / 4 MiB bits) in `.bss`: the system commits
//! its pages only when a bit in them is set, and a lookup is one load with
//! no pointer to follow (this is on the path of every `free`).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::region::REGION_SHIFT;

/// User-space addresses on x86-64 and aarch64 Linux stay below 2^47.
const ADDRESS_BITS: u32 = 47;
const BITS: usize = 1 << (ADDRESS_BITS - REGION_SHIFT);
const WORDS: usize = BITS / 64;

static MAP: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

fn index(addr: usize) -> Option<usize> {
    let i = addr >> REGION_SHIFT;
    (i < BITS).then_some(i)
}

/// Marks the region at `base` as ours. `false` when the address is outside
/// the covered range (the caller then gives the region back).
pub(crate) fn insert(base: usize) -> bool {
    match index(base) {
        Some(i) => {
            MAP[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
            true
        }
        None => false,
    }
}

/// Forgets the region at `base`.
pub(crate) fn remove(base: usize) {
    if let Some(i) = index(base) {
        MAP[i / 64].fetch_and(!(1 << (i % 64)), Ordering::Release);
    }
}

/// Whether `addr` lies in a region this heap manager handed out (for a large
/// chunk: in its first region).
#[inline(always)]
pub(crate) fn contains(addr: usize) -> bool {
    let Some(i) = index(addr) else { return false };
    MAP[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0
}
