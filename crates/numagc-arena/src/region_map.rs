//! Which regions of the address space belong to this heap manager: one bit
//! per [`REGION_SIZE`](crate::REGION_SIZE)-aligned region, so that `owns(ptr)` and `free` can
//! tell one of our chunks from a foreign pointer without touching memory that
//! might not be mapped.
//!
//! Paper §3 (end): "upon de-allocation it is undecidable whether a data vector
//! has been allocated within the realm of SAC or outside. However, our private
//! heap manager makes exactly this decidable." This map is how.
//!
//! A second map, of the same shape, marks the regions where the data of a
//! large chunk aligned to [`REGION_SIZE`] or more begins (`large.rs`): that
//! data starts at the region's first byte, so its header is in the region
//! before, the chunk's first. [`header_of`] finds the header for either.
//!
//! Invariant: a region's bit is set from the moment its header is written
//! until just before it is unmapped or cached by the global heap; only the
//! first region of a large chunk has its bit set. A region's bit in the
//! second map is set exactly while a large chunk whose data begins there
//! is live: after the bit of its first region, cleared before it. The maps
//! themselves are static arrays of 4 MiB each (2^47 / 4 MiB bits) in
//! `.bss`: the system commits their pages only when a bit in them is set,
//! and a lookup is one load with no pointer to follow (the first map's is
//! on the path of every `free`; the second is read only for pointers the
//! first does not know).

use std::sync::atomic::{AtomicU64, Ordering};

use crate::region::{base_of, REGION_SHIFT, REGION_SIZE};

/// User-space addresses on x86-64 and aarch64 Linux stay below 2^47.
const ADDRESS_BITS: u32 = 47;
const BITS: usize = 1 << (ADDRESS_BITS - REGION_SHIFT);
const WORDS: usize = BITS / 64;

static MAP: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];
/// The regions where the data of a large chunk aligned to `REGION_SIZE` or
/// more begins.
static ALIGNED_DATA: [AtomicU64; WORDS] = [const { AtomicU64::new(0) }; WORDS];

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

/// Marks the region at `base` as the one where the data of a large chunk
/// aligned to `REGION_SIZE` or more begins, its header in the region
/// before. `false` when the address is outside the covered range.
pub(crate) fn insert_aligned_data(base: usize) -> bool {
    match index(base) {
        Some(i) => {
            ALIGNED_DATA[i / 64].fetch_or(1 << (i % 64), Ordering::Release);
            true
        }
        None => false,
    }
}

/// Forgets the aligned data region at `base`.
pub(crate) fn remove_aligned_data(base: usize) {
    if let Some(i) = index(base) {
        ALIGNED_DATA[i / 64].fetch_and(!(1 << (i % 64)), Ordering::Release);
    }
}

/// The base of the live region whose header describes the region `addr`
/// lies in: that region itself when it is registered, the one before when
/// the data of a large chunk aligned to `REGION_SIZE` or more begins in it;
/// `None` when neither.
#[inline]
pub(crate) fn header_of(addr: usize) -> Option<usize> {
    let base = base_of(addr);
    if contains(base) {
        return Some(base);
    }
    aligned_data_header(base)
}

/// The header region of the aligned large chunk whose data begins in the
/// region at `base` (out of line: only pointers the first map does not know
/// get here).
#[cold]
#[inline(never)]
pub(crate) fn aligned_data_header(base: usize) -> Option<usize> {
    let i = index(base)?;
    let set = ALIGNED_DATA[i / 64].load(Ordering::Acquire) & (1 << (i % 64)) != 0;
    set.then(|| base - REGION_SIZE)
}
