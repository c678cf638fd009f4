//! Registered global roots.
//!
//! A global root holds one value for as long as the [`GlobalRoot`] lives and
//! can be read on any vproc. The value is promoted when registered, so the
//! table points only into the global heap: minor and major collections never
//! look at it; the leader of a global collection updates it.

use crate::sync::{lock, Mutex};
use crate::vproc::Shared;
use std::sync::Arc;

#[derive(Default)]
struct Slots {
    words: Vec<u64>,
    free: Vec<usize>,
    live: usize,
}

pub(crate) struct GlobalRoots {
    slots: Mutex<Slots>,
}

impl GlobalRoots {
    pub fn new() -> GlobalRoots {
        GlobalRoots {
            slots: Mutex::new(Slots::default()),
        }
    }

    pub fn add(&self, w: u64) -> usize {
        let mut s = lock(&self.slots);
        s.live += 1;
        match s.free.pop() {
            Some(i) => {
                s.words[i] = w;
                i
            }
            None => {
                s.words.push(w);
                s.words.len() - 1
            }
        }
    }

    pub fn get(&self, i: usize) -> u64 {
        lock(&self.slots).words[i]
    }

    pub fn set(&self, i: usize, w: u64) {
        lock(&self.slots).words[i] = w;
    }

    /// Reads slot `i` and frees it (a value handed over between vprocs).
    pub(crate) fn take(&self, i: usize) -> u64 {
        let w = self.get(i);
        self.remove(i);
        w
    }

    pub(crate) fn remove(&self, i: usize) {
        let mut s = lock(&self.slots);
        s.words[i] = crate::object::NIL;
        s.free.push(i);
        s.live -= 1;
    }

    /// Applies `f` to every slot (global collection).
    pub fn update(&self, mut f: impl FnMut(u64) -> u64) {
        for w in lock(&self.slots).words.iter_mut() {
            *w = f(*w);
        }
    }

    pub fn for_each(&self, mut f: impl FnMut(u64)) {
        for &w in lock(&self.slots).words.iter() {
            f(w);
        }
    }

    pub fn len(&self) -> usize {
        lock(&self.slots).live
    }
}

/// A value kept alive until this is dropped; see [`crate::Scope::global_root`].
pub struct GlobalRoot {
    pub(crate) slot: usize,
    pub(crate) shared: Arc<Shared>,
}

impl GlobalRoot {
    /// The value, and the root released. The caller must root the word
    /// before the next safepoint.
    pub(crate) fn into_word(self) -> u64 {
        self.shared.global_roots.get(self.slot)
    }
}

impl Drop for GlobalRoot {
    fn drop(&mut self) {
        self.shared.global_roots.remove(self.slot);
    }
}

impl std::fmt::Debug for GlobalRoot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "GlobalRoot({})", self.slot)
    }
}
