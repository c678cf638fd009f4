//! A vproc's current global-heap chunk (§3.1, §3.3).
//!
//! "Each vproc has a current chunk that it uses when it needs to allocate in
//! or promote an object to the global heap." Bumping inside the chunk needs no
//! synchronisation; only when it is exhausted does the vproc go to the
//! [`GlobalHeap`] for another.
//!
//! `scan` is the Cheney scan pointer of the collection currently copying
//! into this chunk; `owned` lists the chunks this vproc filled since the last
//! global collection (they become that collection's from-space).

use crate::heap::global::{GlobalHeap, Refused};
use std::sync::atomic::Ordering;

/// A chunk taken out of service with objects in `[scan, top)` not yet scanned.
pub(crate) struct Retired {
    pub chunk: usize,
    pub scan: usize,
    pub top: usize,
}

#[derive(Default)]
pub(crate) struct ChunkCursor {
    /// Age given to the chunks this cursor takes (see `plan::split::global`).
    pub age: u8,
    pub chunk: Option<usize>,
    pub top: usize,
    pub end: usize,
    pub scan: usize,
    pub owned: Vec<usize>,
}

impl ChunkCursor {
    /// Bump-allocates `bytes` in the current chunk.
    #[inline(always)]
    pub fn try_bump(&mut self, bytes: usize) -> Option<usize> {
        let p = self.top;
        if self.chunk.is_some() && p + bytes <= self.end {
            self.top = p + bytes;
            Some(p)
        } else {
            None
        }
    }

    /// Publishes the current chunk's top in its metadata (for heap walks).
    #[cfg(all(test, not(loom)))]
    pub fn publish(&self, heap: &GlobalHeap) {
        if let Some(c) = self.chunk {
            heap.space.info(c).top.store(self.top, Ordering::Release);
        }
    }

    /// Retires the current chunk (if any) and takes a new one on `node`.
    pub fn refill(
        &mut self,
        heap: &GlobalHeap,
        node: usize,
        force: bool,
    ) -> Result<Option<Retired>, Refused> {
        let id = heap.acquire_chunk(node, force)?;
        Ok(self.install(heap, id))
    }

    /// Retires the current chunk (if any) and continues in chunk `id`, a
    /// global chunk just taken into use.
    pub fn install(&mut self, heap: &GlobalHeap, id: usize) -> Option<Retired> {
        heap.space.info(id).age.store(self.age, Ordering::Relaxed);
        let retired = self.retire(heap);
        let start = heap.space.chunk_start(id);
        self.chunk = Some(id);
        self.top = start;
        self.scan = start;
        self.end = start + heap.chunk_size();
        retired
    }

    /// Takes the current chunk out of service.
    pub fn retire(&mut self, heap: &GlobalHeap) -> Option<Retired> {
        let c = self.chunk.take()?;
        self.publish_top(heap, c);
        self.owned.push(c);
        Some(Retired {
            chunk: c,
            scan: self.scan,
            top: self.top,
        })
    }

    fn publish_top(&self, heap: &GlobalHeap, c: usize) {
        heap.space.info(c).top.store(self.top, Ordering::Release);
    }

    /// Starts a collection that copies into this cursor: everything below the
    /// current top is already scanned.
    pub fn begin_copy(&mut self) {
        self.scan = self.top;
    }
}
