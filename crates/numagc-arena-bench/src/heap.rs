//! Arrays on the process's `malloc`, freed when dropped: the SAC memory
//! model of the paper (§1, §2) without the reference count, which is always
//! one here. Every whole-array operation of the workloads returns a fresh
//! `Buf` and every temporary is freed at its last use, as SAC frees an array
//! when its count drops to zero. `malloc` and `free` are the C library's
//! symbols, so the allocator under test is whichever `LD_PRELOAD` put first
//! (glibc when none): the workloads never name an allocator.
//!
//! **The bound** (`set_bound(true)`, the workloads' `--bound`): the
//! paper's §2 notes that SAC's memory-management optimisations would
//! pre-allocate the temporaries; with the bound on, a `Buf` freed goes to
//! a per-thread cache of chunks by size and the next `Buf` of that size on
//! that thread takes it back, so after a warm-up the workload runs without
//! an allocator: what is left of allocation is the least that reusing a
//! temporary can cost. A small chunk's cache is a list linked through the
//! chunks themselves, one per 16-byte class, whose heads are in a
//! thread-local array initialised at compile time: a take or a give is a
//! load and a store beside the thread-local access (about ten
//! instructions). An earlier cache of `Vec`s in a `RefCell` cost as much as
//! an allocator (NAS FT class W: 5.97 G instructions against tcmalloc's
//! 5.25 G and numagc-malloc's 5.91 G, under callgrind), so allocators came
//! out faster than "the bound". Large chunks (a few dozen per run) are kept
//! by exact size in a `Vec`. Its time is the no-allocation bound that an
//! allocator's overhead is measured against. Cached chunks are never
//! given back (a thread's cache is leaked when it exits: the process is
//! short-lived).
//!
//! **The rich interface** (`set_rich(true)`, the workloads' `--rich`): the
//! arrays come from numagc-arena linked into the workload and called
//! directly (`numagc_arena::alloc` / `free`), as SAC's generated code calls
//! its private heap manager, instead of through `malloc`.

use std::cell::{Cell, RefCell};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, Ordering};

static BOUND: AtomicBool = AtomicBool::new(false);
static RICH: AtomicBool = AtomicBool::new(false);

/// Makes every `Buf` come from numagc-arena's interface (before any `Buf` is
/// made).
pub fn set_rich(on: bool) {
    RICH.store(on, Ordering::Relaxed);
}

/// Turns the bound's per-thread chunk cache on (before any `Buf` is made).
pub fn set_bound(on: bool) {
    BOUND.store(on, Ordering::Relaxed);
}

/// Chunks up to this size are cached by 16-byte class; larger ones by exact size.
const SMALL: usize = 64 * 1024;
/// At most this many large chunks per thread.
const LARGE_KEPT: usize = 64;

/// Small chunks' classes: 16 bytes apart, up to [`SMALL`].
const CLASSES: usize = SMALL / 16 + 1;

thread_local! {
    /// The heads of the small classes' lists (null: empty); each chunk's
    /// first word links to the next.
    static SMALL_LISTS: [Cell<*mut usize>; CLASSES] =
        const { [const { Cell::new(std::ptr::null_mut()) }; CLASSES] };
    /// Large chunks kept, as (bytes, address).
    static LARGE_CACHE: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
}

fn raw_alloc(bytes: usize) -> *mut u8 {
    if RICH.load(Ordering::Relaxed) {
        return numagc_arena::alloc(bytes.max(1), 16);
    }
    if BOUND.load(Ordering::Relaxed) {
        if bytes <= SMALL {
            let hit = SMALL_LISTS.with(|l| {
                let head = &l[bytes.div_ceil(16)];
                let p = head.get();
                if !p.is_null() {
                    // SAFETY: a chunk on this thread's list holds the next
                    // one in its first word (raw_free wrote it).
                    head.set(unsafe { *p } as *mut usize);
                }
                p
            });
            if !hit.is_null() {
                return hit.cast();
            }
        } else {
            let hit = LARGE_CACHE.with(|c| {
                let mut c = c.borrow_mut();
                let i = c.iter().position(|&(b, _)| b == bytes)?;
                Some(c.swap_remove(i).1)
            });
            if let Some(p) = hit {
                return p as *mut u8;
            }
        }
        // A miss: a chunk of the class's full size, so any request of the class fits it.
        let class = if bytes <= SMALL {
            bytes.div_ceil(16) * 16
        } else {
            bytes
        };
        // SAFETY: malloc of a positive size; the caller checks for NULL.
        return unsafe { libc::malloc(class.max(16)) }.cast();
    }
    // SAFETY: malloc of a positive size; the caller checks for NULL.
    unsafe { libc::malloc(bytes.max(1)) }.cast()
}

/// Frees (or, with the bound on, caches) a chunk from `raw_alloc(bytes)`.
fn raw_free(p: *mut u8, bytes: usize) {
    if RICH.load(Ordering::Relaxed) {
        // SAFETY: p came from numagc_arena::alloc (raw_alloc) and is freed once.
        unsafe { numagc_arena::free(p) };
        return;
    }
    if BOUND.load(Ordering::Relaxed) {
        if bytes <= SMALL {
            SMALL_LISTS.with(|l| {
                let head = &l[bytes.div_ceil(16)];
                let p = p.cast::<usize>();
                // SAFETY: the chunk is at least 16 bytes (raw_alloc's
                // class), aligned, and this thread's to reuse: its first
                // word links the list.
                unsafe { *p = head.get() as usize };
                head.set(p);
            });
            return;
        }
        let kept = LARGE_CACHE.with(|c| {
            let mut c = c.borrow_mut();
            c.len() < LARGE_KEPT && {
                c.push((bytes, p as usize));
                true
            }
        });
        if kept {
            return;
        }
    }
    // SAFETY: p came from malloc (raw_alloc) and is freed once.
    unsafe { libc::free(p.cast()) }
}

/// `len` values of `T` in one `malloc` chunk. `T` is plain data (`Copy`).
pub struct Buf<T: Copy> {
    ptr: NonNull<T>,
    len: usize,
}

// SAFETY: a Buf owns its chunk outright, like a Vec; T: Send/Sync carries over.
unsafe impl<T: Copy + Send> Send for Buf<T> {}
// SAFETY: shared access only reads, as for a slice.
unsafe impl<T: Copy + Sync> Sync for Buf<T> {}

impl<T: Copy> Buf<T> {
    /// A fresh array of `len` copies of `v`.
    pub fn filled(len: usize, v: T) -> Self {
        let mut b = Self::uninit(len);
        b.fill(v);
        b
    }

    /// A fresh array with `f(i)` at index `i`.
    pub fn from_fn(len: usize, mut f: impl FnMut(usize) -> T) -> Self {
        let b = Self::uninit(len);
        for i in 0..len {
            // SAFETY: i < len, inside the chunk; writing initialises it.
            unsafe { b.ptr.as_ptr().add(i).write(f(i)) };
        }
        b
    }

    /// A fresh array whose contents the caller writes before reading:
    /// `malloc`'s own contents (plain data, any bit pattern is a value for
    /// the f64 and integer types used here).
    pub fn uninit(len: usize) -> Self {
        let bytes = len
            .checked_mul(std::mem::size_of::<T>())
            .expect("array size overflows");
        let p = raw_alloc(bytes).cast::<T>();
        let ptr = NonNull::new(p).unwrap_or_else(|| {
            eprintln!("arena-workload: malloc({bytes}) returned NULL");
            std::process::exit(3)
        });
        assert!(
            (ptr.as_ptr() as usize).is_multiple_of(std::mem::align_of::<T>()),
            "malloc returned a misaligned chunk"
        );
        Buf { ptr, len }
    }
}

impl<T: Copy> Deref for Buf<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: ptr holds len values of T, owned by self.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> DerefMut for Buf<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as for deref, and &mut self is exclusive.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl<T: Copy> Drop for Buf<T> {
    fn drop(&mut self) {
        raw_free(
            self.ptr.as_ptr().cast(),
            self.len * std::mem::size_of::<T>(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// With the bound on, a freed array's chunk is the next one of its size
    /// class on the thread: no allocator work after the warm-up.
    #[test]
    fn the_bound_reuses_freed_chunks() {
        set_bound(true);
        let a: Buf<f64> = Buf::filled(25, 1.0);
        let first = a.as_ptr() as usize;
        drop(a);
        let b: Buf<f64> = Buf::filled(25, 2.0);
        assert_eq!(b.as_ptr() as usize, first, "same size: the cached chunk");
        // 26 doubles (208 bytes) are in 25's 16-byte class (200 -> 208): reused
        // too; 24 (192 bytes) are in the class below: not.
        drop(b);
        let c: Buf<f64> = Buf::filled(26, 3.0);
        assert_eq!(c.as_ptr() as usize, first);
        assert!(c.iter().all(|&v| v == 3.0));
        drop(c);
        let d: Buf<f64> = Buf::filled(24, 4.0);
        assert_ne!(d.as_ptr() as usize, first);
        // A large array, by exact size.
        let big: Buf<u8> = Buf::filled(1 << 20, 7);
        let at = big.as_ptr() as usize;
        drop(big);
        let again: Buf<u8> = Buf::filled(1 << 20, 8);
        assert_eq!(again.as_ptr() as usize, at);
        set_bound(false);
    }
}
