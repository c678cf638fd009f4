//! The rich interface between reference counting and the heap manager
//! (paper §3): "our integrated solution employs a much richer interface
//! between reference counting mechanism and backend heap manager that
//! already selects the allocation arena at compile time whenever possible",
//! descriptor and data vector in one chunk, and a de-allocation that can
//! decide "whether a data vector has been allocated within the realm of SAC
//! or outside".
//!
//! * [`ArenaHandle`]: the arena choice for a size, computed once (in a
//!   `const` when the size is a constant); [`Fixed<SIZE, ALIGN>`] makes that
//!   choice a compile-time constant of the type. Its `alloc` goes straight
//!   to the arena, and its `free` of a small chunk straight to the owner's
//!   subheap, without asking the region map whose pointer it is.
//! * [`ThreadArenas`]: the calling thread's arenas, found once, for code
//!   that allocates in a loop (SAC's worker threads), and [`Arena`], one of
//!   them held as values, whose `free_own` is the SAC runtime's same-thread
//!   free.
//! * [`alloc_with_descriptor`]: one chunk holding a descriptor and, after
//!   it, the data vector. A check word (`CO_MAGIC ^ data address`) in the 8
//!   bytes just before the data marks the data pointer as co-allocated.
//! * [`origin`] / [`free_data`]: given only a data pointer, tell a chunk of
//!   ours, a data vector co-allocated with a descriptor (freed with it), and
//!   a foreign pointer (to be freed by whoever allocated it).
//!
//! Choice: the check word is a heuristic only for a pointer *inside* one of
//! our chunks (a chunk start is recognised exactly, a foreign pointer by the
//! region map); such a pointer could forge it only by writing that exact
//! value there.

use core::alloc::Layout;
use core::ptr::NonNull;

use crate::misuse::{AllocError, Misuse};
use crate::region::base_of;
use crate::size_class::{choose, ArenaChoice};
use crate::thread_heap;

const CO_MAGIC: usize = 0xc0a1_10c0_de5c_0000;

/// [`ArenaHandle`]'s small class when its choice is not a small class.
const NOT_SMALL: u8 = u8::MAX;
const _: () = assert!(crate::size_class::NUM_SMALL < NOT_SMALL as usize);

/// A precomputed arena choice for requests of one size and alignment.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ArenaHandle {
    choice: ArenaChoice,
    /// The small class, or [`NOT_SMALL`]: the fast paths test this one byte
    /// instead of matching the choice.
    small: u8,
    size: usize,
    align: usize,
}

impl ArenaHandle {
    /// Chooses the arena for `size` bytes aligned to `align`, or names why
    /// such a request is impossible.
    pub const fn new(size: usize, align: usize) -> Result<ArenaHandle, AllocError> {
        match choose(size, align) {
            ArenaChoice::Refused(reason) => Err(AllocError::Invalid {
                size,
                align,
                reason,
            }),
            choice => Ok(ArenaHandle {
                choice,
                small: match choice {
                    ArenaChoice::Small(c) => c,
                    _ => NOT_SMALL,
                },
                size,
                align,
            }),
        }
    }

    pub const fn choice(&self) -> ArenaChoice {
        self.choice
    }

    pub const fn size(&self) -> usize {
        self.size
    }

    /// A chunk of this handle's size and alignment; null when the system
    /// refuses memory. No size classification happens here.
    #[inline(always)]
    pub fn alloc(&self) -> *mut u8 {
        thread_heap::alloc_chosen(self.choice, self.size, self.align)
    }

    /// Frees a chunk that this handle allocated: the other half of the
    /// compile-time arena choice. A small chunk is known to be ours, so the
    /// region map is not consulted; every other check of [`crate::try_free`]
    /// is made (a pointer that is not a chunk start, a double free).
    ///
    /// # Safety
    /// `ptr` was returned by `alloc` of a handle with the same arena choice
    /// (and is not used after this call unless it returns an error).
    #[inline(always)]
    pub unsafe fn free(&self, ptr: *mut u8) -> Result<(), Misuse> {
        match self.choice {
            // SAFETY: passed on from the caller: a chunk of a subheap.
            ArenaChoice::Small(_) => unsafe { thread_heap::free_small(ptr) },
            // SAFETY: passed on from the caller.
            _ => unsafe { thread_heap::free(ptr) },
        }
    }
}

/// The calling thread's column of the arena matrix (Fig. 4), found once:
/// allocations and frees through it skip finding the thread's heap and
/// checking that the thread owns it, as SAC's generated code, which knows
/// its worker thread, does. It exists only inside [`ThreadArenas::with`],
/// for the closure's duration, on the thread that made it (it is neither
/// `Send` nor `Sync`, and the closure gets only a borrow).
///
/// Why no check per operation is needed: a thread stops owning its heap
/// only when it exits or while it runs the heap manager's own bootstrap
/// code (`bootstrap::guarded`, which restores the ownership before it
/// returns); neither can happen while the closure's code runs on that
/// thread.
pub struct ThreadArenas {
    heap: *const thread_heap::ThreadHeap,
    _thread_bound: core::marker::PhantomData<*const ()>,
}

impl ThreadArenas {
    /// Runs `f` with the calling thread's arenas (its heap is made if it
    /// has none yet); `None` when the system refuses the memory for it.
    pub fn with<R>(f: impl FnOnce(&ThreadArenas) -> R) -> Option<R> {
        let arenas = ThreadArenas {
            heap: thread_heap::current_or_adopt()?,
            _thread_bound: core::marker::PhantomData,
        };
        Some(f(&arenas))
    }

    /// A chunk of `handle`'s size and alignment; null when the system
    /// refuses memory.
    #[inline(always)]
    pub fn alloc(&self, handle: &ArenaHandle) -> *mut u8 {
        if handle.small != NOT_SMALL {
            // SAFETY: a handle's small class is below NUM_SMALL; `heap` is
            // this thread's, owned while `self` exists (see the type's doc).
            return unsafe { thread_heap::alloc_small_owned(self.heap, handle.small as usize) };
        }
        handle.alloc()
    }

    /// Frees a chunk that `alloc` with `handle` (on any thread) gave.
    ///
    /// # Safety
    /// As for [`ArenaHandle::free`].
    #[inline(always)]
    pub unsafe fn free(&self, handle: &ArenaHandle, ptr: *mut u8) -> Result<(), Misuse> {
        if handle.small != NOT_SMALL {
            // SAFETY: passed on from the caller: a small chunk of ours of
            // that class.
            // `heap` is this thread's, owned while `self` exists.
            return unsafe { thread_heap::free_small_owned(self.heap, ptr, handle.small as usize) };
        }
        // SAFETY: passed on from the caller.
        unsafe { handle.free(ptr) }
    }
}

impl ThreadArenas {
    /// The arena of `handle`'s small class in this thread's column, for a
    /// loop that allocates and frees chunks of that size: `None` when the
    /// handle's choice is not a small class.
    #[inline(always)]
    pub fn arena(&self, handle: &ArenaHandle) -> Option<Arena<'_>> {
        (handle.small != NOT_SMALL).then_some(Arena {
            heap: self.heap,
            class: handle.small as usize,
            _scope: core::marker::PhantomData,
        })
    }
}

/// One arena of the calling thread (one entry of Fig. 4), held as values
/// (the heap and the class), so that a loop keeps it in registers: what
/// SAC's generated code has when the compiler selected the arena (§3). It
/// lives no longer than the [`ThreadArenas`] it came from.
#[derive(Clone, Copy)]
pub struct Arena<'a> {
    heap: *const thread_heap::ThreadHeap,
    class: usize,
    _scope: core::marker::PhantomData<&'a ThreadArenas>,
}

impl Arena<'_> {
    /// A chunk of the arena's size; null when the system refuses memory.
    #[inline(always)]
    pub fn alloc(self) -> *mut u8 {
        // SAFETY: `class` is a handle's small class (below NUM_SMALL);
        // `heap` is this thread's, owned while the ThreadArenas exists.
        unsafe { thread_heap::alloc_small_owned(self.heap, self.class) }
    }

    /// Frees a chunk that this arena allocated on this thread: the SAC
    /// runtime's guarantee that "any memory allocated by one thread is
    /// eventually released by the same thread" (paper §3) turned into the
    /// caller's promise, so the free is a push on the arena's list with no
    /// check at all in release builds. In debug builds the checks of
    /// [`ThreadArenas::free`] are made, and a chunk of another thread is
    /// reported too; a broken promise panics with its message.
    ///
    /// # Safety
    /// `ptr` was returned by `alloc` of an arena of this class on this
    /// thread, is not used after this call, and was not freed before.
    #[inline(always)]
    pub unsafe fn free_own(self, ptr: *mut u8) {
        if cfg!(debug_assertions) {
            let checked = if thread_heap::chunk_owned_by(ptr, self.heap) {
                // SAFETY: passed on from the caller (checked in this build).
                unsafe { thread_heap::free_small_owned(self.heap, ptr, self.class) }
            } else {
                Err(Misuse::NotOwn { addr: ptr as usize })
            };
            if let Err(m) = checked {
                panic!("{m}");
            }
            return;
        }
        // SAFETY: the caller's promise: a live small chunk of this thread's
        // arena of that class; `heap` is this thread's.
        unsafe { thread_heap::free_small_own_unchecked(self.heap, ptr, self.class) }
    }
}

/// Chunks of `SIZE` bytes aligned to `ALIGN`, their arena chosen at compile
/// time (an impossible size or alignment is a compile-time error).
pub struct Fixed<const SIZE: usize, const ALIGN: usize = 16>;

impl<const SIZE: usize, const ALIGN: usize> Fixed<SIZE, ALIGN> {
    pub const HANDLE: ArenaHandle = match ArenaHandle::new(SIZE, ALIGN) {
        Ok(h) => h,
        Err(_) => panic!("numagc-arena: Fixed<SIZE, ALIGN> with an impossible size or alignment"),
    };

    #[inline(always)]
    pub fn alloc() -> *mut u8 {
        Self::HANDLE.alloc()
    }

    /// Frees a chunk from [`Fixed::alloc`] of the same type.
    ///
    /// # Safety
    /// As for [`ArenaHandle::free`].
    #[inline(always)]
    pub unsafe fn free(ptr: *mut u8) -> Result<(), Misuse> {
        // SAFETY: passed on from the caller.
        unsafe { Self::HANDLE.free(ptr) }
    }
}

/// A descriptor and its data vector in one chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoAllocated {
    /// The chunk's start: free it (with [`crate::free`]) to free both.
    pub descriptor: NonNull<u8>,
    pub data: NonNull<u8>,
}

/// Offset of the data from the descriptor in a co-allocated chunk.
pub const fn data_offset(descriptor: Layout, data: Layout) -> usize {
    let a = if data.align() > 8 { data.align() } else { 8 };
    (descriptor.size() + 8).next_multiple_of(a)
}

/// Allocates one chunk for `descriptor` followed by `data`.
pub fn alloc_with_descriptor(descriptor: Layout, data: Layout) -> Result<CoAllocated, AllocError> {
    let off = data_offset(descriptor, data);
    let align = descriptor.align().max(data.align());
    let total = off.checked_add(data.size()).ok_or(AllocError::Invalid {
        size: data.size(),
        align,
        reason: "descriptor and data together are larger than usize::MAX",
    })?;
    let p = crate::try_alloc(total, align)?;
    // SAFETY: off < total, so data and the 8 bytes before it lie in the chunk,
    // after the descriptor (off >= descriptor.size() + 8).
    let data_ptr = unsafe {
        let d = p.as_ptr().add(off);
        d.sub(8).cast::<usize>().write(CO_MAGIC ^ d as usize);
        d
    };
    Ok(CoAllocated {
        descriptor: p,
        data: NonNull::new(data_ptr).expect("inside a non-null chunk"),
    })
}

/// Where a data pointer comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Origin {
    /// The start of a live chunk of this heap manager.
    Chunk,
    /// A data vector co-allocated with its descriptor.
    WithDescriptor,
    /// Inside this heap manager's memory, but neither of the above.
    Interior,
    /// Not from this heap manager.
    Foreign,
}

/// Tells where `ptr` comes from (see [`Origin`]).
pub fn origin(ptr: *const u8) -> Origin {
    let addr = ptr as usize;
    if thread_heap::kind_of(addr).is_none() {
        return Origin::Foreign;
    }
    if thread_heap::usable_size(ptr).is_some() {
        return Origin::Chunk;
    }
    if addr.is_multiple_of(8) && addr - base_of(addr) >= 64 {
        // SAFETY: addr - 8 lies in the same live, mapped region, past its header.
        let word = unsafe { *((addr - 8) as *const usize) };
        if word == CO_MAGIC ^ addr {
            return Origin::WithDescriptor;
        }
    }
    Origin::Interior
}

/// What [`free_data`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DataRelease {
    /// It was a chunk of ours and is free now.
    Freed,
    /// It lives in its descriptor's chunk, freed with the descriptor.
    WithDescriptor,
    /// Not ours: the caller frees it with the allocator it came from.
    Foreign,
}

/// Frees a data vector if it is a chunk of ours; says what it did.
///
/// # Safety
/// If `ptr` is a live chunk of ours, nobody uses it after this call.
pub unsafe fn free_data(ptr: *mut u8) -> Result<DataRelease, Misuse> {
    match origin(ptr) {
        Origin::Chunk => {
            // SAFETY: passed on from the caller.
            unsafe { thread_heap::free(ptr)? };
            Ok(DataRelease::Freed)
        }
        Origin::WithDescriptor => Ok(DataRelease::WithDescriptor),
        Origin::Foreign => Ok(DataRelease::Foreign),
        Origin::Interior => Err(Misuse::NotAChunk { addr: ptr as usize }),
    }
}
