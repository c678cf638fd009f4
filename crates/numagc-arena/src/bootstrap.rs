//! The bootstrap area: a small allocator on raw `mmap` that serves the heap
//! manager's own allocations, so that it can use code that allocates
//! (topology detection, NUMA binding; see [`crate::placement`]) while it is
//! the process's allocator, without recursing into a half-updated thread heap.
//!
//! Not in the paper, whose runtime knows its topology from its compiler's
//! configuration. While a thread runs inside [`guarded`], its current thread
//! heap is the `BOOTSTRAPPING` sentinel, and every allocation it makes is
//! served here; a pointer from here is recognised on `free` by its region
//! kind, whichever thread frees it, whenever.
//!
//! Design: power-of-two blocks (16 B .. 64 KiB) with a 16-byte header that
//! records the class and the block start, free lists per class, bump
//! allocation in [`REGION_SIZE`] regions, and one spin lock (the area is used
//! a few times per thread heap, never on a fast path). Requests above 64 KiB
//! are refused (null): the guarded code needs a few KiB.
//!
//! Invariant: a block's header sits in the 16 bytes just before the pointer
//! handed out and is not touched by its user.

use core::sync::atomic::{AtomicBool, Ordering};

use crate::os;
use crate::region::{RegionHeader, RegionKind, REGION_MAGIC, REGION_SIZE};
use crate::region_map;
use crate::thread_heap::{self, BOOTSTRAPPING};

const CLASSES: usize = 13; // 16 B << 0 ..= 16 B << 12 = 64 KiB
const MAX_BLOCK: usize = 16 << (CLASSES - 1);
const DATA_START: usize = 64;
const BLOCK_MAGIC: usize = 0xb007_b10c_0000_0000;

struct Area {
    bump: usize,
    end: usize,
    free: [usize; CLASSES],
}

static LOCK: AtomicBool = AtomicBool::new(false);
static mut AREA: Area = Area {
    bump: 0,
    end: 0,
    free: [0; CLASSES],
};

fn with_area<R>(f: impl FnOnce(&mut Area) -> R) -> R {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
    // SAFETY: LOCK is held, so this is the only reference to AREA.
    let r = f(unsafe { &mut *core::ptr::addr_of_mut!(AREA) });
    LOCK.store(false, Ordering::Release);
    r
}

/// `fork` prepare handler: holds the area's lock across the fork.
pub(crate) fn fork_prepare() {
    while LOCK
        .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
        .is_err()
    {
        core::hint::spin_loop();
    }
}

/// `fork` parent and child handler: releases what [`fork_prepare`] took.
pub(crate) fn fork_release() {
    LOCK.store(false, Ordering::Release);
}

/// Runs `f` with the calling thread's allocations served by the bootstrap area.
pub(crate) fn guarded<R>(f: impl FnOnce() -> R) -> R {
    struct Restore(*const thread_heap::ThreadHeap);
    impl Drop for Restore {
        fn drop(&mut self) {
            thread_heap::set_current(self.0);
        }
    }
    let _restore = Restore(thread_heap::replace_current(BOOTSTRAPPING));
    f()
}

/// `size` bytes aligned to `align` (at most 4 KiB), or null.
pub(crate) fn alloc(size: usize, align: usize) -> *mut u8 {
    if align > 4096 {
        return core::ptr::null_mut();
    }
    let need = size.saturating_add(16).saturating_add(align.max(16) - 16);
    if need > MAX_BLOCK {
        return core::ptr::null_mut();
    }
    let class = (need.max(16).next_power_of_two().trailing_zeros() - 4) as usize;
    let block = with_area(|a| {
        let head = a.free[class];
        if head != 0 {
            // SAFETY: a free block's first word holds the next free block.
            a.free[class] = unsafe { *(head as *const usize) };
            return head;
        }
        let bytes = 16usize << class;
        if a.end - a.bump < bytes {
            let Some(base) = os::map_aligned(REGION_SIZE, REGION_SIZE) else {
                return 0;
            };
            // SAFETY: `base` is a fresh mapping of REGION_SIZE bytes.
            unsafe {
                base.cast::<RegionHeader>().write(RegionHeader {
                    magic: REGION_MAGIC,
                    kind: RegionKind::Bootstrap,
                    node: 0,
                    owner: core::ptr::null(),
                    map_len: REGION_SIZE,
                    next: core::ptr::null_mut(),
                });
            }
            if !region_map::insert(base as usize) {
                // SAFETY: the region was never handed out.
                unsafe { os::unmap(base, REGION_SIZE) };
                return 0;
            }
            a.bump = base as usize + DATA_START;
            a.end = base as usize + REGION_SIZE;
        }
        let b = a.bump;
        a.bump += bytes;
        b
    });
    if block == 0 {
        return core::ptr::null_mut();
    }
    let data = (block + 16 + align - 1) & !(align - 1);
    // SAFETY: data - 16 >= block and data + size <= block + bytes, inside the
    // block, which is ours alone.
    unsafe {
        let h = (data - 16) as *mut usize;
        h.write(BLOCK_MAGIC | class);
        h.add(1).write(block);
    }
    data as *mut u8
}

/// Frees a block of the bootstrap area; `false` when `ptr` is not one.
///
/// # Safety
/// `ptr` lies in a bootstrap region (its region kind says so).
pub(crate) unsafe fn free(ptr: *mut u8) -> bool {
    let data = ptr as usize;
    if !data.is_multiple_of(16) || data - crate::region::base_of(data) < DATA_START + 16 {
        return false;
    }
    // SAFETY: data - 16 lies in the bootstrap region (checked above).
    let (tag, block) = unsafe {
        let h = (data - 16) as *mut usize;
        let tag = h.read();
        h.write(0);
        (tag, h.add(1).read())
    };
    if tag & !0xff != BLOCK_MAGIC || (tag & 0xff) >= CLASSES {
        return false;
    }
    let class = tag & 0xff;
    with_area(|a| {
        // SAFETY: the block is free now and at least 16 bytes long.
        unsafe { (block as *mut usize).write(a.free[class]) };
        a.free[class] = block;
    });
    true
}

/// Usable bytes of a bootstrap block.
///
/// # Safety
/// As for [`free`], and `ptr` is a live block.
pub(crate) unsafe fn usable_size(ptr: *mut u8) -> usize {
    let data = ptr as usize;
    // SAFETY: a live block's header precedes it.
    let (tag, block) = unsafe {
        let h = (data - 16) as *const usize;
        (h.read(), h.add(1).read())
    };
    (16usize << (tag & 0xff)) - (data - block)
}
