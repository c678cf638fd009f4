//! Arrays on the process's `malloc`, freed when dropped: the SAC memory
//! model of the paper (§1, §2) without the reference count, which is always
//! one here. Every whole-array operation of the workloads returns a fresh
//! `Buf` and every temporary is freed at its last use, as SAC frees an array
//! when its count drops to zero. `malloc` and `free` are the C library's
//! symbols, so the allocator under test is whichever `LD_PRELOAD` put first
//! (glibc when none): the workloads never name an allocator.

use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

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
        // SAFETY: malloc of a positive size (1 for empty arrays); checked below.
        let p = unsafe { libc::malloc(bytes.max(1)) }.cast::<T>();
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
        // SAFETY: ptr came from malloc and is freed once.
        unsafe { libc::free(self.ptr.as_ptr().cast()) }
    }
}
