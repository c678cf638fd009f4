//! Allocation prefetch: bump allocation touches memory a little ahead of
//! itself, so that the cache lines the next objects go into are on their
//! way before the stores that fill them.
//!
//! A bump allocator writes every nursery line once per nursery cycle, and
//! a nursery larger than the cache (numagc's default local heap is 16 MiB,
//! against a few MiB of L2) makes each of those writes a miss that stalls
//! the mutator while the line is read for ownership. HotSpot's compiled
//! allocations prefetch a few lines past the TLAB top for this reason
//! (`AllocatePrefetchStyle`, `AllocatePrefetchDistance`); OCaml's minor
//! heap (2 MiB by default) mostly fits the cache and does without.
//!
//! The choice here: one prefetch, for writing, of the line
//! [`DISTANCE`] bytes past the new allocation pointer, on every inline
//! allocation (the compiled interface's, the safe API's and the C
//! header's `numagc_inline_alloc`). One instruction per allocation; a
//! sequential allocator crosses a line every few objects, so most of them
//! hit a line already requested, which the hardware drops at once.
//! Measured on binarytrees 21 (1 vproc, split plan): the mutator's time
//! goes down by about a tenth at the default local heap, more with larger
//! ones (`docs/results/compiled.md`, "Allocation prefetch").
//!
//! A prefetch never faults, so any address is sound, including one past
//! the nursery's end.

/// How far past the allocation pointer the prefetched line lies, in
/// bytes: eight lines, far enough to cover a miss at the rate a tight
/// allocation loop fills lines (measured: 256, 512 and 1024 within a few
/// percent of each other on binarytrees; 512 the middle).
pub const DISTANCE: usize = 512;

/// Asks for the cache line holding `addr` in a state ready for writing
/// (`PREFETCHW` where the target has it, `PREFETCHT0` otherwise); a no-op
/// on targets without a prefetch intrinsic in stable Rust.
#[inline(always)]
pub fn for_write(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    hint::<{ core::arch::x86_64::_MM_HINT_ET0 }>(addr);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

/// Asks for the cache line holding `addr` for reading (`PREFETCHT0`); a
/// no-op on targets without a prefetch intrinsic in stable Rust. For
/// graph walks that know the next objects before they read them (the PE
/// packer, `crate::pe::pack`).
#[inline(always)]
pub fn for_read(addr: usize) {
    #[cfg(target_arch = "x86_64")]
    hint::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr);
    #[cfg(not(target_arch = "x86_64"))]
    let _ = addr;
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn hint<const HINT: i32>(addr: usize) {
    // SAFETY: a prefetch is a hint that never faults and writes nothing,
    // whatever the address; SSE, which the intrinsic needs, is part of the
    // x86_64 baseline.
    unsafe { core::arch::x86_64::_mm_prefetch::<HINT>(addr as *const i8) };
}
