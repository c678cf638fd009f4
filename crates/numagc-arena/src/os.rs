//! The operating system's memory calls: the only place that talks to `mmap`,
//! `munmap` and `madvise`, plus a non-allocating fatal-error writer.
//!
//! Paper §3: the global heap "controls the entire address space of the
//! process" and "may grow or shrink ... as additional memory is requested from
//! the operating system or unused memory is released to it". These are the
//! calls that grow and shrink it.
//!
//! Invariant: every function here works without allocating, because it runs
//! inside the allocator (possibly as the process's `malloc`).

use core::fmt::{self, Write};

/// The system page size (4 KiB on the machines numagc targets; read once).
pub(crate) fn page_size() -> usize {
    // SAFETY: sysconf only reads a system constant.
    let size = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if size > 0 {
        size as usize
    } else {
        4096
    }
}

/// Maps `len` bytes of fresh, zeroed, private memory; `None` when refused.
pub(crate) fn map(len: usize) -> Option<*mut u8> {
    // SAFETY: an anonymous private mapping at an address of the kernel's choice
    // touches no existing memory; the result is checked for MAP_FAILED.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        None
    } else {
        Some(p.cast())
    }
}

/// Maps `len` bytes (a multiple of the page size) aligned to `align` (a power
/// of two, a multiple of the page size): maps `len + align` and gives back the
/// parts before and after the aligned range.
pub(crate) fn map_aligned(len: usize, align: usize) -> Option<*mut u8> {
    map_aligned_at(len, align, 0)
}

/// Maps `len` bytes (a multiple of the page size) starting at an address
/// `start` with `start + at` a multiple of `align` (a power of two, a
/// multiple of the page size; `at <= align`, a multiple of the page size):
/// maps `len + align` and gives back the parts before and after that range,
/// so nothing beyond `len` stays mapped. `None` when the system refuses or
/// the lengths overflow.
pub(crate) fn map_aligned_at(len: usize, align: usize, at: usize) -> Option<*mut u8> {
    debug_assert!(align.is_power_of_two() && at <= align);
    let total = len.checked_add(align)?;
    let raw = map(total)? as usize;
    // raw + at < 2^64: a mapping ends below the top of the address space.
    let start = (raw + at).next_multiple_of(align) - at;
    let head = start - raw;
    let tail = total - head - len;
    // SAFETY: [raw, raw+head) and [start+len, raw+total) lie in the mapping made
    // above and outside the range handed out, so nobody refers to them.
    unsafe {
        if head > 0 {
            unmap(raw as *mut u8, head);
        }
        if tail > 0 {
            unmap((start + len) as *mut u8, tail);
        }
    }
    Some(start as *mut u8)
}

/// Gives `len` bytes at `ptr` back to the system.
///
/// # Safety
/// `[ptr, ptr+len)` is (part of) a mapping made by [`map`] that nothing refers
/// to any more.
pub(crate) unsafe fn unmap(ptr: *mut u8, len: usize) {
    // SAFETY: the caller guarantees the range is ours and unused.
    let rc = unsafe { libc::munmap(ptr.cast(), len) };
    debug_assert_eq!(rc, 0, "munmap failed");
}

/// Gives the physical pages of `len` bytes at `ptr` back to the system while
/// keeping the address range; the next touch sees zeroes.
///
/// # Safety
/// `[ptr, ptr+len)` is a page-aligned part of a mapping made by [`map`] whose
/// contents nobody needs any more.
pub(crate) unsafe fn discard(ptr: *mut u8, len: usize) {
    // SAFETY: the caller guarantees the range is ours and its contents dead.
    unsafe {
        libc::madvise(ptr.cast(), len, libc::MADV_DONTNEED);
    }
}

/// The CPU the calling thread runs on, if the kernel says.
pub(crate) fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no memory effects.
    let cpu = unsafe { libc::sched_getcpu() };
    (cpu >= 0).then_some(cpu as usize)
}

/// A fixed buffer that `format_args!` can be written into without allocating.
struct StackBuf {
    buf: [u8; 512],
    len: usize,
}

impl Write for StackBuf {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        let room = self.buf.len() - self.len;
        let n = s.len().min(room);
        self.buf[self.len..self.len + n].copy_from_slice(&s.as_bytes()[..n]);
        self.len += n;
        Ok(())
    }
}

/// Writes `args` to standard error without allocating (truncated at 512 bytes).
pub(crate) fn write_stderr(args: fmt::Arguments<'_>) {
    let mut b = StackBuf {
        buf: [0; 512],
        len: 0,
    };
    let _ = b.write_fmt(args);
    let _ = b.write_str("\n");
    // SAFETY: writes `b.len` initialised bytes of `b.buf` to fd 2.
    unsafe {
        libc::write(2, b.buf.as_ptr().cast(), b.len);
    }
}

/// Reports a fault that the allocator cannot return to anyone (a misuse found
/// inside `malloc`/`free` or `GlobalAlloc`, where unwinding is not allowed)
/// and aborts the process.
pub(crate) fn fatal(args: fmt::Arguments<'_>) -> ! {
    write_stderr(args);
    std::process::abort()
}
