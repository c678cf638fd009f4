//! Work distribution of the parallel global collection (§3.4).
//!
//! "In parallel with one another, the vprocs obtain chunks on a per-node
//! basis ... Each of these chunks are removed and scanned until no chunks
//! remain on the local node." A vproc copies into its own to-space chunk and
//! scans it; when the chunk fills up with objects still unscanned, the
//! unscanned part is pushed here, on the queue of the chunk's node, for any
//! vproc to take — its own node's queue first, then the others.
//!
//! Sharing (numagc's addition; the paper shares only full chunks): a
//! chunk fills only after a chunk's worth of copies (1 MiB by default), so
//! a vproc whose part of the graph is deep or narrow could copy most of a
//! collection alone while the others wait. [`ScanQueue::wants_work`] tells
//! a busy worker that more workers wait than items are queued for them; it
//! then pushes the unscanned part of what it scans (`plan::split::global`),
//! down to a floor of bytes. The hint is read without the lock: a stale
//! answer costs one push too many or one too few, never an item.
//!
//! Termination: a worker that finds no work counts itself idle and waits.
//! Work is only pushed by workers that are not idle, so when all `workers`
//! are idle and every queue is empty no work can appear any more: the last
//! worker to go idle sets `done` and wakes the rest. The loom models check
//! that every pushed item is taken exactly once and that all workers stop
//! (`src/loom_models/scan_queue.rs`).

use crate::sync::{lock, wait, AtomicUsize, Condvar, Mutex, Ordering};

struct State<T> {
    per_node: Vec<Vec<T>>,
    idle: usize,
    workers: usize,
    done: bool,
}

pub(crate) struct ScanQueue<T> {
    state: Mutex<State<T>>,
    cv: Condvar,
    /// Idle workers beyond the items queued, as of the last change under
    /// the lock ([`ScanQueue::wants_work`]).
    hungry: AtomicUsize,
    /// Workers that have not begun to scan yet ([`ScanQueue::arrive`]).
    absent: AtomicUsize,
}

impl<T> State<T> {
    fn queued(&self) -> usize {
        self.per_node.iter().map(Vec::len).sum()
    }
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
            hungry: AtomicUsize::new(0),
            absent: AtomicUsize::new(0),
        }
    }

    /// A worker begins to scan (once per collection, after its roots).
    pub fn arrive(&self) {
        self.absent.fetch_sub(1, Ordering::Relaxed);
    }

    /// Whether some worker has not begun to scan yet: with more workers
    /// than CPUs, it is a thread waiting for one, which a busy worker can
    /// let run (`plan::split::global`). A hint.
    #[inline]
    pub fn someone_absent(&self) -> bool {
        self.absent.load(Ordering::Relaxed) != 0
    }

    /// Whether some worker waits with nothing queued for it: a worker with
    /// a backlog should push part of it. A hint (see the module doc).
    #[inline]
    pub fn wants_work(&self) -> bool {
        self.hungry.load(Ordering::Relaxed) != 0
    }

    /// Updates the hint from the state (under its lock).
    fn note(&self, s: &State<T>) {
        let hungry = if s.done {
            0
        } else {
            s.idle.saturating_sub(s.queued())
        };
        self.hungry.store(hungry, Ordering::Relaxed);
    }

    /// Prepares for a collection with `workers` participants.
    pub fn reset(&self, workers: usize) {
        let mut s = lock(&self.state);
        debug_assert!(s.per_node.iter().all(|q| q.is_empty()));
        s.idle = 0;
        s.workers = workers;
        s.done = false;
        self.absent.store(workers, Ordering::Relaxed);
        self.note(&s);
    }

    pub fn push(&self, node: usize, item: T) {
        let mut s = lock(&self.state);
        let n = s.per_node.len();
        s.per_node[node % n].push(item);
        self.note(&s);
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
                self.note(&s);
                return Some(item);
            }
            if s.done {
                return None;
            }
            s.idle += 1;
            if s.idle == s.workers {
                s.done = true;
                self.note(&s);
                drop(s);
                self.cv.notify_all();
                return None;
            }
            self.note(&s);
            s = wait(&self.cv, s);
            s.idle -= 1;
        }
    }
}
