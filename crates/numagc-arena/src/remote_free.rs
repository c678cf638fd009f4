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
//! A freeing thread does not push each chunk: it gathers the chunks it
//! frees for one owner in its *outbox* (`thread_heap.rs`, at most
//! [`OUTBOX_LEN`] chunks, one owner at a time) and pushes them as one chain
//! when the outbox is full, when a chunk of another owner comes, or when the
//! thread exits or trims. One CAS on the owner's list per 32 frees instead
//! of one per free: in a producer/consumer pattern (xmalloc-test) the list's
//! cache line no longer moves between the cores at every free. The cost: up
//! to [`OUTBOX_LEN`] chunks per thread reach their owner later.
//!
//! Protocol and why it is sound:
//! * push (of one chunk or a chain): write the links into the chunks (which
//!   the pusher still owns), then CAS the head with `Release`, so the link
//!   writes happen-before whoever takes the list;
//! * take: `swap(null, Acquire)`; the taker then owns every chunk of the
//!   list. Only the owner takes, and it takes everything, so a popped node is
//!   never re-pushed while another pop is reading it (no ABA).
//!
//! **Carriers.** Walking a chain, the owner reads each chunk's link, which
//! the freeing thread wrote on another core: one cache miss after another,
//! none of which can start before the one before it ends (xmalloc-test:
//! most of the owner's time in `perf`). So when one of the gathered chunks
//! is big enough, the outbox writes the addresses of the others into it and
//! pushes that one chunk, the *carrier*, on the owner's second list
//! ([`RemoteFrees::carriers`]); the owner reads the carrier's addresses
//! (consecutive words) and can fetch all the carried chunks at once. A
//! carrier's words: 0 the list link, 1 left alone (the chunk's key word,
//! which marks it freed), [`CARRIER_COUNT`] the number carried, then the
//! addresses from [`CARRIER_FIRST`]. The same push and take protocol
//! publishes them as it publishes links: they are written before the
//! `Release` CAS and read after the `Acquire` swap (loom model
//! `a_carriers_addresses_reach_the_owner`).
//!
//! The link lives in the chunk's first word; [`Link`] abstracts it so that
//! the loom models (`src/loom_models.rs`) run this very code with checked
//! cells.

use crate::sync::{AtomicPtr, Ordering};

/// Word of a carrier holding the number of chunks it carries.
pub(crate) const CARRIER_COUNT: usize = 2;
/// Word of a carrier where the carried chunks' addresses begin.
pub(crate) const CARRIER_FIRST: usize = 3;

/// The most chunks a thread's outbox holds before it pushes them.
pub(crate) const OUTBOX_LEN: u32 = 32;

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
        // SAFETY: a chain of one node, passed on from the caller.
        unsafe { self.push_chain(node, node) }
    }

    /// Hands a chain of nodes to the list's owner with one CAS: `first`
    /// links (through [`Link::next`]) to `last`, whose link is overwritten.
    ///
    /// # Safety
    /// The caller owns every node of the chain and gives them up.
    pub(crate) unsafe fn push_chain(&self, first: *mut N, last: *mut N) {
        let mut head = self.head.load(Ordering::Relaxed);
        loop {
            // SAFETY: the chain is still the caller's until the CAS
            // publishes it.
            unsafe { N::set_next(last, head) };
            match self
                .head
                .compare_exchange_weak(head, first, Ordering::Release, Ordering::Relaxed)
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

/// A heap's two lists of chunks freed by other threads: chains, and
/// carriers (see the module doc).
pub(crate) struct RemoteFrees {
    pub(crate) chains: RemoteFreeList<FreedChunk>,
    pub(crate) carriers: RemoteFreeList<FreedChunk>,
}

impl RemoteFrees {
    pub(crate) fn new() -> Self {
        RemoteFrees {
            chains: RemoteFreeList::new(),
            carriers: RemoteFreeList::new(),
        }
    }

    /// Whether nothing is waiting (a hint, as for [`RemoteFreeList`]).
    pub(crate) fn is_empty(&self) -> bool {
        self.chains.is_empty() && self.carriers.is_empty()
    }
}

/// The chunks that `carrier` carries.
///
/// # Safety
/// `carrier` was taken from a [`RemoteFrees::carriers`] list by its owner,
/// and the slice is not used once the carrier is freed (`'a` ends there).
pub(crate) unsafe fn carried<'a>(carrier: *mut FreedChunk) -> &'a [*mut FreedChunk] {
    let w = carrier.cast::<usize>();
    // SAFETY: the outbox wrote the count and as many addresses, inside the
    // chunk, before pushing it; the taker owns the chunk now (and uses the
    // slice before freeing the carrier).
    unsafe {
        let n = *w.add(CARRIER_COUNT);
        core::slice::from_raw_parts(w.add(CARRIER_FIRST).cast(), n)
    }
}

/// A thread's chunks on their way back to one owner (see the module doc).
/// Touched only by the thread whose heap holds it.
pub(crate) struct Outbox {
    /// The owner's lists the chunks go to (valid for ever: heaps are never
    /// freed).
    target: *const RemoteFrees,
    first: *mut FreedChunk,
    last: *mut FreedChunk,
    len: u32,
    /// The biggest chunk gathered, and its size in words.
    biggest: *mut FreedChunk,
    biggest_words: usize,
}

impl Outbox {
    pub(crate) const fn new() -> Self {
        Outbox {
            target: core::ptr::null(),
            first: core::ptr::null_mut(),
            last: core::ptr::null_mut(),
            len: 0,
            biggest: core::ptr::null_mut(),
            biggest_words: 0,
        }
    }

    /// Adds `chunk` of `bytes` usable bytes (0: never a carrier), bound for
    /// `target`; pushes what is gathered when the target changes or the
    /// outbox is full.
    ///
    /// # Safety
    /// The caller owns `chunk` and gives it up; `target` lives for ever.
    #[inline]
    pub(crate) unsafe fn put(
        &mut self,
        target: *const RemoteFrees,
        chunk: *mut FreedChunk,
        bytes: usize,
    ) {
        if self.len != 0 && !core::ptr::eq(self.target, target) {
            self.flush();
        }
        // SAFETY: the caller's chunk; it joins the gathered chain.
        unsafe { FreedChunk::set_next(chunk, self.first) };
        if self.len == 0 {
            self.last = chunk;
            self.target = target;
        }
        let words = bytes / core::mem::size_of::<usize>();
        if words > self.biggest_words {
            self.biggest = chunk;
            self.biggest_words = words;
        }
        self.first = chunk;
        self.len += 1;
        if self.len == OUTBOX_LEN {
            self.flush();
        }
    }

    /// Pushes what is gathered to its owner.
    pub(crate) fn flush(&mut self) {
        if self.len == 0 {
            return;
        }
        let others = self.len as usize - 1;
        if others > 0 && self.biggest_words >= CARRIER_FIRST + others {
            // SAFETY: every chunk of the chain is this thread's until the
            // push; the carrier has room for the count and the addresses
            // (words 2 .. 3 + others), and its word 1 is left as it is.
            unsafe {
                let w = self.biggest.cast::<usize>();
                let mut c = self.first;
                let mut i = 0;
                // The chain's links are in words 0, which the carrier keeps.
                for _ in 0..self.len {
                    let next = FreedChunk::next(c);
                    if c != self.biggest {
                        *w.add(CARRIER_FIRST + i) = c as usize;
                        i += 1;
                    }
                    c = next;
                }
                debug_assert_eq!(i, others);
                *w.add(CARRIER_COUNT) = others;
                (*self.target).carriers.push(self.biggest);
            }
        } else {
            // SAFETY: `first` .. `last` is the chain this outbox gathered,
            // its chunks given up by their freers; `target` lives for ever.
            unsafe { (*self.target).chains.push_chain(self.first, self.last) };
        }
        self.first = core::ptr::null_mut();
        self.last = core::ptr::null_mut();
        self.len = 0;
        self.biggest = core::ptr::null_mut();
        self.biggest_words = 0;
    }
}
