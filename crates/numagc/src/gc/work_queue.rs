//! Work distribution of the parallel global collection (§3.4).
//!
//! "In parallel with one another, the vprocs obtain chunks on a per-node
//! basis ... Each of these chunks are removed and scanned until no chunks
//! remain on the local node." A vproc copies into its own to-space chunk and
//! scans it; when the chunk fills up with objects still unscanned, the
//! unscanned part is pushed here, on the queue of the chunk's node, for any
//! vproc to take — its own node's queue first, then the others.
//!
//! Termination: a worker that finds no work counts itself idle and waits.
//! Work is only pushed by workers that are not idle, so when all `workers`
//! are idle and every queue is empty no work can appear any more: the last
//! worker to go idle sets `done` and wakes the rest. The loom models check
//! that every pushed item is taken exactly once and that all workers stop
//! (`src/loom_models/scan_queue.rs`).

use crate::sync::{lock, wait, Condvar, Mutex};

struct State<T> {
    per_node: Vec<Vec<T>>,
    idle: usize,
    workers: usize,
    done: bool,
}

pub(crate) struct ScanQueue<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
}

impl<T> ScanQueue<T> {
    pub fn new(nodes: usize) -> Self {
        ScanQueue {
            state: Mutex::new(State {
                per_node: (0..nodes.max(1)).map(|_| Vec::new()).collect(),
                idle: 0,
                workers: 0,
                done: false,
            }),
            cv: Condvar::new(),
        }
    }

    /// Prepares for a collection with `workers` participants.
    pub fn reset(&self, workers: usize) {
        let mut s = lock(&self.state);
        debug_assert!(s.per_node.iter().all(|q| q.is_empty()));
        s.idle = 0;
        s.workers = workers;
        s.done = false;
    }

    pub fn push(&self, node: usize, item: T) {
        let mut s = lock(&self.state);
        let n = s.per_node.len();
        s.per_node[node % n].push(item);
        drop(s);
        self.cv.notify_one();
    }

    fn take(s: &mut State<T>, node: usize) -> Option<T> {
        let n = s.per_node.len();
        (0..n).find_map(|k| s.per_node[(node + k) % n].pop())
    }

    /// Takes an item, preferring `node`'s queue; `None` once the collection's
    /// work is finished for everybody.
    pub fn pop(&self, node: usize) -> Option<T> {
        let mut s = lock(&self.state);
        loop {
            if let Some(item) = Self::take(&mut s, node) {
                return Some(item);
            }
            if s.done {
                return None;
            }
            s.idle += 1;
            if s.idle == s.workers {
                s.done = true;
                drop(s);
                self.cv.notify_all();
                return None;
            }
            s = wait(&self.cv, s);
            s.idle -= 1;
        }
    }
}
