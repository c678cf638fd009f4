//! `GlobalAlloc` for Rust (issue 7, item 5): `#[global_allocator] static A:
//! numagc_arena::ArenaAlloc = numagc_arena::ArenaAlloc;` makes the heap
//! manager the program's allocator.
//!
//! A `GlobalAlloc` must not unwind, so a misuse found by `dealloc` (a double
//! free, a foreign pointer) prints its message and aborts.

use core::alloc::{GlobalAlloc, Layout};

use crate::os;
use crate::thread_heap;

pub struct ArenaAlloc;

// SAFETY: `alloc` returns null or a fresh chunk of at least `size` bytes
// aligned to `align` that no other live allocation overlaps; `dealloc`
// accepts exactly those chunks (checking them); `realloc` keeps contents.
unsafe impl GlobalAlloc for ArenaAlloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        thread_heap::alloc(layout.size(), layout.align())
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        crate::alloc_zeroed(layout.size(), layout.align())
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: the caller gives up the chunk (GlobalAlloc contract).
        if let Err(m) = unsafe { thread_heap::free(ptr) } {
            os::fatal(format_args!("{m}"));
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` is a live chunk of ours (GlobalAlloc contract).
        match unsafe { crate::realloc(ptr, new_size, layout.align()) } {
            Ok(p) => p,
            Err(m) => os::fatal(format_args!("{m}")),
        }
    }
}
