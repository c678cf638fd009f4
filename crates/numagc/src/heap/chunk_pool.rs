//! Per-node pools of free global-heap chunks (§3.1).
//!
//! "Our memory system tracks the node on which a chunk is allocated and
//! preserves node affinity when reusing chunks." A chunk freed by a global
//! collection goes back to the pool of the node its memory is bound to, and a
//! vproc that needs a chunk takes one from its own node's pool first. Each
//! pool has its own lock, so reuse synchronises only vprocs of one node; only
//! when the pool is empty does the caller go to the global address space.
//!
//! Invariant: a chunk id is in at most one pool, and only in the pool of the
//! node recorded for it when it was put there.

use crate::sync::{lock, Mutex};

pub(crate) struct ChunkPool {
    nodes: Box<[Mutex<Vec<u32>>]>,
}

impl ChunkPool {
    pub fn new(num_nodes: usize) -> ChunkPool {
        ChunkPool {
            nodes: (0..num_nodes.max(1))
                .map(|_| Mutex::new(Vec::new()))
                .collect(),
        }
    }

    /// Takes a free chunk bound to `node`, if the node's pool has one.
    pub fn take(&self, node: usize) -> Option<u32> {
        lock(&self.nodes[node]).pop()
    }

    /// Takes a free chunk of any node (the fallback of collector copies when
    /// the system refuses new chunks; affinity is lost, progress is not).
    pub fn take_any(&self) -> Option<u32> {
        self.nodes.iter().find_map(|n| lock(n).pop())
    }

    /// Returns a chunk to its node's pool.
    pub fn put(&self, node: usize, chunk: u32) {
        lock(&self.nodes[node]).push(chunk);
    }

    /// Number of free chunks in `node`'s pool.
    pub fn len(&self, node: usize) -> usize {
        lock(&self.nodes[node]).len()
    }
}
