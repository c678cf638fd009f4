//! The SAC private heap manager (`numagc-arena`) as the C library's
//! allocator (issue 7, item 5): `LD_PRELOAD=libnumagc_malloc.so program`
//! makes every `malloc`, `free`, `calloc`, `realloc`, `posix_memalign`,
//! `aligned_alloc`, `memalign`, `valloc`, `pvalloc`, `malloc_usable_size` and
//! `malloc_trim`
//! of the program (and of the C library itself) go to it.
//!
//! Conventions: requests are aligned to 16 bytes (`max_align_t`); a refused
//! request returns null with `errno = ENOMEM` (or the error code of the
//! `posix_memalign` contract); `realloc(p, 0)` frees `p` and returns null,
//! as glibc does.
//!
//! Alignments are those glibc accepts (issue 16), checked against glibc
//! 2.36 by `tests/ld_preload.rs`: any power of two up to 2^62 is served
//! (2 MiB, 1 GiB, 2^40: by a mapping of their own, trimmed to the chunk, so
//! they cost address space, not memory), or refused with ENOMEM only when
//! the system gives no address space for it. `posix_memalign` takes a power
//! of two that is a multiple of `sizeof(void *)`, else EINVAL. `memalign`
//! takes any alignment, as glibc's: 16 or less (0 included) is `malloc`'s,
//! one that is not a power of two is rounded up to the next one (48 to 64),
//! and one above `SIZE_MAX / 2 + 1` is EINVAL. `aligned_alloc` is
//! `memalign`, as in glibc before 2.38 (an alias there; 2.38 made it refuse
//! an alignment that is not a power of two with EINVAL: this library keeps
//! serving those, which C17 allows). `valloc` and `pvalloc` align to the
//! page. A free of a pointer that is not ours, or a double free,
//! prints the heap manager's message and aborts: continuing would corrupt
//! memory, and `free` has no way to report an error.
//!
//! `numagc_malloc_owns(p)` is exported so that a program (or a test) can
//! check that its memory really comes from here.
//!
//! `fork` from a multithreaded program is safe: the heap manager's locks are
//! taken around it (`pthread_atfork`), as glibc's malloc does.

use core::ffi::c_void;

const MIN_ALIGN: usize = 16;

fn set_errno(e: i32) {
    // SAFETY: __errno_location returns this thread's errno slot.
    unsafe { *libc::__errno_location() = e };
}

/// Prints the misuse without allocating (the heap is the thing in doubt)
/// and aborts.
#[cold]
#[inline(never)]
fn fatal(m: numagc_arena::Misuse) -> ! {
    use std::io::Write;
    let mut buf = [0u8; 512];
    let mut cur = std::io::Cursor::new(&mut buf[..]);
    let _ = writeln!(cur, "{m}");
    let n = cur.position() as usize;
    // SAFETY: writes the first `n` bytes of `buf`, which the cursor wrote.
    unsafe { libc::write(2, buf.as_ptr().cast(), n) };
    std::process::abort()
}

#[cold]
fn out_of_memory() -> *mut c_void {
    set_errno(libc::ENOMEM);
    core::ptr::null_mut()
}

/// Inlined into each entry point, so `malloc`'s alignment is the constant
/// 16 and its fast path (the arena's choice and pop) is inlined there.
#[inline(always)]
fn alloc(size: usize, align: usize) -> *mut c_void {
    let p = numagc_arena::alloc(size, align.max(MIN_ALIGN));
    if p.is_null() {
        return out_of_memory();
    }
    p.cast()
}

#[no_mangle]
pub extern "C" fn malloc(size: usize) -> *mut c_void {
    alloc(size, MIN_ALIGN)
}

/// # Safety
/// `p` is null or a live pointer from this allocator, not used afterwards.
#[no_mangle]
pub unsafe extern "C" fn free(p: *mut c_void) {
    // SAFETY: the C contract of free.
    if let Err(m) = unsafe { numagc_arena::try_free(p.cast()) } {
        fatal(m);
    }
}

#[no_mangle]
pub extern "C" fn calloc(n: usize, size: usize) -> *mut c_void {
    match n.checked_mul(size) {
        Some(total) => {
            let p = numagc_arena::alloc_zeroed(total, MIN_ALIGN);
            if p.is_null() {
                set_errno(libc::ENOMEM);
            }
            p.cast()
        }
        None => {
            set_errno(libc::ENOMEM);
            core::ptr::null_mut()
        }
    }
}

/// # Safety
/// `p` is null or a live pointer from this allocator.
#[no_mangle]
pub unsafe extern "C" fn realloc(p: *mut c_void, size: usize) -> *mut c_void {
    if !p.is_null() && size == 0 {
        // SAFETY: the C contract of realloc.
        unsafe { free(p) };
        return core::ptr::null_mut();
    }
    // SAFETY: the C contract of realloc.
    match unsafe { numagc_arena::realloc(p.cast(), size, MIN_ALIGN) } {
        Ok(q) if q.is_null() => {
            set_errno(libc::ENOMEM);
            q.cast()
        }
        Ok(q) => q.cast(),
        Err(m) => fatal(m),
    }
}

/// # Safety
/// `out` is a valid pointer to write the result to.
#[no_mangle]
pub unsafe extern "C" fn posix_memalign(out: *mut *mut c_void, align: usize, size: usize) -> i32 {
    if !align.is_power_of_two() || !align.is_multiple_of(core::mem::size_of::<*mut c_void>()) {
        return libc::EINVAL;
    }
    let p = numagc_arena::alloc(size, align.max(MIN_ALIGN));
    if p.is_null() {
        return libc::ENOMEM;
    }
    // SAFETY: the caller passes a writable pointer.
    unsafe { *out = p.cast() };
    0
}

/// `memalign` (see the module docs: glibc 2.36's `aligned_alloc`).
#[no_mangle]
pub extern "C" fn aligned_alloc(align: usize, size: usize) -> *mut c_void {
    memalign(align, size)
}

/// glibc's `memalign`: an alignment of 16 or less is `malloc`'s, one that is
/// not a power of two is rounded up to the next one, and one above
/// `SIZE_MAX / 2 + 1` (no power of two) is EINVAL.
#[no_mangle]
pub extern "C" fn memalign(align: usize, size: usize) -> *mut c_void {
    if align <= MIN_ALIGN {
        return alloc(size, MIN_ALIGN);
    }
    match align.checked_next_power_of_two() {
        Some(a) => alloc(size, a),
        None => {
            set_errno(libc::EINVAL);
            core::ptr::null_mut()
        }
    }
}

fn page() -> usize {
    // SAFETY: sysconf only reads a constant.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

#[no_mangle]
pub extern "C" fn valloc(size: usize) -> *mut c_void {
    alloc(size, page())
}

#[no_mangle]
pub extern "C" fn pvalloc(size: usize) -> *mut c_void {
    let pg = page();
    match size.max(1).checked_next_multiple_of(pg) {
        Some(s) => alloc(s, pg),
        None => {
            set_errno(libc::ENOMEM);
            core::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub extern "C" fn malloc_usable_size(p: *mut c_void) -> usize {
    if p.is_null() {
        return 0;
    }
    numagc_arena::usable_size(p.cast()).unwrap_or(0)
}

/// Gives the calling thread's unused free chunks back to their subheaps
/// (and emptied subheaps and local heaps back to the system); 1, as glibc
/// returns when memory was released. `pad` is ignored.
#[no_mangle]
pub extern "C" fn malloc_trim(_pad: usize) -> i32 {
    numagc_arena::trim();
    1
}

/// 1 when `p` lies in memory of this allocator, else 0.
#[no_mangle]
pub extern "C" fn numagc_malloc_owns(p: *const c_void) -> i32 {
    numagc_arena::owns(p.cast()) as i32
}
