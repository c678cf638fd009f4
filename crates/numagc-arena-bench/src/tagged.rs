//! Tagged objects of larson and xmalloc-test: a chunk of at least 16 bytes
//! whose first and last 8 bytes hold its tag, checked when it is freed (an
//! allocator that hands out overlapping chunks, or loses a chunk's
//! contents, breaks a tag), and the tally of what was allocated and freed
//! that each workload compares with a replay of its random streams.
//!
//! An object is a `malloc` chunk ([`new_obj`], [`free_obj`]) or, in the
//! workloads' no-allocation bound (`--bound`), a slot of a [`Slab`]
//! allocated and touched before the timed loop ([`place`], [`retire`]).
//! Both write, read and count the tags with the same code; `new_obj` and
//! `free_obj` only add the `malloc` and `free` around it, so that the
//! bound does the same work less the allocator's.

/// Counts of one thread's (or the whole run's) tagged objects.
#[derive(Default, Clone, Copy, PartialEq, Debug)]
pub struct Tally {
    pub allocs: u64,
    pub frees: u64,
    /// Wrapping sum of the tags freed.
    pub tag_sum: u64,
    /// Objects whose tag did not survive.
    pub bad: u64,
}

impl Tally {
    pub fn add(&mut self, o: Tally) {
        self.allocs += o.allocs;
        self.frees += o.frees;
        self.tag_sum = self.tag_sum.wrapping_add(o.tag_sum);
        self.bad += o.bad;
    }
}

/// Writes `tag` into the first and last 8 bytes of the `size` (at least
/// 16) bytes at `addr` and counts an object made.
///
/// # Safety
/// `addr` must point to at least `size` writable bytes that no other
/// thread accesses meanwhile.
#[inline]
pub unsafe fn place(addr: usize, size: usize, tag: u64, t: &mut Tally) {
    debug_assert!(size >= 16);
    let p = addr as *mut u8;
    // SAFETY: the caller's contract: p holds size >= 16 writable bytes.
    unsafe {
        p.cast::<u64>().write_unaligned(tag);
        p.add(size - 8).cast::<u64>().write_unaligned(tag);
    }
    t.allocs += 1;
}

/// Checks the tag of the object that [`place`] made at `addr` with `size`
/// and `tag`, and counts it freed.
///
/// # Safety
/// `addr` must point to at least `size` readable bytes that no other
/// thread writes meanwhile.
#[inline]
pub unsafe fn retire(addr: usize, size: usize, tag: u64, t: &mut Tally) {
    let p = addr as *const u8;
    // SAFETY: the caller's contract: p holds size >= 16 readable bytes.
    let (a, b) = unsafe {
        (
            p.cast::<u64>().read_unaligned(),
            p.add(size - 8).cast::<u64>().read_unaligned(),
        )
    };
    if a != tag || b != tag {
        t.bad += 1;
    }
    t.tag_sum = t.tag_sum.wrapping_add(tag);
    t.frees += 1;
}

/// Allocates `size` (at least 16) bytes with `malloc` and writes `tag` into
/// its first and last 8 bytes; exits the process if `malloc` fails.
pub fn new_obj(size: usize, tag: u64, t: &mut Tally) -> usize {
    debug_assert!(size >= 16);
    // SAFETY: malloc of size >= 16; checked for NULL.
    let p = unsafe { libc::malloc(size) }.cast::<u8>();
    if p.is_null() {
        eprintln!("arena-workload: malloc({size}) returned NULL");
        std::process::exit(3);
    }
    // SAFETY: p is a fresh chunk of size bytes, this thread's alone.
    unsafe { place(p as usize, size, tag, t) };
    p as usize
}

/// Checks the tag of the object at `addr` made by [`new_obj`] with `size`
/// and `tag`, counts it, and frees it.
pub fn free_obj(addr: usize, size: usize, tag: u64, t: &mut Tally) {
    // SAFETY: addr is a live malloc chunk of `size` >= 16 bytes written by
    // new_obj, owned by the caller.
    unsafe { retire(addr, size, tag, t) };
    // SAFETY: allocated by malloc, freed once (the caller gives it up).
    unsafe { libc::free((addr as *mut u8).cast()) };
}

/// The bound's storage: `slots` slots of `max` bytes (rounded up to 16, the
/// alignment `malloc` gives) in one `malloc` chunk, every page written when
/// it is made so that the timed loop neither allocates nor faults memory in.
/// Slot `i` holds the objects placed at index `i`, one at a time.
pub struct Slab {
    base: *mut u8,
    stride: usize,
    slots: usize,
}

// SAFETY: the slab owns its chunk alone (like a Vec<u8>); moving it to
// another thread moves that ownership.
unsafe impl Send for Slab {}

impl Slab {
    /// Room for `slots` objects of at most `max` bytes; exits the process
    /// if `malloc` fails.
    pub fn new(slots: usize, max: usize) -> Slab {
        let stride = max.next_multiple_of(16);
        let bytes = stride
            .checked_mul(slots)
            .expect("slab size overflows")
            .max(1);
        // SAFETY: malloc of a positive size; checked for NULL.
        let base = unsafe { libc::malloc(bytes) }.cast::<u8>();
        if base.is_null() {
            eprintln!("arena-workload: malloc({bytes}) returned NULL");
            std::process::exit(3);
        }
        // SAFETY: base holds `bytes` bytes; writing them faults every page in.
        unsafe { base.write_bytes(0xa5, bytes) };
        Slab {
            base,
            stride,
            slots,
        }
    }

    /// The address of slot `i` (below `slots`): `max` bytes, 16-aligned.
    #[inline]
    pub fn slot(&self, i: usize) -> usize {
        debug_assert!(i < self.slots);
        self.base as usize + i * self.stride
    }
}

impl Drop for Slab {
    fn drop(&mut self) {
        // SAFETY: base came from malloc in Slab::new and is freed once.
        unsafe { libc::free(self.base.cast()) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Slots are 16-aligned, `max` bytes apart at least, and a tag placed in
    /// one survives the neighbours' objects of the largest size; a tag
    /// written over is counted bad.
    #[test]
    fn slab_slots_hold_their_tags_apart() {
        let s = Slab::new(3, 40);
        assert_eq!(s.slot(1) - s.slot(0), 48);
        let mut t = Tally::default();
        for i in 0..3 {
            assert_eq!(s.slot(i) % 16, 0);
            // SAFETY: slot i holds 48 >= 40 bytes of this test's slab.
            unsafe { place(s.slot(i), 40, i as u64 + 7, &mut t) };
        }
        for i in 0..3 {
            // SAFETY: as above.
            unsafe { retire(s.slot(i), 40, i as u64 + 7, &mut t) };
        }
        assert_eq!((t.allocs, t.frees, t.tag_sum, t.bad), (3, 3, 7 + 8 + 9, 0));
        // SAFETY: slot 0 holds 40 bytes; overwrite the low byte of its
        // tail tag (bytes 32..40), then check.
        unsafe {
            place(s.slot(0), 40, 1, &mut t);
            (s.slot(0) as *mut u8).add(32).write(0xff);
            retire(s.slot(0), 40, 1, &mut t);
        }
        assert_eq!(t.bad, 1);
    }
}
