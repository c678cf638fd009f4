//! Misuse of the interface: what `free` reports instead of corrupting the
//! heap (issue 7: "a double free or a foreign pointer is reported with a
//! clear message").
//!
//! Every free is checked, in release builds too, because the checks are a
//! few instructions (a bit in the region map, a header word, a multiply for
//! the chunk index, a key word in the chunk):
//! * a pointer outside every region this heap manager handed out, or in a
//!   large chunk already given back: [`Misuse::Foreign`];
//! * a pointer into a local heap that is not the start of a chunk:
//!   [`Misuse::NotAChunk`];
//! * a chunk that is already free: [`Misuse::DoubleFree`]. A small chunk is
//!   recognised by the random key its free writes into it (`subheap.rs`),
//!   at once, by whichever thread frees it again. A variable-size chunk by
//!   its in-use flag, which a thread freeing another thread's chunk checks
//!   at once; the owner clears it only when it takes the chunk back, so two
//!   remote frees of one before that are found by the owner, which then
//!   aborts with the message.
//!
//! How it is raised: [`crate::try_free`] returns it, [`crate::free`] panics
//! with its message, and the allocator interfaces (`GlobalAlloc`, `free` of
//! the C library), which must not unwind, print it and abort.

use core::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Misuse {
    Foreign {
        addr: usize,
    },
    NotAChunk {
        addr: usize,
    },
    DoubleFree {
        addr: usize,
    },
    /// A chunk given to [`crate::rich::Arena::free_own`] that the calling
    /// thread did not allocate (reported in debug builds).
    NotOwn {
        addr: usize,
    },
}

impl fmt::Display for Misuse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Misuse::Foreign { addr } => write!(
                f,
                "numagc-arena: free of foreign pointer {addr:#x}: it was not allocated by this heap \
                 manager (or is a large chunk that was already freed)"
            ),
            Misuse::NotAChunk { addr } => write!(
                f,
                "numagc-arena: free of {addr:#x}: it points into a local heap but not at the start \
                 of an allocated chunk"
            ),
            Misuse::DoubleFree { addr } => write!(
                f,
                "numagc-arena: double free of {addr:#x}: this chunk is already free"
            ),
            Misuse::NotOwn { addr } => write!(
                f,
                "numagc-arena: free_own of {addr:#x}: this chunk was not allocated by the calling \
                 thread (use ThreadArenas::free)"
            ),
        }
    }
}

impl std::error::Error for Misuse {}

/// Why an allocation request was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The size or alignment is impossible; the message names which.
    Invalid {
        size: usize,
        align: usize,
        reason: &'static str,
    },
    /// The system refused memory.
    OutOfMemory { size: usize },
}

impl fmt::Display for AllocError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            AllocError::Invalid {
                size,
                align,
                reason,
            } => write!(
                f,
                "numagc-arena: cannot allocate {size} bytes aligned to {align}: {reason}"
            ),
            AllocError::OutOfMemory { size } => {
                write!(
                    f,
                    "numagc-arena: the system refused memory for {size} bytes"
                )
            }
        }
    }
}

impl std::error::Error for AllocError {}
