//! Frees from other threads (issue 7, item 4): a chunk freed by a thread
//! other than the owner of its local heap is pushed on the owner's remote-free
//! list, a lock-free stack; the owner takes the whole list with one swap when
//! one of its arenas runs short (before it asks for more memory), and frees
//! each chunk with the ordinary thread-local free.
//!
//! The paper's runtime guarantees "that any memory allocated by one thread
//! is eventually released by the same thread" (§3), so SAC needs none of
//! this; a general-purpose allocator does. The idea is mimalloc's delayed
//! free: no global lock, and the owner's arenas stay single-threaded.
//!
//! Protocol and why it is sound:
//! * push: write the link into the chunk (which the pusher still owns), then
//!   CAS the head with `Release`, so the link write happens-before whoever
//!   takes the list;
//! * take: `swap(null, Acquire)`; the taker then owns every chunk of the
//!   list. Only the owner takes, and it takes everything, so a popped node is
//!   never re-pushed while another pop is reading it (no ABA).
//!
//! The link lives in the chunk's first word; [`Link`] abstracts it so that
//! the loom models (`src/loom_models.rs`) run this very code with checked
//! cells.

use crate::sync::{AtomicPtr, Ordering};

/// A node that can be linked into a [`RemoteFreeList`].
pub(crate) trait Link {
    /// Stores `next` as the successor of `node`.
    ///
    /// # Safety
    /// The caller owns `node` exclusively.
    unsafe fn set_next(node: *mut Self, next: *mut Self);
    /// The successor of `node`.
    ///
    /// # Safety
    /// The caller owns `node` exclusively (it took it with `take_all`).
    unsafe fn next(node: *mut Self) -> *mut Self;
}

pub(crate) struct RemoteFreeList<N> {
    head: AtomicPtr<N>,
}

impl<N: Link> RemoteFreeList<N> {
    pub(crate) fn new() -> Self {
        RemoteFreeList {
            head: AtomicPtr::new(core::ptr::null_mut()),
        }
    }

    /// Hands `node` to the list's owner.
    ///
    /// # Safety
    /// The caller owns `node` and gives it up.
    pub(crate) unsafe fn push(&self, node: *mut N) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: the node is still the caller's until the CAS publishes it.
            unsafe { N::set_next(node, head) };
            match self
                .head
                .compare_exchange_weak(head, node, Ordering::Release, Ordering::Relaxed)
            {
                Ok(_) => return,
                Err(h) => head = h,
            }
        }
    }

    /// Whether nothing is waiting (a hint: a push may land right after).
    pub(crate) fn is_empty(&self) -> bool {
        self.head.load(Ordering::Relaxed).is_null()
    }

    /// Takes every node pushed so far; walk them with [`Link::next`].
    pub(crate) fn take_all(&self) -> *mut N {
        if self.is_empty() {
            return core::ptr::null_mut();
        }
        self.head.swap(core::ptr::null_mut(), Ordering::Acquire)
    }
}

/// The production node: the first word of a freed chunk.
#[repr(C)]
pub(crate) struct FreedChunk {
    next: *mut FreedChunk,
}

impl Link for FreedChunk {
    unsafe fn set_next(node: *mut Self, next: *mut Self) {
        // SAFETY: the caller owns the chunk, which is at least 16 bytes.
        unsafe { (*node).next = next };
    }
    unsafe fn next(node: *mut Self) -> *mut Self {
        // SAFETY: the caller owns the chunk.
        unsafe { (*node).next }
    }
}
