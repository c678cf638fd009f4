//! Tagged objects of larson and xmalloc-test: a `malloc` chunk of at least
//! 16 bytes whose first and last 8 bytes hold its tag, checked when it is
//! freed (an allocator that hands out overlapping chunks, or loses a
//! chunk's contents, breaks a tag), and the tally of what was allocated
//! and freed that each workload compares with a replay of its random
//! streams.

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
    // SAFETY: p holds size >= 16 bytes.
    unsafe {
        p.cast::<u64>().write_unaligned(tag);
        p.add(size - 8).cast::<u64>().write_unaligned(tag);
    }
    t.allocs += 1;
    p as usize
}

/// Checks the tag of the object at `addr` made by [`new_obj`] with `size`
/// and `tag`, counts it, and frees it.
pub fn free_obj(addr: usize, size: usize, tag: u64, t: &mut Tally) {
    let p = addr as *mut u8;
    // SAFETY: p is a live malloc chunk of `size` >= 16 bytes written by new_obj.
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
    // SAFETY: allocated by malloc, freed once (the caller gives it up).
    unsafe { libc::free(p.cast()) };
}
